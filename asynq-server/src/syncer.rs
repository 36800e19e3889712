//! A syncer retries the outcome writes that failed (a broker outage), until each task's lease
//! runs out; after that the task belongs to the recoverer.

use asynq_core::broker::{Outcome, Recover};
use asynq_core::{Clock, Error, StoredTask};
use asynq_runtime::{FirstRun, run_every};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The syncer's settings.
#[derive(Debug, Clone)]
pub(crate) struct SyncerConfig {
    /// How often to retry.
    pub interval: Duration,
}

struct Pending {
    message: StoredTask,
    outcome: Outcome,
    give_up_at: SystemTime,
}

/// Retries failed outcome writes. Cheap to clone; clones share the queue of writes.
#[derive(Clone)]
pub(crate) struct Syncer {
    broker: Arc<dyn Recover>,
    clock: Arc<dyn Clock>,
    config: SyncerConfig,
    pending: Arc<Mutex<Vec<Pending>>>,
}

impl Syncer {
    /// A syncer writing through `broker`.
    pub(crate) fn new(broker: Arc<dyn Recover>, clock: Arc<dyn Clock>, config: SyncerConfig) -> Self {
        Self { broker, clock, config, pending: Arc::default() }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues the write of `outcome` for `message`, to be retried until `give_up_at`, the
    /// expiry of the worker's lease on it: each retry applies only while the task still holds a
    /// lease no later than that one, so a write whose first attempt ran after all (its reply
    /// lost) never takes the task back from a worker that took it since.
    pub(crate) fn push(&self, message: StoredTask, outcome: Outcome, give_up_at: SystemTime) {
        self.queue().push(Pending { message, outcome, give_up_at });
    }

    /// The number of writes waiting to be retried.
    pub(crate) fn pending(&self) -> usize {
        self.queue().len()
    }

    /// Retries every queued write once, in one batch per lease expiry, stopping at the first
    /// batch the broker does not answer (so an outage costs one wait per tick, not one per
    /// write); returns how many succeeded. Writes whose lease ran out are dropped, and
    /// transient failures are kept for the next tick.
    pub(crate) async fn tick(&self) -> usize {
        let now = self.clock.now();
        let (due, expired): (Vec<Pending>, Vec<Pending>) =
            std::mem::take(&mut *self.queue()).into_iter().partition(|p| now <= p.give_up_at);
        for p in expired {
            tracing::warn!(task_id = %p.message.id, "lease expired before the outcome could be written; leaving the task to the recoverer");
        }
        if due.is_empty() {
            return 0;
        }
        // One call per lease expiry (whole seconds: few distinct ones in a tick).
        let mut by_lease: BTreeMap<SystemTime, Vec<Pending>> = BTreeMap::new();
        for p in due {
            by_lease.entry(p.give_up_at).or_default().push(p);
        }
        let mut written = 0;
        let mut groups = by_lease.into_iter();
        while let Some((lease_expiry, due)) = groups.next() {
            let items = due.iter().map(|p| (p.message.clone(), p.outcome.clone())).collect();
            let results = self.broker.recover(items, lease_expiry).await;
            if results.iter().all(|result| matches!(result, Err(Error::Broker(_)))) {
                // The broker is out of reach: the other writes wait for the next tick rather
                // than each waiting out the same failure now.
                self.queue().extend(due.into_iter().chain(groups.flat_map(|(_, rest)| rest)));
                break;
            }
            for (p, result) in due.into_iter().zip(results) {
                match result {
                    Ok(()) => written += 1,
                    Err(e @ Error::Broker(_)) => {
                        tracing::debug!(task_id = %p.message.id, error = %e, "outcome write failed again");
                        self.queue().push(p);
                    }
                    Err(Error::TaskNotFound { .. }) => tracing::warn!(
                        task_id = %p.message.id,
                        "dropping an outcome write: the task is no longer active under this worker's lease (an earlier attempt at the write ran, or another server recovered the task)"
                    ),
                    Err(e) => tracing::warn!(task_id = %p.message.id, error = %e, "dropping outcome write"),
                }
            }
        }
        written
    }

    /// Retries every `interval` until `stop` is cancelled, then makes one last attempt.
    pub(crate) fn spawn(&self, stop: CancellationToken) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            run_every(this.config.interval, FirstRun::AfterInterval, &stop, || async {
                this.tick().await;
            })
            .await;
            this.tick().await;
        })
    }
}

impl fmt::Debug for Syncer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Syncer").field("config", &self.config).field("pending", &self.pending()).finish()
    }
}
