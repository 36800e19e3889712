//! Task observers: hooks the server calls as tasks start and finish and as the recoverer finds
//! tasks whose lease expired, for metrics and tracing; as it starts, it names the sharded queues
//! it serves.
//!
//! Install observers with [`Config::task_observers`](crate::Config::task_observers). With none
//! installed, the server pays one branch per task.
//!
//! Every task attempt runs inside a `tracing` span named [`TASK_SPAN_NAME`] with the fields
//! `task_type`, `queue`, `task_id`, `retry_count` and, once the attempt ends, `outcome`
//! ([`AttemptOutcome::as_str`]), and those of OpenTelemetry's messaging conventions:
//! `messaging.system` (`asynq`), `messaging.operation.type` (`process`),
//! `messaging.destination.name` (the queue), `messaging.message.id` (the task ID), `otel.kind`
//! `consumer` and `otel.name` `process <queue>`. The handler's future runs in that span, so the
//! events it logs and the spans it opens are its children; a subscriber such as
//! `tracing-opentelemetry` can export them. Built with the `opentelemetry` feature, the server
//! makes the trace context in a task's `traceparent` header the span's parent, so the task
//! joins the trace of the enqueue that made it.

use crate::handler::HandlerError;
use asynq_core::{QueueName, StoredTask};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The name of the span every task attempt runs in.
pub const TASK_SPAN_NAME: &str = "asynq.task";

/// How one attempt of a task ended, as far as the server knows when the handler returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// The handler succeeded; the task is deleted, or completed when it has a retention.
    Succeeded,
    /// The handler failed and the task goes to the retry set.
    Retried,
    /// The handler failed and the task is archived: out of retries, or told to skip them.
    Archived,
    /// The handler revoked the task ([`HandlerError::revoke`]); it is deleted.
    Revoked,
    /// Shutdown stopped waiting for the handler; the task goes back to its queue.
    Requeued,
    /// The server lost the task's lease; it leaves the task to a recoverer and writes nothing.
    LeaseLost,
    /// The handler slept or waits for a signal ([`TaskContext::sleep`](crate::TaskContext::sleep),
    /// [`TaskContext::wait_for_signal_bytes`](crate::TaskContext::wait_for_signal_bytes)): the task
    /// is scheduled to go on, no retry charged. Neither processed nor failed.
    Parked,
}

impl AttemptOutcome {
    /// The outcome's name, as the `outcome` field of the task span and as a metrics label:
    /// `success`, `retry`, `archived`, `revoked`, `requeued`, `lease_lost` or `parked`.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Succeeded => "success",
            AttemptOutcome::Retried => "retry",
            AttemptOutcome::Archived => "archived",
            AttemptOutcome::Revoked => "revoked",
            AttemptOutcome::Requeued => "requeued",
            AttemptOutcome::LeaseLost => "lease_lost",
            AttemptOutcome::Parked => "parked",
        }
    }
}

impl fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`TaskObserver::task_finished`] is told about an attempt.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AttemptReport<'a> {
    /// How the attempt ended.
    pub outcome: AttemptOutcome,
    /// How long the handler ran (by tokio's monotonic clock), until it returned or was stopped.
    pub duration: Duration,
    /// The handler's error, when it failed (also for a revoke, a timeout or a panic); `None`
    /// for a park.
    pub error: Option<&'a HandlerError>,
    /// Whether the failure counts as one: raises the retry count and the failed statistics
    /// (see [`Config::is_failure`](crate::Config::is_failure)). False for a success, a revoke,
    /// a requeue, a lost lease and a park.
    pub is_failure: bool,
}

impl AttemptReport<'_> {
    /// True when the handler panicked.
    pub fn panicked(&self) -> bool {
        self.error.is_some_and(HandlerError::is_panic)
    }
}

/// Hooks the server calls around task attempts. Every method has an empty default.
///
/// Methods run on the task's worker, synchronously: keep them short and never block.
///
/// ```
/// use asynq_core::StoredTask;
/// use asynq_server::{AttemptReport, TaskObserver};
/// use asynq_server::Config;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Debug, Default)]
/// struct Failures(AtomicU64);
///
/// impl TaskObserver for Failures {
///     fn task_finished(&self, _task: &StoredTask, report: &AttemptReport<'_>) {
///         if report.is_failure {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let config = Config { task_observers: vec![Arc::new(Failures::default())], ..Config::default() };
/// # let _ = config;
/// ```
pub trait TaskObserver: Send + Sync + 'static {
    /// The server is starting and serves the sharded queues named `logical`
    /// ([`Config::sharded_queues`](crate::Config::sharded_queues), empty when none): the tasks it
    /// runs of their shards (a shard of `orders` is named `orders~…`,
    /// [`asynq_core::shard::logical_of`]) and of the plain queue of each name belong to them.
    /// Called once per [`Server::start`](crate::Server::start), before that server calls any
    /// other method; an observer installed in several servers hears from each.
    fn serving_sharded_queues(&self, logical: &[QueueName]) {
        let _ = logical;
    }

    /// A worker took `task` and is about to run its handler inside `span` (the
    /// [`TASK_SPAN_NAME`] span, not yet entered): the place to record more fields on it or to
    /// set its parent from the task's headers.
    fn task_started(&self, task: &StoredTask, span: &tracing::Span) {
        let _ = (task, span);
    }

    /// An attempt of `task` ended; `report` says how. Called once for every
    /// [`task_started`](TaskObserver::task_started), before the outcome is written.
    fn task_finished(&self, task: &StoredTask, report: &AttemptReport<'_>) {
        let _ = (task, report);
    }

    /// The recoverer found `task` active with a lease that expired (its worker died or lost the
    /// broker) and sent it to retry, or to the archive when it was out of retries.
    fn lease_expired(&self, task: &StoredTask) {
        let _ = task;
    }
}

impl<T: TaskObserver + ?Sized> TaskObserver for Arc<T> {
    fn serving_sharded_queues(&self, logical: &[QueueName]) {
        (**self).serving_sharded_queues(logical);
    }

    fn task_started(&self, task: &StoredTask, span: &tracing::Span) {
        (**self).task_started(task, span);
    }

    fn task_finished(&self, task: &StoredTask, report: &AttemptReport<'_>) {
        (**self).task_finished(task, report);
    }

    fn lease_expired(&self, task: &StoredTask) {
        (**self).lease_expired(task);
    }
}

/// The observers a server calls, in the order installed. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Observers(Arc<[Arc<dyn TaskObserver>]>);

impl Observers {
    pub(crate) fn new(observers: &[Arc<dyn TaskObserver>]) -> Self {
        Self(observers.into())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn serving_sharded_queues(&self, logical: &[QueueName]) {
        for observer in self.0.iter() {
            observer.serving_sharded_queues(logical);
        }
    }

    pub(crate) fn task_started(&self, task: &StoredTask, span: &tracing::Span) {
        for observer in self.0.iter() {
            observer.task_started(task, span);
        }
    }

    pub(crate) fn task_finished(&self, task: &StoredTask, report: &AttemptReport<'_>) {
        for observer in self.0.iter() {
            observer.task_finished(task, report);
        }
    }

    pub(crate) fn lease_expired(&self, task: &StoredTask) {
        for observer in self.0.iter() {
            observer.lease_expired(task);
        }
    }
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observers").field("len", &self.0.len()).finish()
    }
}
