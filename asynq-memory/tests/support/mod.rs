//! What the memory broker's own tests start from: a broker on a simulated clock, and
//! shorthands for enqueueing and dequeueing by task ID.

use asynq_core::broker::{Dequeue, Dequeued, Enqueue, Inspect};
use asynq_core::time::from_unix_secs;
use asynq_core::{Clock, QueueInfo, QueueName, Result, SimulatedClock, Task, TaskOptions, resolve_enqueue};
use asynq_memory::MemoryBroker;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The simulated time every test starts at, in Unix seconds (2023-11-14, 22:13:20 UTC).
pub(crate) const START: i64 = 1_700_000_000;

/// A memory broker and the clock it reads.
pub(crate) struct Fixture {
    pub(crate) broker: MemoryBroker,
    pub(crate) clock: SimulatedClock,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let clock = SimulatedClock::new(from_unix_secs(START));
        Self { broker: MemoryBroker::with_clock(Arc::new(clock.clone())), clock }
    }

    pub(crate) fn now(&self) -> SystemTime {
        self.clock.now()
    }

    pub(crate) fn advance(&self, secs: u64) {
        self.clock.advance(Duration::from_secs(secs));
    }

    /// Enqueues `task` under the ID `id`, with `options` over the task's own.
    pub(crate) async fn enqueue(&self, id: &str, task: &Task, options: TaskOptions) -> Result<()> {
        let request = resolve_enqueue(task, &options.task_id(id), self.now(), || unreachable!("the ID is given"))?;
        self.broker.enqueue(request).await
    }

    /// Enqueues a plain task `id` of type `"t"` into `queue`.
    pub(crate) async fn enqueue_plain(&self, queue: &str, id: &str) {
        self.enqueue(id, &Task::new("t", id.to_owned()), TaskOptions::new().queue(queue)).await.unwrap();
    }

    pub(crate) async fn dequeue(&self, queues: &[&str], max: usize) -> Vec<Dequeued> {
        self.broker.dequeue(&names(queues), max).await.unwrap()
    }

    pub(crate) async fn info(&self, queue: &str) -> QueueInfo {
        self.broker.queue_info(&QueueName::new(queue).unwrap()).await.unwrap()
    }
}

pub(crate) fn names(queues: &[&str]) -> Vec<QueueName> {
    queues.iter().map(|q| QueueName::new(*q).expect("a valid queue name")).collect()
}
