//! What every conformance case starts from: a fresh broker on a simulated clock, shorthands that
//! drive it through the broker traits, and assertions on the errors it returns.

use super::BrokerFactory;
use asynq_core::broker::{Dequeue, Dequeued, Enqueue, Inspect, OperatorBroker, Outcome, Page, WorkerBroker};
use asynq_core::time::from_unix_secs;
use asynq_core::{
    Broker, Clock, Error, QueueInfo, QueueName, Result, SimulatedClock, StoredTask, Task, TaskId, TaskInfo,
    TaskOptions, TaskState, resolve_enqueue,
};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Unix seconds of 2126-11-22T00:00:00Z (a UTC midnight), where every case's clock starts.
///
/// A century ahead of today on purpose: Go asynq sets the expiry of its daily counters with
/// `EXPIREAT <first increment + 90 days>` from the broker's clock, and Redis deletes a key at
/// once when that instant is already past by its own clock.
pub const START_SECS: i64 = 4_950_979_200;

/// One day in seconds.
pub const DAY: i64 = 86_400;

/// The instant `offset` whole seconds after the start of every case's clock ([`START_SECS`]).
pub fn at(offset: i64) -> SystemTime {
    from_unix_secs(START_SECS + offset)
}

/// `n` seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// `n` milliseconds.
pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Owned queue names, as the traits take them.
pub fn names(queues: &[&str]) -> Vec<QueueName> {
    queues.iter().map(|q| QueueName::new(*q).expect("a valid queue name")).collect()
}

/// The task IDs `ids`.
pub fn ids(ids: &[&str]) -> Vec<TaskId> {
    ids.iter().map(|id| TaskId::new(*id).expect("a valid task ID")).collect()
}

/// A retry outcome due at `retry_at`.
pub fn retry(retry_at: SystemTime, error: &str, is_failure: bool) -> Outcome {
    Outcome::Retry { retry_at, error: error.to_owned(), is_failure }
}

/// An archive outcome.
pub fn archive(error: &str) -> Outcome {
    Outcome::Archive { error: error.to_owned() }
}

/// Every kind of outcome once, retries due at `retry_at`.
pub fn every_outcome(retry_at: SystemTime) -> [Outcome; 6] {
    [
        Outcome::Done,
        Outcome::Complete,
        retry(retry_at, "boom", true),
        retry(retry_at, "later", false),
        archive("gave up"),
        Outcome::Requeue,
    ]
}

/// Everything the inspector shows of one queue: its statistics and every task in every state,
/// to check that a refused call wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The queue's statistics.
    pub info: QueueInfo,
    /// Every task, state by state in [`TaskState::ALL`] order, each state in listing order.
    pub tasks: Vec<TaskInfo>,
}

/// A fresh broker from a factory, the store the case puts tasks in and reads them back from, and
/// the simulated clock they read.
///
/// A case drives the broker under test through the traits of its part, and sets up and checks
/// through the store: [`Fixture::new`] makes the store the broker itself (the cases that need
/// every trait), [`Fixture::worker`], [`Fixture::producer`] and [`Fixture::operator`] ask the
/// factory for it ([`BrokerFactory::store`]).
#[derive(Debug)]
pub struct Fixture<B, S = B> {
    /// The broker under test.
    pub broker: B,
    /// Where the case puts tasks and looks at them: the broker itself, or for a backend that
    /// has only some parts, a handle of the factory's on the same store.
    pub store: S,
    /// Its clock, starting at [`at`]`(0)`.
    pub clock: SimulatedClock,
}

impl<B: Broker + Clone> Fixture<B> {
    /// A fresh broker from `factory` on a clock reading [`at`]`(0)`, which is its own store.
    pub async fn new<F: BrokerFactory<Broker = B>>(factory: &F) -> Self {
        let clock = SimulatedClock::new(at(0));
        let broker = factory.broker(Arc::new(clock.clone())).await;
        Self { store: broker.clone(), broker, clock }
    }

