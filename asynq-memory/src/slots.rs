//! Shared concurrency slots, kept beside the queues and updated under the broker's one lock, so
//! every clone of the broker shares them and each take is atomic. Giving a slot back wakes the
//! waiters for a slot of its key ([`ConcurrencySlots::wait_for_slot`]).

use crate::MemoryBroker;
use async_trait::async_trait;
use asynq_core::broker::ConcurrencySlots;
use asynq_core::slots::{SharedLimit, SlotKey};
use asynq_core::{Result, TaskId};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::SystemTime;
use tokio::sync::Notify;

/// Per slot key, each holder and when its hold expires (Redis's `<ns>:slots:<key>`).
pub(crate) type Slots = HashMap<SlotKey, BTreeMap<TaskId, SystemTime>>;

/// Per slot key, what its waiters wait on while any waits; a key nobody waits on is dropped at
/// its next release.
pub(crate) type SlotWaits = HashMap<SlotKey, Weak<Notify>>;

#[async_trait]
impl ConcurrencySlots for MemoryBroker {
    async fn take_slot(
        &self,
        limit: &SharedLimit,
        holder: &TaskId,
        now: SystemTime,
        expiry: SystemTime,
    ) -> Result<bool> {
        let mut state = self.state();
        let holders = state.slots.entry(limit.key().clone()).or_default();
        holders.retain(|_, held_until| *held_until > now);
        let granted = holders.contains_key(holder) || holders.len() < limit.limit() as usize;
        if granted {
            holders.insert(holder.clone(), expiry);
        }
        Ok(granted)
    }

    async fn extend_slots(&self, key: &SlotKey, holders: &[TaskId], expiry: SystemTime) -> Result<()> {
        if let Some(held) = self.state().slots.get_mut(key) {
            for holder in holders {
                if let Some(held_until) = held.get_mut(holder) {
                    *held_until = expiry;
                }
            }
        }
        Ok(())
    }

    async fn release_slot(&self, key: &SlotKey, holder: &TaskId) -> Result<()> {
        let mut state = self.state();
        let Some(held) = state.slots.get_mut(key) else { return Ok(()) };
        let released = held.remove(holder).is_some();
        if held.is_empty() {
            state.slots.remove(key);
        }
        // Waits nobody holds any more are dropped here.
        if released
            && let Some(waits) = state.slot_waits.remove(key)
            && let Some(freed) = waits.upgrade()
        {
            freed.notify_waiters();
            state.slot_waits.insert(key.clone(), waits);
        }
        Ok(())
    }

    async fn slot_holders(&self, key: &SlotKey, now: SystemTime) -> Result<Vec<(TaskId, SystemTime)>> {
        let state = self.state();
        let mut holders: Vec<(TaskId, SystemTime)> = state
            .slots
            .get(key)
            .map(|held| {
                held.iter().filter(|(_, until)| **until > now).map(|(id, until)| (id.clone(), *until)).collect()
            })
            .unwrap_or_default();
        holders.sort_by_key(|(id, until)| (*until, id.clone()));
        Ok(holders)
    }

    async fn wait_for_slot(&self, limit: &SharedLimit, now: SystemTime) -> Result<()> {
        let Some(freed) = self.slot_wait(limit, now) else { return Ok(()) };
        // Made before the second look, so that a release after it wakes this waiter.
        let notified = freed.notified();
        if self.slot_wait(limit, now).is_none() {
            return Ok(());
        }
        notified.await;
        Ok(())
    }
}

impl MemoryBroker {
    /// What to wait on for a slot of `limit`, or `None` when fewer than its limit of holders
    /// hold one at `now`.
    fn slot_wait(&self, limit: &SharedLimit, now: SystemTime) -> Option<Arc<Notify>> {
        let mut state = self.state();
        let live = state.slots.get(limit.key()).map_or(0, |held| held.values().filter(|until| **until > now).count());
        if live < limit.limit() as usize {
            return None;
        }
        let waits = state.slot_waits.entry(limit.key().clone()).or_default();
        Some(waits.upgrade().unwrap_or_else(|| {
            let freed = Arc::new(Notify::new());
            *waits = Arc::downgrade(&freed);
            freed
        }))
    }
}
