//! The capability to keep the records of periodic-task schedulers.

use super::Page;
use crate::error::Result;
use crate::scheduler::{SchedulerEnqueueEvent, SchedulerEntry};
use async_trait::async_trait;
use std::time::Duration;

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
    /// When the history already holds [`MAX_SCHEDULER_HISTORY`](crate::broker::MAX_SCHEDULER_HISTORY) events, the oldest go first so
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
