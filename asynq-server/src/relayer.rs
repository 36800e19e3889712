//! A relayer finishes, once a second, what settling workflow tasks left to do (see
//! [`Workflows::relay`]): the broker relays at once after settling them, so this pass picks up
//! after a process that died in between, and notices the workflow tasks a Go server or an
//! operator settled, which tell nobody.

use crate::served::ServedQueues;
use asynq_core::workflow::Workflows;
use asynq_runtime::{FirstRun, run_every};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
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

    /// Relays every [`WORKFLOW_RELAY_INTERVAL`] until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            run_every(WORKFLOW_RELAY_INTERVAL, FirstRun::AfterInterval, &stop, || async {
                if let Err(e) = self.tick().await {
                    tracing::error!(error = %e, "could not relay the outcomes of settled workflow tasks");
                }
            })
            .await;
        })
    }
}

impl fmt::Debug for Relayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relayer").field("queues", &self.queues).finish_non_exhaustive()
    }
}
