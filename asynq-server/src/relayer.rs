//! A relayer is the one owner of workflow relaying in a server's process: it relays at once
//! the queues where parents settled through its broker left dependents to tell
//! ([`Workflows::relay_wanted`], [`Workflows::relay_settled`]), going round again while more
//! settle, and once a second relays every queue the server serves ([`Workflows::relay`]), which
//! picks up after a process that died in between and notices the workflow tasks a Go server or
//! an operator settled, which tell nobody. Shutdown stops it after a last relay of what the
//! server's final settles left; the broker relays nothing by itself, so a process without a
//! server leaves its settles' dependents to the periodic relay of a server.

use crate::served::ServedQueues;
use asynq_core::broker::Workflows;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

/// How often a server relays its queues: the bound on how long a workflow task settled by a Go
/// server or an operator keeps the tasks waiting for it waiting (plus the relay's own work).
pub const WORKFLOW_RELAY_INTERVAL: Duration = Duration::from_secs(1);

/// Relays the outcomes of settled workflow tasks.
#[derive(Clone)]
pub(crate) struct Relayer {
    workflows: Arc<dyn Workflows>,
    queues: ServedQueues,
}

impl Relayer {
    /// A relayer of `queues` over `workflows`.
    pub(crate) fn new(workflows: Arc<dyn Workflows>, queues: ServedQueues) -> Self {
        Self { workflows, queues }
    }

    /// Relays once; returns how many dependents were told.
    pub(crate) async fn tick(&self) -> asynq_core::Result<usize> {
        self.workflows.relay(&self.queues.now().names).await
    }

    /// Relays what settles through the broker left, now.
    async fn relay_settled(&self) {
        if let Err(e) = self.workflows.relay_settled().await {
            tracing::error!(error = %e, "could not relay the outcomes of settled workflow tasks");
        }
    }

    /// Relays when settles ask for it, and every [`WORKFLOW_RELAY_INTERVAL`], until `stop` is
    /// cancelled; a relay in progress then is finished, and what settled before is relayed.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let start = tokio::time::Instant::now() + WORKFLOW_RELAY_INTERVAL;
            let mut ticks = tokio::time::interval_at(start, WORKFLOW_RELAY_INTERVAL);
            ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                // The periodic pass before the wanted ones, so that a stream of settles cannot
                // starve it.
                tokio::select! {
                    biased;
                    _ = stop.cancelled() => break,
                    _ = ticks.tick() => {
                        if let Err(e) = self.tick().await {
                            tracing::error!(error = %e, "could not relay the outcomes of settled workflow tasks");
                        }
                    }
                    () = self.workflows.relay_wanted() => self.relay_settled().await,
                }
            }
            self.relay_settled().await;
        })
    }
}

