//! The capability to keep per task type metrics.

#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::task_metrics::{MetricsResolution, TaskMetricsBucket, TaskMetricsSample};
use crate::{QueueName, Result};
use async_trait::async_trait;
use std::time::SystemTime;

/// The record of per task type metrics. Written by servers, read by operators' tools.
#[async_trait]
pub trait TaskMetrics: Send + Sync {
    /// Adds each sample's counts to the minute bucket and to the hour bucket holding its
    /// instant, in its queue (a type a full bucket has no room for counts under
    /// [`OTHER_TYPES`](crate::task_metrics::OTHER_TYPES)), and keeps each bucket written for [`MetricsResolution::kept`].
    ///
    /// Errors: [`Error::InvalidArgument`] from [`validate_samples`](crate::task_metrics::validate_samples) (nothing is written).
    async fn record_task_metrics(&self, samples: &[TaskMetricsSample]) -> Result<()>;

    /// The buckets of `queue` at `resolution` from the one holding `from` to the one holding
    /// `to`, oldest first; buckets without counts (never written, or expired) are left out.
    ///
    /// Errors: [`Error::InvalidArgument`] from [`MetricsResolution::buckets_between`].
    async fn task_metrics(
        &self,
        queue: &QueueName,
        resolution: MetricsResolution,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<TaskMetricsBucket>>;
}
