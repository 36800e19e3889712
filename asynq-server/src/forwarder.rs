//! A forwarder moves scheduled and retry tasks whose time has come to pending.

use crate::served::ServedQueues;
use asynq_core::broker::Forward;
use asynq_runtime::{FirstRun, run_every};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The forwarder's settings.
#[derive(Debug, Clone)]
pub(crate) struct ForwarderConfig {
    /// The queues to forward.
    pub queues: ServedQueues,
    /// How often to look for due tasks.
    pub interval: Duration,
}

/// Moves due scheduled and retry tasks to pending.
#[derive(Clone)]
pub(crate) struct Forwarder {
    broker: Arc<dyn Forward>,
    config: ForwarderConfig,
}

impl Forwarder {
    /// A forwarder over `broker`.
    pub(crate) fn new(broker: Arc<dyn Forward>, config: ForwarderConfig) -> Self {
        Self { broker, config }
    }

    /// Forwards every due task once; returns how many moved.
    pub(crate) async fn tick(&self) -> asynq_core::Result<usize> {
        self.broker.forward_ready(&self.config.queues.now().names).await
    }

    /// Forwards every interval (the first time after one interval) until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            run_every(self.config.interval, FirstRun::AfterInterval, &stop, || async {
                if let Err(e) = self.tick().await {
                    tracing::error!(error = %e, "could not forward scheduled and retry tasks");
                }
            })
            .await;
        })
    }
}

impl fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Forwarder").field("config", &self.config).finish_non_exhaustive()
    }
}
