//! A health checker pings the broker periodically and reports the result to the user's
//! function.

use crate::policy::HealthCheckFn;
use asynq_core::broker::Health;
use asynq_runtime::{FirstRun, run_every};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The health checker's settings.
#[derive(Clone)]
pub(crate) struct HealthCheckConfig {
    /// How often to check.
    pub interval: Duration,
    /// Told the result of every check.
    pub report: HealthCheckFn,
}

impl fmt::Debug for HealthCheckConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthCheckConfig").field("interval", &self.interval).finish_non_exhaustive()
    }
}

/// Pings the broker and reports.
#[derive(Clone)]
pub(crate) struct HealthChecker {
    broker: Arc<dyn Health>,
    config: HealthCheckConfig,
}

impl HealthChecker {
    /// A health checker over `broker`.
    pub(crate) fn new(broker: Arc<dyn Health>, config: HealthCheckConfig) -> Self {
        Self { broker, config }
    }

    /// Pings once and reports the result; returns it too.
    pub(crate) async fn tick(&self) -> asynq_core::Result<()> {
        let result = self.broker.ping().await;
        (self.config.report)(result.as_ref().map(|_| ()));
        result
    }

    /// Checks every interval (the first time after one interval) until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            run_every(self.config.interval, FirstRun::AfterInterval, &stop, || async {
                let _ = self.tick().await;
            })
            .await;
        })
    }
}

impl fmt::Debug for HealthChecker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthChecker").field("config", &self.config).finish_non_exhaustive()
    }
}
