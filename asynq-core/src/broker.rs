//! The broker traits: what a backend must do, split by the role that needs it.
//!
//! The contract is cut by its callers:
//! - a producer needs only [`Enqueue`], whose supertrait [`Capabilities`] shows what else the
//!   broker has (the declarations of sharded queues, which a client places tasks by);
//! - a worker server needs a [`WorkerBroker`]: [`Dequeue`], [`Forward`], [`Recover`],
//!   [`Janitor`], [`ServerState`] and [`Health`], each held by the role that uses it;
//! - an operator's tool needs an [`OperatorBroker`]: [`Inspect`] and [`Manage`];
//! - the rest are opt-in [`Capabilities`] ([`Cancel`], [`Aggregate`], [`RateLimiter`],
//!   [`SchedulerState`], [`Workflows`], [`ShardedQueues`], ...), required only by the code that uses them; [`Wait`]
//!   is the [`Tracker`](https://docs.rs/asynq-client)'s alone.
//!
//! Every broker trait is defined in this module (one file per caller or capability) and named
//! by this path; the data types they exchange stay with the parts of the model they belong to.
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

mod aggregate;
mod cancel;
mod capabilities;
mod control;
mod events;
mod operator;
mod producer;
mod rate_limit;
mod scheduler;
mod shards;
mod slots;
mod steps;
mod task_metrics;
mod wait;
mod worker;
mod workflows;

pub use crate::aggregate::{
    AGGREGATION_TIMEOUT, AggregationLimits, AggregationSet, DEFAULT_GROUP_GRACE_PERIOD, GroupInfo,
};
pub use crate::scheduler::{MAX_SCHEDULER_HISTORY, SchedulerEnqueueEvent, SchedulerEntry};
pub use aggregate::Aggregate;
#[cfg(feature = "mock")]
pub use cancel::MockCancel;
pub use cancel::{Cancel, cancel_outcome, cancel_outcome_given};
pub use capabilities::{Broker, Capabilities, QueueDirectory};
pub use control::ServerControl;
pub use events::EventLog;
pub use operator::{Inspect, Manage, OperatorBroker};
pub use producer::Enqueue;
#[cfg(feature = "mock")]
pub use producer::MockEnqueue;
pub use rate_limit::RateLimiter;
pub use scheduler::SchedulerState;
pub use shards::{ShardedQueues, drained_totals, remove_dropped_strays, remove_shard_queues};
pub use slots::ConcurrencySlots;
pub use steps::Steps;
pub use task_metrics::TaskMetrics;
#[cfg(feature = "mock")]
pub use wait::MockWait;
pub use wait::Wait;
pub use worker::{Dequeue, Forward, Health, Janitor, Recover, ServerState, WorkerBroker};
pub use workflows::Workflows;

use crate::StoredTask;
use crate::error::Result;
use crate::names::QueueName;
use std::time::SystemTime;

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
