//! A janitor deletes completed tasks whose retention period has run out.

use crate::served::ServedQueues;
use asynq_core::broker::Janitor as JanitorBroker;
use asynq_runtime::{FirstRun, run_every};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The janitor's settings.
#[derive(Debug, Clone)]
pub(crate) struct JanitorConfig {
    /// The queues to clean.
    pub queues: ServedQueues,
    /// How often to clean.
    pub interval: Duration,
    /// How many tasks one broker call deletes.
    pub batch_size: usize,
}

/// Deletes expired completed tasks.
#[derive(Clone)]
pub(crate) struct Janitor {
    broker: Arc<dyn JanitorBroker>,
    config: JanitorConfig,
}

impl Janitor {
    /// A janitor over `broker`.
    pub(crate) fn new(broker: Arc<dyn JanitorBroker>, config: JanitorConfig) -> Self {
        Self { broker, config }
    }

    /// Deletes every expired completed task of every queue, a batch at a time; returns how
    /// many were deleted.
    pub(crate) async fn tick(&self) -> asynq_core::Result<usize> {
        self.broker.delete_all_expired_completed(&self.config.queues.now().names, self.config.batch_size).await
    }

    /// Cleans every interval (the first time after one interval) until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            run_every(self.config.interval, FirstRun::AfterInterval, &stop, || async {
                if let Err(e) = self.tick().await {
                    tracing::error!(error = %e, "could not delete expired completed tasks");
                }
            })
            .await;
        })
    }
}

impl fmt::Debug for Janitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Janitor").field("config", &self.config).finish_non_exhaustive()
    }
}
