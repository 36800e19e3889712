//! The broker traits: what a backend must do, split by the role that needs it.
//!
//! The contract is cut by its callers:
//! - a producer needs only [`Enqueue`];
//! - a worker server needs a [`WorkerBroker`]: [`Dequeue`], [`Forward`], [`Recover`],
//!   [`Janitor`], [`ServerState`] and [`Health`], each held by the role that uses it;
//! - an operator's tool needs an [`OperatorBroker`]: [`Inspect`] and [`Manage`];
//! - the rest are opt-in [`Capabilities`] ([`Cancel`], [`Aggregate`], [`RateLimiter`],
//!   [`SchedulerState`], [`Workflows`](crate::workflow::Workflows), ...), required only by the code that uses them; [`Wait`] is the
//!   [`Tracker`](https://docs.rs/asynq-client)'s alone.
//!
//! A backend implements the traits its users call, plus [`Capabilities`] (one line per
//! capability it has). [`Broker`] is every role and capability at once, as the memory and Redis
//! brokers have them.
//!
//! Every method is atomic: it either happens as a whole or not at all, so a crash between two
//! calls never leaves a task in two states or in none. Methods take `&self` and are called
//! concurrently from many tasks.
//!
//! The traits use `#[async_trait]` so that roles can hold `Arc<dyn Dequeue>` and tests can swap
//! backends; one boxed future per broker call is noise next to a network round trip.

pub use crate::aggregate::{
    AGGREGATION_TIMEOUT, Aggregate, AggregationLimits, AggregationSet, DEFAULT_GROUP_GRACE_PERIOD, GroupInfo,
};
pub use crate::cancel::Cancel;
#[cfg(feature = "mock")]
pub use crate::cancel::MockCancel;
pub use crate::manage::Manage;
pub use crate::rate_limit::RateLimiter;
pub use crate::scheduler::{MAX_SCHEDULER_HISTORY, SchedulerEnqueueEvent, SchedulerEntry, SchedulerState};
#[cfg(feature = "mock")]
pub use crate::wait::MockWait;
pub use crate::wait::Wait;

use crate::StoredTask;
use crate::error::Result;
use crate::info::{BackendInfo, DailyStats, QueueInfo, QueueLocation, ServerInfo, WorkerInfo};
use crate::names::{GroupName, QueueName, TaskId};
use crate::options::EnqueueRequest;
use crate::progress::Progress;
use crate::state::TaskState;
use crate::task::TaskInfo;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Stores new tasks. The only trait a producer needs.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Enqueue: Send + Sync {
    /// Stores `request.message` in its queue, as pending, scheduled or aggregating according to
    /// `request.placement`, and registers the queue in the set of known queues.
    ///
    /// When `request.unique_ttl` is set the broker first takes the uniqueness lock for the
    /// queue, type and payload (held for that TTL, or until the task succeeds or is deleted) and
    /// records its key in the stored message's `unique_key`.
    ///
    /// Errors: [`Error::DuplicateTask`](crate::Error::DuplicateTask) if another task holds the
    /// lock (nothing is written); [`Error::TaskIdConflict`](crate::Error::TaskIdConflict) if a
    /// task with this ID exists in the queue (nothing is written, except that a lock taken just
    /// before is kept until its TTL, as in Go asynq).
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()>;

    /// Stores many tasks, each exactly as [`Enqueue::enqueue`] would, in as few round trips as
    /// the backend allows. Each task succeeds or fails on its own (the batch is not atomic);
    /// the results are in the order of `requests`.
    ///
    /// The default implementation enqueues one task after the other.
    async fn enqueue_batch(&self, requests: Vec<EnqueueRequest>) -> Vec<Result<()>> {
        let mut results = Vec::with_capacity(requests.len());
        for request in requests {
            results.push(self.enqueue(request).await);
        }
        results
    }
}

/// How far a worker got with a task it leased, which decides what an expired lease costs it.
///
/// A task can be leased and never run: the reply to a dequeue may be lost (the broker froze or
/// the connection dropped after the dequeue ran), and a worker can die holding tasks it took
/// ahead. Such a task is charged nothing: when its lease expires it goes back to pending as it
/// was, with its retries intact. Only a task a handler started is charged a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeaseStage {
    /// Leased by [`Dequeue::dequeue`], and no handler has started it yet.
    Taken,
    /// A handler started it: [`Dequeue::extend_leases`] recorded that before the handler ran.
    /// Tasks a Go asynq server leases are at this stage from the start.
    Started,
}