    /// A fresh broker from `factory` whose archives keep to `limits`, on a clock reading
    /// [`at`]`(0)`, which is its own store.
    pub async fn with_archive_limits<F: BrokerFactory<Broker = B>>(
        factory: &F,
        limits: asynq_core::ArchiveLimits,
    ) -> Self {
        let clock = SimulatedClock::new(at(0));
        let broker = factory.broker_with_archive_limits(Arc::new(clock.clone()), limits).await;
        Self { store: broker.clone(), broker, clock }
    }
}

impl<B: WorkerBroker + Clone, S> Fixture<B, S> {
    /// A fresh broker from `factory` on a clock reading [`at`]`(0)`, with the factory's
    /// [store](BrokerFactory::store) on it: for the cases of the worker's part.
    pub async fn worker<F: BrokerFactory<Broker = B, Store = S>>(factory: &F) -> Self {
        Self::with_factory_store(factory).await
    }
}

impl<B: Enqueue + Clone, S> Fixture<B, S> {
    /// A fresh broker from `factory` on a clock reading [`at`]`(0)`, with the factory's
    /// [store](BrokerFactory::store) on it: for the cases of the producer's part, which enqueue
    /// through the broker ([`Fixture::produce`]) and look through the store.
    pub async fn producer<F: BrokerFactory<Broker = B, Store = S>>(factory: &F) -> Self {
        Self::with_factory_store(factory).await
    }

    /// As [`Fixture::enqueue`], through the broker under test rather than the store.
    pub async fn produce(&self, id: &str, task: &Task, options: TaskOptions) -> Result<StoredTask> {
        enqueue_through(&self.broker, id, task, options, self.now()).await
    }

    /// As [`Fixture::plain`], through the broker under test rather than the store.
    pub async fn produce_plain(&self, queue: &str, id: &str) -> StoredTask {
        plain_through(&self.broker, queue, id, self.now()).await
    }
}

impl<B: OperatorBroker + Clone, S> Fixture<B, S> {
    /// A fresh broker from `factory` on a clock reading [`at`]`(0)`, with the factory's
    /// [store](BrokerFactory::store) on it: for the cases of the operator's part, which act
    /// through the broker and set up and look through the store ([`Fixture::setup`]).
    pub async fn operator<F: BrokerFactory<Broker = B, Store = S>>(factory: &F) -> Self {
        Self::with_factory_store(factory).await
    }
}

impl<B, S: Clone> Fixture<B, S> {
    /// The store as a fixture of its own, on the same clock: what the operator's cases set up
    /// tasks with (dequeueing and settling them through the store) and look at them through.
    pub fn setup(&self) -> Fixture<S, S> {
        Fixture { broker: self.store.clone(), store: self.store.clone(), clock: self.clock.clone() }
    }
}

impl<B, S> Fixture<B, S> {
    /// A fresh broker from `factory` on a clock reading [`at`]`(0)`, with the factory's
    /// [store](BrokerFactory::store) on it.
    async fn with_factory_store<F: BrokerFactory<Broker = B, Store = S>>(factory: &F) -> Self {
        let clock = SimulatedClock::new(at(0));
        let broker = factory.broker(Arc::new(clock.clone())).await;
        Self { store: factory.store(&broker), broker, clock }
    }

    /// The simulated time.
    pub fn now(&self) -> SystemTime {
        self.clock.now()
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    /// Sets the clock to `t`.
    pub fn set(&self, t: SystemTime) {
        self.clock.set(t);
    }
}

impl<B, S: Enqueue> Fixture<B, S> {
    /// Enqueues `task` under the ID `id`, with `options` over the task's own, and returns the
    /// message handed to the broker (whose `unique_key` the broker fills in for unique tasks).
    pub async fn enqueue(&self, id: &str, task: &Task, options: TaskOptions) -> Result<StoredTask> {
        enqueue_through(&self.store, id, task, options, self.now()).await
    }

