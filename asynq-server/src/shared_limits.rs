//! Concurrency limits shared by every server of the broker: at most a limit of tasks counted
//! against one key run at once, wherever they run.
//!
//! Before it starts a task whose type has a shared limit ([`Config::shared_type_concurrency`],
//! key `type:<type name>`) or for which [`Config::shared_limit`] names one, the processor takes a
//! slot of the limit's key from the broker ([`ConcurrencySlots`]), held until the task's lease
//! expires. The heartbeater renews the holds of running tasks with their leases, and the
//! processor gives a slot back when the task's outcome is written. A worker that dies holding
//! slots holds them until their leases would have run out: the same bound as its tasks' leases.
//!
//! A task refused a slot (or whose slot the broker could not grant) is deferred as a task over a
//! per-server type limit is (see [`crate::limits`]): back through the retry set, due a second
//! later, charged nothing.
//!
//! [`Config::shared_type_concurrency`]: crate::Config::shared_type_concurrency
//! [`Config::shared_limit`]: crate::Config::shared_limit

use crate::config::SharedLimitFn;
use crate::limits::TYPE_LIMIT_DEFER;
use asynq_core::broker::{Dequeued, Outcome};
use asynq_core::slots::{ConcurrencySlots, SharedLimit, SlotKey};
use asynq_core::{Task, TaskId};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Whether a task may start, as far as shared limits go.
pub(crate) enum SharedAdmission {
    /// It counts against no shared limit.
    Unlimited,
    /// It holds a slot of this key, to give back when it finishes.
    Admitted(SlotKey),
    /// Every slot is held (or none could be taken): defer it with this outcome.
    Deferred(Outcome),
}

/// The shared limits of one server and the slots its tasks hold.
pub(crate) struct SharedLimits {
    slots: Arc<dyn ConcurrencySlots>,
    by_type: BTreeMap<String, SharedLimit>,
    derive: Option<SharedLimitFn>,
    /// The slot each task holds, for the heartbeater to renew.
    held: Mutex<HashMap<TaskId, SlotKey>>,
}

impl SharedLimits {
    /// The limits of `by_type` (type name to limit, checked) and `derive`, kept in `slots`.
    pub(crate) fn new(
        slots: Arc<dyn ConcurrencySlots>,
        by_type: BTreeMap<String, SharedLimit>,
        derive: Option<SharedLimitFn>,
    ) -> Self {
        Self { slots, by_type, derive, held: Mutex::default() }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, SlotKey>> {
        self.held.lock().expect("held slots lock poisoned")
    }

    /// The limit `task` counts against: its type's, else the one `derive` names.
    fn limit_for(&self, task: &Dequeued) -> Option<SharedLimit> {
        if let Some(limit) = self.by_type.get(&task.message.type_name) {
            return Some(limit.clone());
        }
        let derive = self.derive.as_ref()?;
        derive(&Task::from_message(&task.message))
    }

    /// Takes a slot for `task`, dequeued at `now`, held until its lease expires.
    pub(crate) async fn admit(&self, task: &Dequeued, now: SystemTime) -> SharedAdmission {
        let Some(limit) = self.limit_for(task) else { return SharedAdmission::Unlimited };
        let id = &task.message.id;
        let reason = match self.slots.take_slot(&limit, id, now, task.lease_expiry).await {
            Ok(true) => {
                self.held().insert(id.clone(), limit.key().clone());
                return SharedAdmission::Admitted(limit.key().clone());
            }
            Ok(false) => format!(
                "deferred: at most {} tasks of {:?} run at once across servers",
                limit.limit(),
                limit.key().as_str()
            ),
            Err(e) => format!("deferred: no slot of {:?} could be taken: {e}", limit.key().as_str()),
        };
        SharedAdmission::Deferred(Outcome::Retry { retry_at: now + TYPE_LIMIT_DEFER, error: reason, is_failure: false })
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
