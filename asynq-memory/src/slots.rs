//! Shared concurrency slots, kept beside the queues and updated under the broker's one lock, so
//! every clone of the broker shares them and each take is atomic.

use crate::MemoryBroker;
use async_trait::async_trait;
use asynq_core::slots::{ConcurrencySlots, SharedLimit, SlotKey};
use asynq_core::{Result, TaskId};
use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

/// Per slot key, each holder and when its hold expires (Redis's `<ns>:slots:<key>`).
pub(crate) type Slots = HashMap<SlotKey, BTreeMap<TaskId, SystemTime>>;

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
        if let Some(held) = state.slots.get_mut(key) {
            held.remove(holder);
            if held.is_empty() {
                state.slots.remove(key);
            }
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
}
