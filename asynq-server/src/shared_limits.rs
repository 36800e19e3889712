//! Concurrency limits shared by every server of the broker: at most a limit of tasks counted
//! against one key run at once, wherever they run.
//!
//! Before it starts a task whose type has a shared limit ([`Config::shared_type_concurrency`],
//! key `type:<type name>`), whose queue has one ([`Config::shared_queue_concurrency`], key
//! `queue:<queue name>`; a shard counts against its logical queue's), or for which
//! [`Config::shared_limit`] names one, the processor takes a
//! slot of the limit's key from the broker ([`ConcurrencySlots`]), held until the task's lease
//! expires. The heartbeater renews the holds of running tasks with their leases, and the
//! processor gives a slot back when the task's outcome is written. A worker that dies holding
//! slots holds them until their leases would have run out: the same bound as its tasks' leases.
//!
//! A task refused a slot (or whose slot the broker could not grant) waits for one in the server,
//! as a task over a per-server type limit does (see [`crate::limits`]): still active and leased,
//! its start not recorded, charged nothing. The server's waiters for one key queue in turn, and
//! the first waits on the broker ([`ConcurrencySlots::wait_for_slot`]): a slot given back by any
//! server wakes it, and so does the soonest hold's expiry (a dead worker's slots come back when
//! its leases would have run out), with a poll every check interval as the fallback.
//!
//! [`Config::shared_type_concurrency`]: crate::Config::shared_type_concurrency
//! [`Config::shared_limit`]: crate::Config::shared_limit
//! [`Config::shared_queue_concurrency`]: crate::Config::shared_queue_concurrency

use crate::limits::QueueLimits;
use crate::policy::SharedLimitFn;
use asynq_core::broker::ConcurrencySlots;
use asynq_core::broker::Dequeued;
use asynq_core::slots::{SharedLimit, SlotKey};
use asynq_core::{Clock, Lease, Task, TaskId};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

/// Whether a task may start, as far as shared limits go.
pub(crate) enum SharedAdmission {
    /// It counts against no shared limit.
    Unlimited,
    /// It holds a slot of this key, to give back when it finishes.
    Admitted(SlotKey),
    /// Every slot is held (or none could be taken): it waits for one
    /// ([`SharedLimits::wait_for_slot`]).
    Wait,
}

/// The shared limits of one server and the slots its tasks hold.
pub(crate) struct SharedLimits {
    slots: Arc<dyn ConcurrencySlots>,
    by_type: BTreeMap<String, SharedLimit>,
    by_queue: QueueLimits<SharedLimit>,
    derive: Option<SharedLimitFn>,
    /// The slot each task holds, for the heartbeater to renew.
    held: Mutex<HashMap<TaskId, SlotKey>>,
    /// Per key, the turn of this server's waiters: one at a time waits on the broker.
    turns: Mutex<HashMap<SlotKey, Weak<tokio::sync::Mutex<()>>>>,
}