/// An active task whose lease expired, as [`Recover::list_lease_expired`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredLease {
    /// The stored message, unchanged.
    pub message: StoredTask,
    /// Whether a handler started it: a [`LeaseStage::Taken`] task goes back to pending
    /// uncharged ([`Outcome::Requeue`]); a started one stalled ([`Outcome::Stalled`], while it
    /// has stalled fewer than [`FREE_STALLS`](crate::FREE_STALLS) times) or failed its attempt.
    pub stage: LeaseStage,
    /// How many times before a started lease of this task expired and was forgiven.
    pub stalls: u32,
}

/// A task handed to a worker by [`Dequeue::dequeue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dequeued {
    /// The stored message, unchanged.
    pub message: StoredTask,
    /// When the worker's lease on it expires unless extended.
    pub lease_expiry: SystemTime,
    /// How far the lease got: [`LeaseStage::Taken`], unless [`Dequeue::dequeue_starting`]
    /// recorded the task's start in the same step.
    pub stage: LeaseStage,
}

/// How an attempt at a task ended, as [`Dequeue::finish`] records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Success without retention, or a revoked task: the task is deleted and counted as
    /// processed; its uniqueness lock is released if it still holds it.
    Done,
    /// Success with retention: the task moves to completed until `completed_at + retention`,
    /// counted as processed; its uniqueness lock is released if it still holds it.
    Complete,
    /// Failure with retries left: the task moves to retry, due at `retry_at`, with the error
    /// recorded. When `is_failure`, its retry count and the failed counters go up.
    Retry {
        /// When it becomes due again.
        retry_at: SystemTime,
        /// The error message to record.
        error: String,
        /// Whether this counts as a failure.
        is_failure: bool,
    },
    /// Failure for good: the task moves to archived with the error recorded, counted as
    /// processed and failed. The archive is trimmed to its newest 9 999 tasks and 90 days.
    Archive {
        /// The error message to record.
        error: String,
    },
    /// Unfinished (shutdown), or never started (its lease expired at [`LeaseStage::Taken`]):
    /// the task goes back to the front of its pending list, charged nothing.
    Requeue,
    /// Started, and its lease expired (its worker died or lost the broker), forgiven: the task
    /// goes back to the front of its pending list charged nothing, as [`Outcome::Requeue`], and
    /// its stall count goes up by one (see [`FREE_STALLS`](crate::FREE_STALLS)).
    Stalled,
}

/// Hands tasks to workers and records how they ended. Used by the processor.
#[async_trait]
pub trait Dequeue: Send + Sync {
    /// Takes up to `max` pending tasks, trying `queues` in the given order and skipping paused
    /// ones. Each task becomes active with a lease of [`LEASE_DURATION`](crate::LEASE_DURATION)
    /// from now, at [`LeaseStage::Taken`]. Returns an empty vector when none is ready.
    ///
    /// A backend may skip queues it found empty or paused until its wake-up signal (see
    /// [`Dequeue::wait_for_tasks`]) says they may have work, so that a server on many quiet
    /// queues does not ask for each on every fetch. Tasks made pending through the same broker
    /// value are seen at once; those made pending by another process once the wake-up arrives
    /// (or, for a producer that sends none, within the backend's own bound, which it documents).
    async fn dequeue(&self, queues: &[QueueName], max: usize) -> Result<Vec<Dequeued>>;

    /// [`Dequeue::dequeue`] for a worker that runs the first `start` tasks it takes at once: a
    /// backend may record those as started ([`LeaseStage::Started`]) in the same step, which
    /// saves the worker the [`Dequeue::extend_leases`] call that records starts otherwise, and
    /// says so in each task's [`Dequeued::stage`]. The worker still records the start of every
    /// task returned at [`LeaseStage::Taken`] before it runs or holds it.
    ///
    /// The price: a reply that is lost (the connection dropped after the dequeue ran) leaves
    /// those tasks started with no handler, so their expired leases are stalls, forgiven once
    /// each ([`FREE_STALLS`](crate::FREE_STALLS)) instead of given back free.
    ///
    /// The default takes the tasks as [`Dequeue::dequeue`] does, every one at
    /// [`LeaseStage::Taken`].
    async fn dequeue_starting(&self, queues: &[QueueName], max: usize, start: usize) -> Result<Vec<Dequeued>> {
        let _ = start;
        self.dequeue(queues, max).await
    }

