//! The capability of concurrency limits shared by every server.

#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::slots::{SharedLimit, SlotKey};
use crate::{Result, TaskId};
use async_trait::async_trait;
use std::time::SystemTime;

/// Slots of shared concurrency limits, kept by the broker so every server sees the same holders.
#[async_trait]
pub trait ConcurrencySlots: Send + Sync {
    /// Takes a slot of `limit` for task `holder` until `expiry`, if fewer than its limit of
    /// holders hold one at `now` (holds that expired by `now` no longer count); a holder that
    /// holds one already keeps it, renewed to `expiry`. Returns whether `holder` holds a slot.
    async fn take_slot(
        &self,
        limit: &SharedLimit,
        holder: &TaskId,
        now: SystemTime,
        expiry: SystemTime,
    ) -> Result<bool>;

    /// Renews the holds of `holders` on `key` to `expiry`; a holder whose hold is gone is not
    /// given one.
    async fn extend_slots(&self, key: &SlotKey, holders: &[TaskId], expiry: SystemTime) -> Result<()>;

    /// Gives back `holder`'s slot of `key`, if it holds one.
    async fn release_slot(&self, key: &SlotKey, holder: &TaskId) -> Result<()>;

    /// The holders of a slot of `key` at `now`, with the expiry of each hold, soonest first.
    async fn slot_holders(&self, key: &SlotKey, now: SystemTime) -> Result<Vec<(TaskId, SystemTime)>>;

    /// Waits until a slot of `limit` may be had: returns at once when fewer than its limit of
    /// holders hold one at `now`, else once a holder gives a slot of its key back
    /// ([`ConcurrencySlots::release_slot`], through any clone of the broker or any process
    /// sharing it) after the call began.
    ///
    /// It may return with every slot held again (another waiter took the freed one): take the
    /// slot, and wait again if refused. A hold that expires wakes nobody; a caller also waits for
    /// the soonest expiry ([`ConcurrencySlots::slot_holders`]), by its own clock.
    ///
    /// Errors: [`Error::Broker`] when releases cannot be listened for now (say, the broker is
    /// out of reach); the caller then polls.
    async fn wait_for_slot(&self, limit: &SharedLimit, now: SystemTime) -> Result<()>;
}
