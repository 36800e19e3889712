//! A recoverer finds active tasks whose lease expired (their worker died or lost the broker)
//! and sends them to retry, or to the archive when they are out of retries; a task no handler
//! started (a lost dequeue reply, a task taken ahead by a worker that died) goes back to
//! pending instead, charged nothing, and so does a started one the first
//! [`FREE_STALLS`](asynq_core::FREE_STALLS) times its lease expires. Given the broker's
//! [`Aggregate`] role, it also puts the tasks of stale aggregation sets (whose aggregator died)
//! back in their groups, as Go's recoverer does.

use crate::handler::HandlerError;
use crate::observe::Observers;
use crate::policy::FailurePolicy;
use crate::served::ServedQueues;
use asynq_core::broker::{Aggregate, ExpiredLease, LeaseStage, Outcome, Recover};
use asynq_core::{Clock, Error, FREE_STALLS, LEASE_DURATION};
use asynq_runtime::{FirstRun, run_every};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The recoverer's settings.
#[derive(Debug, Clone)]
pub(crate) struct RecovererConfig {
    /// The queues to watch.
    pub queues: ServedQueues,
    /// How often to look.
    pub interval: Duration,
    /// Retry or archive a recovered task.
    pub failure_policy: FailurePolicy,
}

/// Recovers tasks whose lease expired.
#[derive(Clone)]
pub(crate) struct Recoverer {
    recover: Arc<dyn Recover>,
    clock: Arc<dyn Clock>,
    config: RecovererConfig,
    /// Where stale aggregation sets are reclaimed, if anywhere.
    aggregate: Option<Arc<dyn Aggregate>>,
    /// Told about every recovered task.
    observers: Observers,
}

impl Recoverer {
    /// A recoverer that finds and settles tasks through `recover`.
    pub(crate) fn new(recover: Arc<dyn Recover>, clock: Arc<dyn Clock>, config: RecovererConfig) -> Self {
        Self { recover, clock, config, aggregate: None, observers: Observers::default() }
    }

    /// This recoverer, also reclaiming the stale aggregation sets of its queues through
    /// `aggregate` after each pass (see [`Aggregate::reclaim_stale_aggregation_sets`]).
    pub(crate) fn reclaiming_aggregation_sets(mut self, aggregate: Arc<dyn Aggregate>) -> Self {
        self.aggregate = Some(aggregate);
        self
    }

    /// This recoverer, telling `observers` about every task it recovers.
    pub(crate) fn observed_by(mut self, observers: Observers) -> Self {
        self.observers = observers;
        self
    }

    /// Recovers every task whose lease expired more than [`LEASE_DURATION`] ago (a grace period
    /// for a worker whose heartbeat is late): one no handler started is requeued, a started one
    /// is requeued as stalled while it has stalled fewer than [`FREE_STALLS`] times and fails
    /// its attempt after that; then reclaims stale aggregation sets if asked to;
    /// returns how many tasks were recovered.
    pub(crate) async fn tick(&self) -> asynq_core::Result<usize> {
        let now = self.clock.now();
        let cutoff = now - LEASE_DURATION;
        let served = self.config.queues.now();
        let expired = self.recover.list_lease_expired(&served.names, cutoff).await?;
        let err = HandlerError::lease_expired();
        let mut stages = Vec::with_capacity(expired.len());
        let mut items = Vec::with_capacity(expired.len());
        for ExpiredLease { message, stage, stalls } in expired {
            let outcome = match stage {
                // No handler started it: its attempt never happened, so it costs nothing.
                LeaseStage::Taken => Outcome::Requeue,
                LeaseStage::Started if stalls < FREE_STALLS => Outcome::Stalled,
                LeaseStage::Started => self.config.failure_policy.outcome(&message, &err, now),
            };
            stages.push((stage, stalls));
            items.push((message, outcome));
        }
        // One call for them all (on Redis one script call per queue), each write applied only
        // while the task's lease is still the expired one listed: another server may have
        // recovered it since, and a worker taken it again.
        let messages: Vec<_> = items.iter().map(|(message, _)| message.clone()).collect();
        let results = self.recover.recover(items, cutoff).await;
        let mut recovered = 0;
        let mut first_error = None;
        for ((message, (stage, stalls)), result) in messages.iter().zip(stages).zip(results) {
            match result {
                Ok(()) => {
                    recovered += 1;
                    match stage {
                        LeaseStage::Taken => tracing::warn!(
                            task_id = %message.id,
                            queue = %message.queue,
                            "gave back a task whose lease expired before any handler started it; it is pending again, charged nothing"
                        ),
                        LeaseStage::Started => {
                            if !self.observers.is_empty() {
                                self.observers.lease_expired(message);
                            }
                            let forgiven = stalls < FREE_STALLS;
                            tracing::warn!(task_id = %message.id, queue = %message.queue, stalls, forgiven, "recovered a started task whose lease expired");
                        }
                    }
                }
                // Another server recovered it first (and a worker may run it again now).
                Err(Error::TaskNotFound { .. }) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        if let Some(aggregate) = &self.aggregate {
            for queue in &served.names {
                let reclaimed = aggregate.reclaim_stale_aggregation_sets(queue).await?;
                if reclaimed > 0 {
                    tracing::warn!(queue = %queue, sets = reclaimed, "put the tasks of stale aggregation sets back in their groups");
                }
            }
        }
        Ok(recovered)
    }

    /// Recovers at once and then every interval until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            run_every(self.config.interval, FirstRun::Immediately, &stop, || async {
                if let Err(e) = self.tick().await {
                    tracing::error!(error = %e, "could not recover tasks with expired leases");
                }
            })
            .await;
        })
    }
}

impl fmt::Debug for Recoverer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recoverer").field("config", &self.config).finish_non_exhaustive()
    }
}