    /// Resolves when a task may have become ready in one of `queues`, so an idle processor can
    /// pick it up at once instead of waiting for its next poll. Spurious wake-ups are allowed;
    /// the default never resolves (the processor then relies on polling alone).
    async fn wait_for_tasks(&self, queues: &[QueueName]) {
        let _ = queues;
        futures::future::pending::<()>().await
    }

    /// Records the outcome of the attempt at `message`, an active task.
    ///
    /// Errors: [`Error::TaskNotFound`](crate::Error::TaskNotFound) if the task is not active
    /// (someone else finished or recovered it).
    async fn finish(&self, message: &StoredTask, outcome: Outcome) -> Result<()>;

    /// Records many outcomes, each exactly as [`Dequeue::finish`] would, in as few round trips
    /// as the backend allows. Each succeeds or fails on its own; the results are in the order
    /// of `items`.
    ///
    /// The default implementation finishes one task after the other.
    async fn finish_batch(&self, items: Vec<(StoredTask, Outcome)>) -> Vec<Result<()>> {
        let mut results = Vec::with_capacity(items.len());
        for (message, outcome) in items {
            results.push(self.finish(&message, outcome).await);
        }
        results
    }

    /// Moves the lease expiry of each of `ids` (active tasks of `queue`) to now +
    /// [`LEASE_DURATION`](crate::LEASE_DURATION) and returns the new expiry. IDs that are no
    /// longer active are ignored.
    ///
    /// It also records that a handler starts each task ([`LeaseStage::Started`]): a worker calls
    /// it for the tasks of a fetch, and waits for it to succeed, before it runs or holds any of
    /// them, so that an expired lease charges only attempts that ran; later calls (the
    /// heartbeat's) find them started already.
    async fn extend_leases(&self, queue: &QueueName, ids: &[TaskId]) -> Result<SystemTime>;

    /// Stores `result` as the result of task `id` in `queue`.
    async fn write_result(&self, queue: &QueueName, id: &TaskId, result: Bytes) -> Result<()>;

    /// Records `progress` for the active task `id` of `queue`, replacing its last report; the
    /// inspector shows it in [`TaskInfo::progress`](crate::TaskInfo). A dequeue clears it, so
    /// that each attempt starts with none; it stays with a task that completes.
    ///
    /// Errors: [`Error::TaskNotFound`](crate::Error::TaskNotFound) when the task does not exist
    /// or is not active (nothing is written); [`Error::Unsupported`](crate::Error::Unsupported)
    /// from a backend that keeps no progress, which is the default.
    async fn write_progress(&self, queue: &QueueName, id: &TaskId, progress: &Progress) -> Result<()> {
        let _ = (queue, id, progress);
        Err(crate::Error::Unsupported { capability: "task progress" })
    }
}

/// Moves due tasks to where workers find them. Used by the forwarder.
#[async_trait]
pub trait Forward: Send + Sync {
    /// Moves every scheduled and retry task of `queues` whose time has come to pending (or to
    /// its group, if it was stored with one). Returns how many moved, and when the earliest task
    /// left scheduled or waiting to retry in `queues` falls due, so the forwarder can come back
    /// then rather than poll.
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<Forwarded>;

    /// The names of queues in which a task was just scheduled or set to retry, from the moment
    /// this returns, so a forwarder that sleeps until the earliest due time it knows of hears of
    /// an earlier one (spurious names are allowed; a backend may name only tasks that became the
    /// earliest of their set). The stream ends when the subscription is lost; call again.
    ///
    /// The default never yields: the forwarder then relies on its interval.
    ///
    /// Errors: [`Error::Broker`](crate::Error::Broker) when the backend cannot subscribe now.
    async fn due_notices(&self) -> Result<BoxStream<'static, String>> {
        Ok(futures::stream::pending().boxed())
    }
}

/// What one [`Forward::forward_ready`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Forwarded {
    /// How many tasks moved.
    pub moved: usize,
    /// When the earliest task left scheduled or waiting to retry falls due (its score: whole
    /// seconds, as Go's layout keeps them); `None` when none is left.
    pub next_due: Option<SystemTime>,
}

impl Forwarded {
    /// `moved` tasks moved; the earliest of those left falls due at `next_due`.
    pub fn new(moved: usize, next_due: Option<SystemTime>) -> Self {
        Self { moved, next_due }
    }
}

