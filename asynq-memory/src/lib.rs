//! An in-memory asynq broker with the observable behaviour of Go asynq's Redis scripts, for
//! tests and for running producers and workers inside one process.
//!
//! [`MemoryBroker`] implements every trait of [`asynq_core::broker`]. It keeps each queue the
//! way Redis does (lists, sorted sets scored in whole Unix seconds, one record per task) and
//! reproduces the scripts' quirks, so that a conformance suite can hold it and the Redis broker
//! to the same cases. All wall-clock time is read from its [`Clock`]; give it a
//! [`SimulatedClock`](asynq_core::SimulatedClock) to control time in tests.
//!
//! ```
//! use asynq_core::broker::{Dequeue, Enqueue};
//! use asynq_core::{Clock, QueueName, SystemClock, Task, TaskOptions, resolve_enqueue};
//! use asynq_memory::MemoryBroker;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> asynq_core::Result<()> {
//! let broker = MemoryBroker::new();
//! let task = Task::new("email:welcome", r#"{"user_id":42}"#);
//! let request = resolve_enqueue(&task, &TaskOptions::new(), SystemClock.now(), || "task-1".to_owned())?;
//! broker.enqueue(request).await?;
//!
//! let taken = broker.dequeue(&[QueueName::default()], 10).await?;
//! assert_eq!(taken.len(), 1);
//! assert_eq!(taken[0].message.id, "task-1");
//! # Ok(())
//! # }
//! ```

mod aggregate;
mod capabilities;
mod control;
mod dequeue;
mod enqueue;
mod events;
mod forward;
mod health;
mod inspect;
mod janitor;
mod manage;
mod queue;
mod rate_limit;
mod recover;
mod schedulers;
mod server_state;
mod servers;
mod shards;
mod signals;
mod slots;
mod stats;
mod steps;
mod task_metrics;
mod workflow;
mod zset;

use async_trait::async_trait;
use asynq_core::broker::{
    Dequeue, Dequeued, Enqueue, ExpiredLease, Forward, Health, Inspect, Janitor, Outcome, Page, Recover, ServerState,
};
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{
    ArchiveLimits, Clock, EnqueueRequest, Error, Placement, QueueInfo, QueueName, Result, ServerInfo, StoredTask,
    SystemClock, TaskInfo, TaskState, WorkerInfo,
};
use bytes::Bytes;
use queue::{Queue, lease_expiry};
use servers::Servers;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// A broker that keeps every queue in this process's memory.
///
/// Clones share the same queues. Every operation takes one lock for its whole duration, so each
/// is atomic, as the Redis scripts are.
///
/// Where it departs from Go asynq:
/// - a pending, scheduled or retry ID without a task record (which this broker never leaves
///   behind) is dropped by dequeue and forward, where Go would move it into active or pending
///   for good;
/// - [`Dequeue::write_result`] on a missing task fails with [`Error::TaskNotFound`], where Go
///   would create a record holding only the result;
/// - uniqueness-lock keys carry the payload in hex rather than its MD5, and expired locks are
///   dropped when the janitor runs.
#[derive(Clone)]
pub struct MemoryBroker {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Notified whenever a task may have become ready: enqueue or forward to pending, requeue,
    /// unpause.
    ready: Notify,
    /// Cancellation requests and finish notifications.
    signals: signals::Signals,
    /// The forwarders that listen for tasks scheduled or set to retry.
    due: forward::DueNotices,
}

#[derive(Debug, Default)]
struct State {
    /// The queue names the inspector knows (Go's `asynq:queues`); added on every enqueue.
    known: BTreeSet<QueueName>,
    queues: HashMap<QueueName, Queue>,
    servers: Servers,
    /// Operators' requests to quiet or stop servers, by server ID.
    server_requests: control::ServerRequests,
    /// Periodic-task schedulers' entries, enqueue history and fire marks.
    schedulers: schedulers::Schedulers,
    /// Per-queue rate-limit token buckets.
    rate_buckets: HashMap<QueueName, asynq_core::rate_limit::TokenBucket>,
    /// Shared concurrency slots.
    slots: slots::Slots,
    /// What waiters for a slot wait on, per slot key.
    slot_waits: slots::SlotWaits,
    /// The workflows stored, oldest first.
    workflows: Vec<workflow::WorkflowRecord>,
    /// The workflows of `workflows` that were cancelled, each with what its cancel recorded it
    /// did.
    cancelled_workflows: HashMap<asynq_core::WorkflowId, Option<asynq_core::workflow::WorkflowCancellation>>,
    /// Per task type metrics, per queue and resolution.
    task_metrics: task_metrics::MetricBuckets,
    /// What every queue's archive keeps.
    archive_limits: ArchiveLimits,
    /// The declarations of sharded queues, by logical name.
    sharded: std::collections::BTreeMap<QueueName, asynq_core::shard::ShardedQueue>,
}

impl State {
    /// The queue `name`, made (empty, with the broker's archive limits) if there is none.
    fn queue_entry(&mut self, name: &QueueName) -> &mut Queue {
        let limits = self.archive_limits;
        self.queues.entry(name.clone()).or_insert_with(|| Queue::with_archive_limits(limits))
    }

    /// The queue `name` for an inspector call, which fails for a queue never enqueued to.
    fn known_queue(&self, name: &QueueName) -> Result<&Queue> {
        self.queues
            .get(name)
            .filter(|_| self.known.contains(name))
            .ok_or_else(|| Error::QueueNotFound { queue: name.clone() })
    }
}

impl MemoryBroker {
    /// An empty broker that reads the operating system's clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty broker that reads `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self::with_config(MemoryConfig { clock, ..MemoryConfig::new() })
    }

    /// An empty broker with the settings of `config`.
    pub fn with_config(config: MemoryConfig) -> Self {
        let state = State { archive_limits: config.archive_limits, ..State::default() };
        let inner = Inner {
            clock: config.clock,
            state: Mutex::new(state),
            ready: Notify::new(),
            signals: Default::default(),
            due: Default::default(),
        };
        Self { inner: Arc::new(inner) }
    }

    fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake_waiters(&self) {
        self.inner.ready.notify_waiters();
    }
}

/// How to build a [`MemoryBroker`] ([`MemoryBroker::with_config`]), as
/// `asynq_redis::RedisConfig` builds a Redis broker.
#[derive(Clone)]
pub struct MemoryConfig {
    /// The wall clock for every timestamp the broker writes. Default: the system clock.
    pub clock: Arc<dyn Clock>,
    /// What each queue's archive keeps. Default: Go asynq's limits (10 000 tasks, 90 days).
    pub archive_limits: ArchiveLimits,
}

impl MemoryConfig {
    /// The defaults: the system clock, Go's archive limits.
    pub fn new() -> Self {
        Self { clock: Arc::new(SystemClock), archive_limits: ArchiveLimits::default() }
    }
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryConfig")
            .field("clock", &self.clock)
            .field("archive_limits", &self.archive_limits)
            .finish()
    }
}

impl Default for MemoryBroker {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryBroker {
    // Not derived: the state may hold millions of tasks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBroker").field("clock", &self.inner.clock).finish_non_exhaustive()
    }
}