    /// Enqueues a pending task `id` of type `"t"`, with `id` as payload, into `queue`.
    pub async fn plain(&self, queue: &str, id: &str) -> StoredTask {
        plain_through(&self.store, queue, id, self.now()).await
    }
}

impl<B: Dequeue, S: Enqueue> Fixture<B, S> {
    /// Dequeues up to `max` tasks from `queues`, in that order.
    pub async fn dequeue(&self, queues: &[&str], max: usize) -> Vec<Dequeued> {
        self.broker.dequeue(&names(queues), max).await.expect("dequeue")
    }

    /// The IDs of up to `max` tasks dequeued from `queues`.
    pub async fn dequeue_ids(&self, queues: &[&str], max: usize) -> Vec<String> {
        self.dequeue(queues, max).await.into_iter().map(|d| d.message.id.into_string()).collect()
    }

    /// Dequeues exactly one task from `queue` and checks that it is `id`.
    pub async fn take(&self, queue: &str, id: &str) -> Dequeued {
        let mut taken = self.dequeue(&[queue], 1).await;
        assert_eq!(taken.len(), 1, "expected task {id} to be dequeued from {queue:?}");
        let taken = taken.remove(0);
        assert_eq!(taken.message.id, id, "dequeued the wrong task from {queue:?}");
        taken
    }

    /// Enqueues a plain task `id` into `queue` and dequeues it, so that it is active; returns
    /// the dequeued message. The queue must have no other pending task.
    pub async fn activate(&self, queue: &str, id: &str) -> StoredTask {
        self.plain(queue, id).await;
        self.take(queue, id).await.message
    }

    /// Makes a plain task `id` active in `queue` (see [`Fixture::activate`]) and finishes it
    /// with `outcome`; returns the message it was finished with.
    pub async fn run(&self, queue: &str, id: &str, outcome: Outcome) -> StoredTask {
        let message = self.activate(queue, id).await;
        self.finish(&message, outcome).await;
        message
    }

    /// Enqueues task `id` into `queue` with `retention`, dequeues it and completes it; returns
    /// the dequeued message. The queue must have no other pending task.
    pub async fn complete(&self, queue: &str, id: &str, retention: Duration) -> StoredTask {
        let options = TaskOptions::new().queue(queue).retention(retention);
        self.enqueue(id, &Task::new("t", id.to_owned()), options).await.unwrap_or_else(|e| panic!("enqueue {id}: {e}"));
        let message = self.take(queue, id).await.message;
        self.finish(&message, Outcome::Complete).await;
        message
    }

