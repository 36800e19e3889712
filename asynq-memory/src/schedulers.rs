//! The records of periodic-task schedulers, kept as Go asynq keeps them in Redis: each
//! scheduler's entries alive until the whole second of its expiry, each entry's enqueue history
//! capped at [`MAX_SCHEDULER_HISTORY`] events, and the marks of enqueued fires.

use crate::MemoryBroker;
use async_trait::async_trait;
use asynq_core::broker::{MAX_SCHEDULER_HISTORY, Page, SchedulerEnqueueEvent, SchedulerEntry, SchedulerState};
use asynq_core::time::unix_secs;
use asynq_core::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// Everything schedulers wrote (Go's `asynq:schedulers`, `asynq:schedulers:{id}`,
/// `asynq:scheduler_history:<entry id>`, and our fire marks).
#[derive(Debug, Default)]
pub(crate) struct Schedulers {
    /// Entries by scheduler ID, with the whole Unix second after which they are gone.
    entries: BTreeMap<String, (Vec<SchedulerEntry>, i64)>,
    /// Enqueue events by entry ID, oldest first (by whole second, then by arrival).
    history: HashMap<String, Vec<(i64, SchedulerEnqueueEvent)>>,
    /// Fire marks by fire ID, with the whole Unix second after which they are gone.
    fires: HashMap<String, i64>,
}

impl Schedulers {
    fn write(&mut self, scheduler_id: &str, entries: &[SchedulerEntry], expires_at: i64) {
        self.entries.insert(scheduler_id.to_owned(), (entries.to_vec(), expires_at));
    }

    fn alive(&mut self, now: i64) -> Vec<SchedulerEntry> {
        self.entries.retain(|_, (_, expires_at)| now <= *expires_at);
        self.entries.values().flat_map(|(entries, _)| entries.iter().cloned()).collect()
    }

    fn record(&mut self, entry_id: &str, event: &SchedulerEnqueueEvent) {
        let history = self.history.entry(entry_id.to_owned()).or_default();
        // Go's script first keeps the newest MAX - 1 events, then adds the new one.
        let excess = (history.len() + 1).saturating_sub(MAX_SCHEDULER_HISTORY);
        history.drain(..excess);
        let score = unix_secs(event.enqueued_at);
        let at = history.partition_point(|(s, _)| *s <= score);
        history.insert(at, (score, event.clone()));
    }

    fn page(&self, entry_id: &str, page: Page) -> Vec<SchedulerEnqueueEvent> {
        let Some(history) = self.history.get(entry_id) else { return Vec::new() };
        let size = page.size.max(1);
        history.iter().rev().skip(size.saturating_mul(page.number)).take(size).map(|(_, e)| e.clone()).collect()
    }

    fn mark_fire(&mut self, fire_id: &str, expires_at: i64, now: i64) {
        self.fires.retain(|_, expiry| now <= *expiry);
        self.fires.insert(fire_id.to_owned(), expires_at);
    }
}

impl MemoryBroker {
    /// `now + ttl` in whole Unix seconds, refusing a TTL past the end of time.
    fn expiry_secs(&self, ttl: Duration) -> Result<i64> {
        self.now().checked_add(ttl).map(unix_secs).ok_or_else(|| Error::invalid("ttl", format!("{ttl:?} is too long")))
    }

    fn now_secs(&self) -> i64 {
        unix_secs(self.now())
    }
}

#[async_trait]
impl SchedulerState for MemoryBroker {
    async fn write_scheduler_entries(
        &self,
        scheduler_id: &str,
        entries: &[SchedulerEntry],
        ttl: Duration,
    ) -> Result<()> {
        let expires_at = self.expiry_secs(ttl)?;
        self.state().schedulers.write(scheduler_id, entries, expires_at);
        Ok(())
    }

    async fn clear_scheduler_entries(&self, scheduler_id: &str) -> Result<()> {
        self.state().schedulers.entries.remove(scheduler_id);
        Ok(())
    }

    async fn scheduler_entries(&self) -> Result<Vec<SchedulerEntry>> {
        let now = self.now_secs();
        Ok(self.state().schedulers.alive(now))
    }

    async fn record_scheduler_enqueue(&self, entry_id: &str, event: &SchedulerEnqueueEvent) -> Result<()> {
        self.state().schedulers.record(entry_id, event);
        Ok(())
    }

    async fn clear_scheduler_history(&self, entry_id: &str) -> Result<()> {
        self.state().schedulers.history.remove(entry_id);
        Ok(())
    }

    async fn scheduler_history(&self, entry_id: &str, page: Page) -> Result<Vec<SchedulerEnqueueEvent>> {
        Ok(self.state().schedulers.page(entry_id, page))
    }

    async fn mark_fire_enqueued(&self, fire_id: &str, ttl: Duration) -> Result<()> {
        let (expires_at, now) = (self.expiry_secs(ttl)?, self.now_secs());
        self.state().schedulers.mark_fire(fire_id, expires_at, now);
        Ok(())
    }

    async fn fire_enqueued(&self, fire_id: &str) -> Result<bool> {
        let now = self.now_secs();
        Ok(self.state().schedulers.fires.get(fire_id).is_some_and(|expiry| now <= *expiry))
    }
}
