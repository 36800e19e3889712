//! The asynq producer: validates tasks and enqueues them into a broker.
//!
//! A producer depends on this crate and a broker crate only. Everything the client refuses is
//! refused before anything is written.
//!
//! ```
//! use asynq_client::{Client, Task, TaskOptions, TaskState};
//! use asynq_memory::MemoryBroker;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), asynq_client::Error> {
//! let client = Client::new(MemoryBroker::new());
//! let task = Task::new("email:welcome", r#"{"user_id":42}"#);
//! let info = client.enqueue(&task, TaskOptions::new().queue("critical").process_in(Duration::from_secs(60))).await?;
//! assert_eq!(info.state, TaskState::Scheduled);
//! assert_eq!(info.queue, "critical");
//! # Ok(())
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]

pub use asynq_core::{Error, Result, Task, TaskInfo, TaskOptions, TaskState};

use asynq_core::broker::Enqueue;
use asynq_core::{Clock, Placement, SystemClock, resolve_enqueue};
use std::fmt;
use std::sync::Arc;

/// Enqueues tasks into a broker.
///
/// Cheap to clone; clones share the broker connection.
#[derive(Clone)]
pub struct Client {
    broker: Arc<dyn Enqueue>,
    clock: Arc<dyn Clock>,
}

impl Client {
    /// A client that enqueues into `broker`, reading time from the system clock.
    pub fn new(broker: impl Enqueue + 'static) -> Self {
        Self::from_shared(Arc::new(broker))
    }

    /// A client over a broker shared with other components.
    pub fn from_shared(broker: Arc<dyn Enqueue>) -> Self {
        Self { broker, clock: Arc::new(SystemClock) }
    }

    /// Reads "now" from `clock` instead of the system clock (for tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Validates `task` with `options` applied over its own options and stores it: as pending
    /// when it is ready now, scheduled when it is due later, aggregating when it has a group.
    ///
    /// Errors: [`Error::InvalidArgument`] for bad input (nothing is written),
    /// [`Error::DuplicateTask`] when a unique task with the same queue, type and payload exists,
    /// [`Error::TaskIdConflict`] when the queue already holds a task with the given ID, and
    /// [`Error::Broker`] when the broker fails.
    pub async fn enqueue(&self, task: &Task, options: TaskOptions) -> Result<TaskInfo> {
        let now = self.clock.now();
        let request = resolve_enqueue(task, &options, now, || uuid::Uuid::new_v4().to_string())?;
        let (state, next_process_at) = match &request.placement {
            Placement::Pending => (TaskState::Pending, Some(now)),
            Placement::Scheduled { process_at } => (TaskState::Scheduled, Some(*process_at)),
            Placement::Grouped { .. } => (TaskState::Aggregating, None),
        };
        let message = request.message.clone();
        self.broker.enqueue(request).await?;
        Ok(TaskInfo::new(&message, state, next_process_at, None))
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("clock", &self.clock).finish_non_exhaustive()
    }
}