/// Finds tasks whose worker vanished. Used by the recoverer.
#[async_trait]
pub trait Recover: Send + Sync {
    /// The active tasks of `queues` whose lease expired at or before `cutoff`, each with the
    /// [`LeaseStage`] it reached.
    async fn list_lease_expired(&self, queues: &[QueueName], cutoff: SystemTime) -> Result<Vec<ExpiredLease>>;

    /// Records the outcome of each task of `items`, as [`Dequeue::finish_batch`] would, but only
    /// while its lease is still one that expires at or before `cutoff`: for the recoverer, the
    /// cutoff it listed the task with; for a worker writing an outcome again, its own lease's
    /// expiry. A task whose lease moved on since (another server recovered it and a worker took
    /// it again) is left alone with [`Error::TaskNotFound`](crate::Error::TaskNotFound), as one
    /// no longer active is: without the check, a late write would take a task back from the
    /// worker now running it, and two workers would run it at once. The results are in the
    /// order of `items`.
    async fn recover(&self, items: Vec<(StoredTask, Outcome)>, cutoff: SystemTime) -> Vec<Result<()>>;
}

/// Deletes completed tasks whose retention ran out. Used by the janitor.
#[async_trait]
pub trait Janitor: Send + Sync {
    /// Deletes up to `batch_size` expired completed tasks of `queue`; returns how many.
    async fn delete_expired_completed(&self, queue: &QueueName, batch_size: usize) -> Result<usize>;

    /// Deletes every expired completed task of `queues`, at most `batch_size` per call of
    /// [`Janitor::delete_expired_completed`]; returns how many. The janitor calls this on every
    /// pass. The default tries each queue; a backend that can tell cheaply which queues hold
    /// completed tasks at all skips the others, so that a pass over many idle queues costs
    /// little.
    async fn delete_all_expired_completed(&self, queues: &[QueueName], batch_size: usize) -> Result<usize> {
        delete_expired_completed_each(self, queues, batch_size).await
    }
}

/// Calls [`Janitor::delete_expired_completed`] for each of `queues` until it deletes fewer than
/// `batch_size`; returns how many it deleted in all. What
/// [`Janitor::delete_all_expired_completed`] does by default, for a backend that overrides it
/// to choose the queues first.
pub async fn delete_expired_completed_each<J: Janitor + ?Sized>(
    janitor: &J,
    queues: &[QueueName],
    batch_size: usize,
) -> Result<usize> {
    let mut deleted = 0;
    for queue in queues {
        loop {
            let n = janitor.delete_expired_completed(queue, batch_size).await?;
            deleted += n;
            if n < batch_size {
                break;
            }
        }
    }
    Ok(deleted)
}

/// Publishes which servers are alive and what they run. Used by the heartbeater.
#[async_trait]
pub trait ServerState: Send + Sync {
    /// Records `server` and its running `workers`, both expiring after `ttl` unless rewritten.
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()>;

    /// Removes the records of `server` (graceful shutdown).
    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()>;
}

/// Tells whether the backend is reachable. Used by the health checker.
#[async_trait]
pub trait Health: Send + Sync {
    /// Succeeds when the backend answers.
    async fn ping(&self) -> Result<()>;
}

/// One page of a task listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Tasks per page (at least 1).
    pub size: usize,
    /// Page number, from 0.
    pub number: usize,
}

impl Default for Page {
    fn default() -> Self {
        Page { size: 30, number: 0 }
    }
}

/// Looks at queues and tasks and acts on them. Used by operators' tools.
#[async_trait]
pub trait Inspect: Send + Sync {
    /// The names of every known queue, sorted.
    async fn queues(&self) -> Result<Vec<QueueName>>;

    /// Sizes and statistics of `queue`.
    ///
    /// Errors: [`Error::QueueNotFound`](crate::Error::QueueNotFound).
    async fn queue_info(&self, queue: &QueueName) -> Result<QueueInfo>;

    /// One task.
    ///
    /// Errors: [`Error::QueueNotFound`](crate::Error::QueueNotFound),
    /// [`Error::TaskNotFound`](crate::Error::TaskNotFound).
    async fn task_info(&self, queue: &QueueName, id: &TaskId) -> Result<TaskInfo>;

    /// The tasks of `queue` in `state`, one page: pending and active in processing order,
    /// the others by score (due time, archive time or expiry), aggregating across all groups.
    async fn list_tasks(&self, queue: &QueueName, state: TaskState, page: Page) -> Result<Vec<TaskInfo>>;

