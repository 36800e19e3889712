//! The core model of asynq: tasks and their options, the task state machine, the broker traits
//! that every backend implements, and the clock and lease abstractions.
//!
//! This crate does no IO and depends on neither tokio nor redis. Everything that talks to a
//! backend lives behind the role-shaped traits in [`broker`]; everything time-dependent reads
//! wall-clock time through a [`Clock`].
//!
//! ```
//! use asynq_core::{Task, TaskOptions};
//! use std::time::Duration;
//!
//! let task = Task::new("email:welcome", r#"{"user_id":42}"#)
//!     .with_options(TaskOptions::new().queue("critical").max_retry(5).timeout(Duration::from_secs(20)));
//! assert_eq!(task.type_name(), "email:welcome");
//! ```
#![doc(test(attr(deny(warnings))))]

mod aggregate;
mod archive;
pub mod broker;
mod cancel;
mod clock;
pub mod control;
mod error;
pub mod events;
mod go_format;
mod info;
#[cfg(feature = "json")]
mod job;
#[cfg(feature = "json")]
mod json;
mod lease;
mod manage;
mod names;
mod options;
mod priority;
mod progress;
pub mod queue;
pub mod rate_limit;
mod resolve;
pub mod retry;
mod scheduler;
pub mod shard;
pub mod slots;
pub mod state;
pub mod steps;
mod stored;
mod task;
pub mod task_metrics;
pub mod time;
#[cfg(feature = "opentelemetry")]
pub mod trace_context;
mod wait;
pub mod workflow;

pub use aggregate::{validate_aggregation_completion, validate_aggregation_set};
pub use archive::{ArchiveLimits, ArchiveOutlook, ArchiveReport, MAX_ARCHIVE_AGE, MAX_ARCHIVE_SIZE, MIN_ARCHIVE_SIZE};
pub use broker::Broker;
pub use broker::ServerControl;
pub use broker::{cancel_outcome, cancel_outcome_given};
pub use cancel::{CANCEL_KEEP, CancelOutcome, MAX_KEPT_CANCELS};
pub use clock::{Clock, SimulatedClock, SystemClock};
pub use control::ServerRequest;
pub use error::{BrokerError, Error, FailureKind, Result};
pub use info::{
    BackendInfo, DailyStats, EvictionRisk, NodeInfo, QueueInfo, QueueLocation, ServerInfo, ServerStatus, WorkerInfo,
};
#[cfg(feature = "json")]
pub use job::Job;
#[cfg(feature = "json")]
pub use json::PayloadError;
pub use lease::Lease;
pub use manage::{BulkAction, BulkProgress, OnProgress, TaskSet, validate_bulk};
pub use names::{GroupName, QueueName, TaskId, WorkflowId};
pub use options::{Debounce, EnqueueRequest, MAX_DEBOUNCE_KEY_LEN, Placement, ProcessAt, Replace, TaskOptions};
pub use priority::TaskPriority;
pub use progress::Progress;
pub use resolve::resolve_enqueue;
pub use state::TaskState;
pub use stored::StoredTask;
pub use task::{Task, TaskInfo};
pub use wait::{TaskOutcome, progress_from_lookup, validate_wait};

use std::time::Duration;

/// The queue a task goes to when no queue is given.
pub const DEFAULT_QUEUE: &str = "default";
/// The number of retries a task gets when no `max_retry` is given (Go asynq's default).
pub const DEFAULT_MAX_RETRY: u32 = 25;
/// The timeout a task gets when neither a timeout nor a deadline is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long a dequeued task is leased to its worker before another server may recover it.
pub const LEASE_DURATION: Duration = Duration::from_secs(30);
/// How many times a task a handler started may lose its lease (its worker died, or lost the
/// broker for longer than a lease) and go back to pending charged nothing, before each further
/// loss counts as a failed attempt. The first is forgiven because a worker can die in the moment
/// between recording that a handler starts and the handler's first line, and because a
/// deployment or a lost node is seldom the task's fault; a task that keeps killing its worker
/// is still charged and ends in the archive.
pub const FREE_STALLS: u32 = 1;
/// The archive keeps fewer than this many tasks: archiving one trims it to the newest
/// `ARCHIVE_MAX_SIZE - 1` (Go asynq's `maxArchiveSize`).
pub const ARCHIVE_MAX_SIZE: usize = 10_000;
/// Archived tasks older than this are deleted when another task is archived (Go asynq's
/// `archivedExpirationInDays`: 90 days).
pub const ARCHIVE_MAX_AGE: Duration = Duration::from_secs(90 * 24 * 60 * 60);
/// How long a queue's daily processed and failed counters live after their day's first count
/// (Go asynq's `statsTTL`: 90 days).
pub const DAILY_STATS_TTL: Duration = Duration::from_secs(90 * 24 * 60 * 60);
/// The longest duration an option may hold, and the longest a stored timeout or retention is
/// read as: Go's `time.Duration`, an int64 of nanoseconds (about 292 years). Go servers sharing
/// the queue turn stored timeouts and retentions back into one, and would overflow past it; a
/// backend reads a corrupt stored one that is longer as this.
pub const MAX_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);
/// The error message stored on a task whose lease expired (a dead or stalled worker).
pub const LEASE_EXPIRED_MESSAGE: &str = "asynq: task lease expired";