impl SharedLimits {
    /// The limits of `by_type` (type name to limit, checked), `by_queue` and `derive`, kept in
    /// `slots`.
    pub(crate) fn new(
        slots: Arc<dyn ConcurrencySlots>,
        by_type: BTreeMap<String, SharedLimit>,
        by_queue: QueueLimits<SharedLimit>,
        derive: Option<SharedLimitFn>,
    ) -> Self {
        Self { slots, by_type, by_queue, derive, held: Mutex::default(), turns: Mutex::default() }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, SlotKey>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The limit `task` counts against: its type's, else its queue's (or its logical queue's),
    /// else the one `derive` names.
    pub(crate) fn limit_for(&self, task: &Dequeued) -> Option<SharedLimit> {
        if let Some(limit) = self.by_type.get(&task.message.type_name) {
            return Some(limit.clone());
        }
        if let Some((_, limit)) = self.by_queue.get(task.message.queue.as_str()) {
            return Some(limit.clone());
        }
        let derive = self.derive.as_ref()?;
        derive(&Task::from_message(&task.message))
    }

    /// Takes a slot for `task`, dequeued at `now`, held until its lease expires.
    pub(crate) async fn admit(&self, task: &Dequeued, now: SystemTime) -> SharedAdmission {
        let Some(limit) = self.limit_for(task) else { return SharedAdmission::Unlimited };
        match self.take(&limit, &task.message.id, now, task.lease_expiry).await {
            Ok(true) => SharedAdmission::Admitted(limit.key().clone()),
            Ok(false) | Err(()) => SharedAdmission::Wait,
        }
    }

    /// Takes a slot of `limit` for task `id` until `expiry`: whether it was granted, or `Err`
    /// (logged) when the broker could not say.
    async fn take(&self, limit: &SharedLimit, id: &TaskId, now: SystemTime, expiry: SystemTime) -> Result<bool, ()> {
        match self.slots.take_slot(limit, id, now, expiry).await {
            Ok(true) => {
                self.held().insert(id.clone(), limit.key().clone());
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                tracing::warn!(task_id = %id, slot = %limit.key(), error = %e, "could not take a concurrency slot; waiting for one");
                Err(())
            }
        }
    }

    /// Waits for a slot of `limit` and takes it for task `id`, held until `lease` expires (see
    /// the module docs); polls every `poll` at the latest. Dropped part way, it may leave a
    /// slot taken for `id`: give it back ([`SharedLimits::release`]).
    pub(crate) async fn wait_for_slot(
        &self,
        limit: &SharedLimit,
        id: &TaskId,
        clock: &dyn Clock,
        lease: &Lease,
        poll: Duration,
    ) -> SlotKey {
        let turn = self.turn(limit.key());
        let _turn = turn.lock().await;
        loop {
            let now = clock.now();
            match self.take(limit, id, now, lease.expiry()).await {
                Ok(true) => return limit.key().clone(),
                Ok(false) => {}
                Err(()) => {
                    tokio::time::sleep(poll).await;
                    continue;
                }
            }
            // A hold that expires wakes nobody: look again when the soonest one does.
            let soonest = match self.slots.slot_holders(limit.key(), now).await {
                Ok(holders) => holders.first().map(|(_, until)| until.duration_since(now).unwrap_or_default()),
                Err(_) => None,
            };
            let wait = soonest.map_or(poll, |soonest| soonest.min(poll));
            tokio::select! {
                freed = self.slots.wait_for_slot(limit, now) => {
                    if let Err(e) = freed {
                        tracing::debug!(slot = %limit.key(), error = %e, "cannot wait for a freed slot; polling");
                        tokio::time::sleep(wait).await;
                    }
                }
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// The turn of this server's waiters for a slot of `key`.
    fn turn(&self, key: &SlotKey) -> Arc<tokio::sync::Mutex<()>> {
        let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
        turns.retain(|_, turn| turn.strong_count() > 0);
        let turn = turns.entry(key.clone()).or_default();
        turn.upgrade().unwrap_or_else(|| {
            let new = Arc::new(tokio::sync::Mutex::new(()));
            *turn = Arc::downgrade(&new);
            new
        })
    }

    /// Gives back the slot task `id` holds of `key`; an error leaves it to expire with the lease.
    pub(crate) async fn release(&self, key: &SlotKey, id: &TaskId) {
        self.held().remove(id);
        if let Err(e) = self.slots.release_slot(key, id).await {
            tracing::warn!(task_id = %id, slot = %key, error = %e, "could not give a concurrency slot back; it comes back when the task's lease would have expired");
        }
    }

    /// Renews to `expiry` the slots the tasks of `ids` hold, with their leases.
    pub(crate) async fn extend(&self, ids: &[TaskId], expiry: SystemTime) {
        let mut by_key: BTreeMap<SlotKey, Vec<TaskId>> = BTreeMap::new();
        {
            let held = self.held();
            for id in ids {
                if let Some(key) = held.get(id) {
                    by_key.entry(key.clone()).or_default().push(id.clone());
                }
            }
        }
        for (key, holders) in by_key {
            if let Err(e) = self.slots.extend_slots(&key, &holders, expiry).await {
                tracing::warn!(slot = %key, error = %e, "could not renew concurrency slots");
            }
        }
    }
}

impl fmt::Debug for SharedLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedLimits")
            .field("by_type", &self.by_type)
            .field("derive", &self.derive.is_some())
            .field("held", &self.held().len())
            .finish_non_exhaustive()
    }
}