    /// The tasks waiting in `group` of `queue`, one page, oldest first.
    async fn list_group_tasks(&self, queue: &QueueName, group: &GroupName, page: Page) -> Result<Vec<TaskInfo>>;

    /// Processed and failed counts of `queue` for the last `days` days (UTC), today first.
    ///
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `days` is 0,
    /// [`Error::QueueNotFound`](crate::Error::QueueNotFound).
    async fn history(&self, queue: &QueueName, days: usize) -> Result<Vec<DailyStats>>;

    /// The servers alive now, with their workers, as their heartbeats last wrote them
    /// ([`ServerState::write_server_state`]).
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>>;

    /// What the backend says about itself (version, memory, clients, nodes), and the eviction
    /// policies in force that can drop tasks ([`BackendInfo::eviction_risks`]; none on a backend
    /// that never evicts).
    async fn backend_info(&self) -> Result<BackendInfo>;

    /// Where a sharded backend keeps `queue` (on a Redis Cluster, its hash slot); `None` on a
    /// backend that does not shard.
    async fn queue_location(&self, queue: &QueueName) -> Result<Option<QueueLocation>>;

    /// Stops workers from taking tasks from `queue`; its tasks stay where they are.
    ///
    /// Errors: [`Error::FailedPrecondition`](crate::Error::FailedPrecondition) if already paused.
    async fn pause_queue(&self, queue: &QueueName) -> Result<()>;

    /// Lets workers take tasks from `queue` again.
    ///
    /// Errors: [`Error::FailedPrecondition`](crate::Error::FailedPrecondition) if not paused.
    async fn unpause_queue(&self, queue: &QueueName) -> Result<()>;
}

/// The opt-in capabilities of a broker: what a server, an inspector or a tool uses when the
/// broker has it, and does without (or refuses with [`Error::Unsupported`](crate::Error::Unsupported))
/// when it does not.
///
/// Every method is provided and says "not supported"; a backend overrides those it has, each
/// in one line:
///
/// ```
/// # use asynq_core::broker::{Capabilities, Cancel};
/// # use std::sync::Arc;
/// # struct MyBroker;
/// # #[async_trait::async_trait]
/// # impl Cancel for MyBroker {
/// #     async fn cancel(&self, _id: &asynq_core::TaskId) -> asynq_core::Result<asynq_core::CancelOutcome> {
/// #         Ok(asynq_core::CancelOutcome::UnknownTask)
/// #     }
/// #     async fn cancellations(&self) -> asynq_core::Result<futures::stream::BoxStream<'static, String>> {
/// #         Ok(Box::pin(futures::stream::pending()))
/// #     }
/// #     async fn kept_cancellations(&self) -> asynq_core::Result<Vec<(asynq_core::TaskId, std::time::SystemTime)>> {
/// #         Ok(Vec::new())
/// #     }
/// #     async fn settle_cancellation(&self, _id: &asynq_core::TaskId) -> asynq_core::Result<bool> { Ok(false) }
/// # }
/// impl Capabilities for MyBroker {
///     fn as_cancel(self: Arc<Self>) -> Option<Arc<dyn Cancel>> {
///         Some(self)
///     }
/// }
///
/// let broker = Arc::new(MyBroker);
/// assert!(broker.clone().as_cancel().is_some());
/// assert!(broker.as_aggregate().is_none());
/// ```
pub trait Capabilities: Send + Sync + 'static {
    /// Requests to cancel running tasks, and the stream servers listen to. Without it a server
    /// runs no subscriber and [`Error::Unsupported`](crate::Error::Unsupported) answers requests.
    fn as_cancel(self: Arc<Self>) -> Option<Arc<dyn Cancel>> {
        None
    }

    /// Groups and their aggregation. Without it a server refuses a group aggregator, and the
    /// inspector lists no groups.
    fn as_aggregate(self: Arc<Self>) -> Option<Arc<dyn Aggregate>> {
        None
    }

    /// Rate limits shared by every server. Without it a server refuses rate limits.
    fn as_rate_limiter(self: Arc<Self>) -> Option<Arc<dyn RateLimiter>> {
        None
    }

    /// The records of periodic-task schedulers. Without it the inspector lists no scheduler
    /// entries (no scheduler can run on such a broker).
    fn as_scheduler_state(self: Arc<Self>) -> Option<Arc<dyn SchedulerState>> {
        None
    }

    /// Concurrency limits shared by every server. Without it a server refuses them.
    fn as_concurrency_slots(self: Arc<Self>) -> Option<Arc<dyn crate::slots::ConcurrencySlots>> {
        None
    }

    /// Task event logs. Without it no events are kept, and the inspector reads none.
    fn as_event_log(self: Arc<Self>) -> Option<Arc<dyn crate::events::EventLog>> {
        None
    }

    /// Workflows. Without it a server runs no workflow relay and hands handlers no parent
    /// results, and workflows cannot be stored.
    fn as_workflows(self: Arc<Self>) -> Option<Arc<dyn crate::workflow::Workflows>> {
        None
    }

    /// The registry of queues, read cheaply. Without it a server refuses queue patterns.
    fn as_queue_directory(self: Arc<Self>) -> Option<Arc<dyn QueueDirectory>> {
        None
    }

    /// The record of per task type metrics. Without it a server records none, and the
    /// inspector reads none.
    fn as_task_metrics(self: Arc<Self>) -> Option<Arc<dyn crate::task_metrics::TaskMetrics>> {
        None
    }

    /// Operators' requests to quiet or stop a running server. Without it a server hears none,
    /// and operators' tools answer [`Error::Unsupported`](crate::Error::Unsupported).
    fn as_server_control(self: Arc<Self>) -> Option<Arc<dyn crate::control::ServerControl>> {
        None
    }
}