    /// Records `outcome` for the active task `message`, which must succeed.
    pub async fn finish(&self, message: &StoredTask, outcome: Outcome) {
        let what = format!("finish {} with {outcome:?}", message.id);
        self.broker.finish(message, outcome).await.unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

impl<B, S: Inspect> Fixture<B, S> {
    /// Sizes and statistics of `queue`, which must exist.
    pub async fn info(&self, queue: &str) -> QueueInfo {
        self.store
            .queue_info(&QueueName::new(queue).unwrap())
            .await
            .unwrap_or_else(|e| panic!("queue_info({queue:?}): {e}"))
    }

    /// Sizes and statistics of `queue`, which must exist, with the memory estimate (which
    /// differs between backends) set to zero: for comparing with a [`QueueInfo`] built by hand.
    pub async fn counts(&self, queue: &str) -> QueueInfo {
        let mut info = self.info(queue).await;
        info.memory_usage = 0;
        info
    }

    /// Task `id` of `queue`, which must exist.
    pub async fn task(&self, queue: &str, id: &str) -> TaskInfo {
        self.store
            .task_info(&QueueName::new(queue).unwrap(), &TaskId::new(id).unwrap())
            .await
            .unwrap_or_else(|e| panic!("task_info({queue:?}, {id:?}): {e}"))
    }

    /// One page of the tasks of `queue` in `state`.
    pub async fn list(&self, queue: &str, state: TaskState, size: usize, number: usize) -> Vec<TaskInfo> {
        self.store
            .list_tasks(&QueueName::new(queue).unwrap(), state, Page { size, number })
            .await
            .unwrap_or_else(|e| panic!("list_tasks({queue:?}, {state}): {e}"))
    }

    /// The IDs on one page of the tasks of `queue` in `state`.
    pub async fn list_ids(&self, queue: &str, state: TaskState, size: usize, number: usize) -> Vec<String> {
        self.list(queue, state, size, number).await.into_iter().map(|t| t.id.into_string()).collect()
    }

    /// The IDs of all tasks of `queue` in `state`, in listing order.
    pub async fn all_ids(&self, queue: &str, state: TaskState) -> Vec<String> {
        self.list_ids(queue, state, 100_000, 0).await
    }

    /// Everything the inspector shows of `queue`.
    pub async fn snapshot(&self, queue: &str) -> Snapshot {
        let mut tasks = Vec::new();
        for state in TaskState::ALL {
            tasks.extend(self.list(queue, state, 100_000, 0).await);
        }
        Snapshot { info: self.info(queue).await, tasks }
    }
}

/// Enqueues `task` under the ID `id` through `handle` at `now`, with `options` over the task's
/// own; returns the message handed to it.
async fn enqueue_through<E: Enqueue>(
    handle: &E,
    id: &str,
    task: &Task,
    options: TaskOptions,
    now: SystemTime,
) -> Result<StoredTask> {
    let request = resolve_enqueue(task, &options.task_id(id), now, || unreachable!("the ID is given"))?;
    let message = request.message.clone();
    handle.enqueue(request).await?;
    Ok(message)
}

/// Enqueues a pending task `id` of type `"t"`, with `id` as payload, into `queue` through `handle`.
async fn plain_through<E: Enqueue>(handle: &E, queue: &str, id: &str, now: SystemTime) -> StoredTask {
    let task = Task::new("t", id.to_owned());
    enqueue_through(handle, id, &task, TaskOptions::new().queue(queue), now)
        .await
        .unwrap_or_else(|e| panic!("enqueue {id}: {e}"))
}

/// Checks that `result` is [`Error::TaskNotFound`] for `queue` and `id`.
#[track_caller]
pub fn assert_task_not_found<T: Debug>(result: Result<T>, queue: &str, id: &str) {
    match result {
        Err(Error::TaskNotFound { queue: q, id: i }) if q == queue && i == id => {}
        other => panic!("expected TaskNotFound {{ queue: {queue:?}, id: {id:?} }}, got {other:?}"),
    }
}

/// Checks that `result` is [`Error::QueueNotFound`] for `queue`.
#[track_caller]
pub fn assert_queue_not_found<T: Debug>(result: Result<T>, queue: &str) {
    match result {
        Err(Error::QueueNotFound { queue: q }) if q == queue => {}
        other => panic!("expected QueueNotFound {{ queue: {queue:?} }}, got {other:?}"),
    }
}

/// Checks that `result` is [`Error::TaskIdConflict`] for `queue` and `id`.
#[track_caller]
pub fn assert_id_conflict<T: Debug>(result: Result<T>, queue: &str, id: &str) {
    match result {
        Err(Error::TaskIdConflict { queue: q, id: i }) if q == queue && i == id => {}
        other => panic!("expected TaskIdConflict {{ queue: {queue:?}, id: {id:?} }}, got {other:?}"),
    }
}

/// Checks that `result` is [`Error::DuplicateTask`] for `queue` and `type_name`.
#[track_caller]
pub fn assert_duplicate<T: Debug>(result: Result<T>, queue: &str, type_name: &str) {
    match result {
        Err(Error::DuplicateTask { queue: q, type_name: t }) if q == queue && t == type_name => {}
        other => panic!("expected DuplicateTask {{ queue: {queue:?}, type_name: {type_name:?} }}, got {other:?}"),
    }
}

/// Checks that `result` is [`Error::FailedPrecondition`] with a message naming `queue`.
#[track_caller]
pub fn assert_failed_precondition<T: Debug>(result: Result<T>, queue: &str) {
    match result {
        Err(Error::FailedPrecondition(message)) if message.contains(queue) => {}
        other => panic!("expected FailedPrecondition naming {queue:?}, got {other:?}"),
    }
}
