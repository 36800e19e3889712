//! What periodic-task schedulers publish about themselves: their entries (one per registered
//! cron spec, rewritten at every heartbeat), the history of what each entry enqueued, and the
//! marks that stop several replicas of a scheduler from enqueueing the same fire twice.
//!
//! A Redis backend keeps these where Go asynq keeps them, so that Go's `asynq cron ls` and
//! `asynq cron history` show Rust schedulers.

use crate::broker::Page;
use crate::error::Result;
use async_trait::async_trait;
use bytes::Bytes;
use std::time::{Duration, SystemTime};

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

/// Publishes schedulers' entries and enqueue history, and remembers which fires were
/// enqueued. Used by the scheduler.
///
/// Liveness follows the broker's [`Clock`](crate::Clock), in whole Unix seconds as Go's sorted-set
/// scores are: entries written at `t` with TTL `ttl` are listed while the current second is not
/// past `t + ttl`'s.
#[async_trait]
pub trait SchedulerState: Send + Sync {
    /// Replaces the entries of scheduler `scheduler_id` with `entries`, listed until `ttl` from
    /// now unless written again. Writing no entries keeps the scheduler alive with nothing to
    /// list, as in Go asynq.
    async fn write_scheduler_entries(
        &self,
        scheduler_id: &str,
        entries: &[SchedulerEntry],
        ttl: Duration,
    ) -> Result<()>;

    /// Removes the entries of scheduler `scheduler_id` (graceful shutdown). Clearing a scheduler
    /// that wrote nothing succeeds.
    async fn clear_scheduler_entries(&self, scheduler_id: &str) -> Result<()>;

    /// The entries of every live scheduler: schedulers in order of their IDs, each one's entries
    /// in the order they were written. Also forgets schedulers whose entries expired.
    async fn scheduler_entries(&self) -> Result<Vec<SchedulerEntry>>;

    /// Adds `event` to the history of entry `entry_id`, scored by its time in whole seconds.
    /// When the history already holds [`MAX_SCHEDULER_HISTORY`] events, the oldest go first so
    /// that it holds that many afterwards. Atomic.
    async fn record_scheduler_enqueue(&self, entry_id: &str, event: &SchedulerEnqueueEvent) -> Result<()>;

    /// Deletes the history of entry `entry_id` (graceful shutdown). Succeeds for an entry
    /// without history.
    async fn clear_scheduler_history(&self, entry_id: &str) -> Result<()>;

    /// One page of the history of entry `entry_id`, newest first (events of the same second in
    /// an order the backend chooses). Empty for an unknown entry.
    async fn scheduler_history(&self, entry_id: &str, page: Page) -> Result<Vec<SchedulerEnqueueEvent>>;

    /// Remembers for `ttl` that fire `fire_id` (one scheduled time of one periodic task,
    /// identified the same way by every replica of a scheduler) was enqueued. Marking again
    /// restarts the TTL.
    async fn mark_fire_enqueued(&self, fire_id: &str, ttl: Duration) -> Result<()>;

    /// True when fire `fire_id` was marked by [`SchedulerState::mark_fire_enqueued`] and its
    /// TTL has not run out by the broker's clock.
    async fn fire_enqueued(&self, fire_id: &str) -> Result<bool>;
}
