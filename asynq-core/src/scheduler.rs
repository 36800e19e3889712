//! What periodic-task schedulers publish about themselves: their entries (one per registered
//! cron spec, rewritten at every heartbeat), the history of what each entry enqueued, and the
//! marks that stop several replicas of a scheduler from enqueueing the same fire twice.
//!
//! A Redis backend keeps these where Go asynq keeps them, so that Go's `asynq cron ls` and
//! `asynq cron history` show Rust schedulers.

use bytes::Bytes;
use std::time::SystemTime;

/// The most enqueue events kept per entry; recording one more drops the oldest (Go asynq's
/// `maxEvents`).
pub const MAX_SCHEDULER_HISTORY: usize = 1000;

/// One registered periodic task of a scheduler, as its heartbeat publishes it (Go's
/// `SchedulerEntry` message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerEntry {
    /// The entry's ID (a UUID chosen at registration).
    pub id: String,
    /// The cron spec as registered, e.g. `@every 30s` or `CRON_TZ=Asia/Tokyo 0 9 * * *`.
    pub spec: String,
    /// The type of the task it enqueues.
    pub task_type: String,
    /// The payload of the task it enqueues.
    pub task_payload: Bytes,
    /// The options given at registration, each in Go's `Option.String()` form
    /// ([`TaskOptions::go_option_strings`](crate::TaskOptions::go_option_strings)).
    pub options: Vec<String>,
    /// When it fires next; `None` when it will not fire again.
    pub next: Option<SystemTime>,
    /// When it last fired (its scheduled time); `None` before its first fire.
    pub prev: Option<SystemTime>,
}

/// One task a scheduler entry enqueued (Go's `SchedulerEnqueueEvent` message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerEnqueueEvent {
    /// The ID of the enqueued task.
    pub task_id: String,
    /// When it was enqueued.
    pub enqueued_at: SystemTime,
}