/// Implements [`Capabilities`] for a backend that has every capability: each accessor answers
/// `Some(self)`. The one place that lists them, so a backend cannot forget the one added last.
///
/// ```ignore
/// asynq_core::every_capability!(MyBroker); // MyBroker implements every capability trait
/// ```
#[macro_export]
macro_rules! every_capability {
    ($broker:ty) => {
        impl $crate::broker::Capabilities for $broker {
            fn as_cancel(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::broker::Cancel>> {
                Some(self)
            }
            fn as_aggregate(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::broker::Aggregate>> {
                Some(self)
            }
            fn as_rate_limiter(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::RateLimiter>> {
                Some(self)
            }
            fn as_scheduler_state(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::SchedulerState>> {
                Some(self)
            }
            fn as_concurrency_slots(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::slots::ConcurrencySlots>> {
                Some(self)
            }
            fn as_event_log(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::events::EventLog>> {
                Some(self)
            }
            fn as_workflows(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::workflow::Workflows>> {
                Some(self)
            }
            fn as_queue_directory(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::QueueDirectory>> {
                Some(self)
            }
            fn as_task_metrics(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::task_metrics::TaskMetrics>> {
                Some(self)
            }
            fn as_server_control(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::control::ServerControl>> {
                Some(self)
            }
        }
    };
}

/// The registry of known queues (Go's `asynq:queues`), as a server serving queue patterns
/// ([`QueuePattern`](crate::queue::QueuePattern)) watches it: a count it can read every second
/// whatever the number of queues, and the names when the count moved.
#[async_trait]
pub trait QueueDirectory: Send + Sync {
    /// How many queues are registered, in O(1).
    async fn registered_queue_count(&self) -> Result<usize>;

    /// Every registered queue, in no particular order.
    async fn registered_queues(&self) -> Result<Vec<QueueName>>;
}

/// What a worker server needs of its broker: the roles it always runs, plus the
/// [`Capabilities`] its configuration asks for. Implemented for every type that implements
/// them.
pub trait WorkerBroker: Dequeue + Forward + Recover + Janitor + ServerState + Health + Capabilities {}

impl<T> WorkerBroker for T where T: Dequeue + Forward + Recover + Janitor + ServerState + Health + Capabilities {}

/// What an operator's tool (the inspector, the CLI, the dashboard) needs of its broker: reading
/// and acting on queues and tasks, plus the [`Capabilities`] it shows when present.
/// Implemented for every type that implements them.
pub trait OperatorBroker: Inspect + Manage + Capabilities {}

impl<T> OperatorBroker for T where T: Inspect + Manage + Capabilities {}

/// Every broker role and capability at once, as the memory and Redis brokers have them;
/// implemented for every type that implements them all.
pub trait Broker:
    Enqueue + WorkerBroker + OperatorBroker + Cancel + Wait + Aggregate + SchedulerState + RateLimiter + 'static
{
}

impl<T> Broker for T where
    T: Enqueue + WorkerBroker + OperatorBroker + Cancel + Wait + Aggregate + SchedulerState + RateLimiter + 'static
{
}