impl fmt::Debug for Relayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relayer").field("queues", &self.queues).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use asynq_core::QueueName;
    use asynq_core::broker::{Capabilities, Page};
    use asynq_core::queue::QueuePriorities;
    use asynq_core::workflow::{
        CancelMark, ParentOutcome, ParentResult, TaskRef, WorkflowCancellation, WorkflowNode, WorkflowPlan,
        WorkflowSummary,
    };
    use asynq_core::{Error, Result, WorkflowId};
    use std::sync::Mutex;
    use tokio::sync::Notify;
    use tokio::time::Instant;

    /// A backend whose settles ask for a relay when the test says so, logging when each relay
    /// ran (paused time) and which.
    #[derive(Default)]
    struct Recorded {
        wanted: Mutex<usize>,
        wake: Notify,
        relays: Mutex<Vec<(Instant, &'static str)>>,
    }

    impl Recorded {
        /// As a settle that leaves outbox entries does.
        fn settle(&self) {
            *self.wanted.lock().unwrap() += 1;
            self.wake.notify_one();
        }

        fn relays(&self) -> Vec<(Instant, &'static str)> {
            self.relays.lock().unwrap().clone()
        }
    }

    impl Capabilities for Recorded {}

    #[async_trait]
    impl Workflows for Recorded {
        async fn store_workflow(&self, _: &WorkflowPlan) -> Result<()> {
            Ok(())
        }
        async fn list_workflows(&self, _: Page) -> Result<Vec<WorkflowSummary>> {
            Ok(Vec::new())
        }
        async fn count_workflows(&self) -> Result<usize> {
            Ok(0)
        }
        async fn workflow_tasks(&self, id: &WorkflowId) -> Result<Vec<WorkflowNode>> {
            Err(Error::WorkflowNotFound { id: id.clone() })
        }
        async fn cancel_waiting(&self, _: &TaskRef) -> Result<bool> {
            Ok(false)
        }
        async fn mark_cancelled(&self, id: &WorkflowId) -> Result<CancelMark> {
            Err(Error::WorkflowNotFound { id: id.clone() })
        }
        async fn record_cancellation(&self, _: &WorkflowId, _: WorkflowCancellation) -> Result<()> {
            Ok(())
        }
        async fn is_cancelled(&self, _: &WorkflowId) -> Result<bool> {
            Ok(false)
        }
        async fn parent_results(&self, _: &TaskRef) -> Result<Vec<ParentResult>> {
            Ok(Vec::new())
        }
        async fn settled_outcomes(&self, tasks: &[TaskRef]) -> Result<Vec<ParentOutcome>> {
            Ok(tasks.iter().map(|_| ParentOutcome::Unknown).collect())
        }
        async fn relay(&self, queues: &[QueueName]) -> Result<usize> {
            assert_eq!(queues, [QueueName::from_static("q")], "the periodic pass relays the served queues");
            self.relays.lock().unwrap().push((tokio::time::Instant::now(), "periodic"));
            Ok(0)
        }
        async fn relay_wanted(&self) {
            loop {
                let woken = self.wake.notified();
                if *self.wanted.lock().unwrap() > 0 {
                    return;
                }
                woken.await;
            }
        }
        async fn relay_settled(&self) -> Result<usize> {
            let taken = std::mem::take(&mut *self.wanted.lock().unwrap());
            // A relay takes a while, during which more may settle.
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.relays.lock().unwrap().push((tokio::time::Instant::now(), "settled"));
            Ok(taken)
        }
    }

    fn relayer(backend: &Arc<Recorded>) -> Relayer {
        let queues = QueuePriorities::from_weights([(QueueName::from_static("q"), 1)], false);
        Relayer::new(backend.clone(), ServedQueues::fixed(queues))
    }

    #[tokio::test(start_paused = true)]
    async fn a_settle_is_relayed_at_once_and_the_periodic_pass_goes_on() {
        let backend = Arc::new(Recorded::default());
        let start = tokio::time::Instant::now();
        let stop = CancellationToken::new();
        let task = relayer(&backend).spawn(stop.clone());
        tokio::time::sleep(Duration::from_millis(300)).await;
        backend.settle();
        // Settles during the relay: relayed in one more round, right after.
        tokio::time::sleep(Duration::from_millis(2)).await;
        backend.settle();
        backend.settle();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let ms = |relays: Vec<(Instant, &'static str)>| -> Vec<(u128, &'static str)> {
            relays.into_iter().map(|(at, what)| ((at - start).as_millis(), what)).collect()
        };
        assert_eq!(ms(backend.relays()), [(305, "settled"), (310, "settled")], "relayed at once, not at the tick");
        tokio::time::sleep(Duration::from_millis(1_700)).await;
        assert_eq!(
            ms(backend.relays())[2..],
            [(1_000, "periodic"), (2_000, "periodic")],
            "the periodic pass still runs each second"
        );
        backend.settle();
        stop.cancel();
        task.await.unwrap();
        let relays = backend.relays();
        assert_eq!(relays.last().map(|(_, what)| *what), Some("settled"), "what settled before the stop is relayed");
        let stopped = relays.len();
        backend.settle();
        tokio::time::sleep(WORKFLOW_RELAY_INTERVAL * 3).await;
        assert_eq!(backend.relays().len(), stopped, "a stopped relayer relays nothing");
    }
}
