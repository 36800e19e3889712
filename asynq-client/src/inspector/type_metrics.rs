//! The per task type metrics servers record ([`asynq_core::task_metrics`]), read as one series
//! per queue and task type.

use super::Inspector;
use asynq_core::task_metrics::{MAX_METRIC_BUCKETS_READ, MetricsResolution, TypeCounts};
use asynq_core::{Error, QueueName, Result};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The per task type metrics of every queue over some buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TypeMetricsReport {
    /// The width of each bucket.
    pub resolution: MetricsResolution,
    /// When each bucket starts, oldest first; the last one holds the report's end.
    pub buckets: Vec<SystemTime>,
    /// One series per queue and task type that ran in those buckets, by queue, then type.
    pub types: Vec<TypeSeries>,
}

/// The attempts of one task type of one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TypeSeries {
    /// The queue.
    pub queue: QueueName,
    /// The task type; [`OTHER_TYPES`](asynq_core::task_metrics::OTHER_TYPES) for the types a
    /// full bucket had no room for.
    pub type_name: String,
    /// Every bucket's counts added up.
    pub total: TypeCounts,
    /// Each bucket's counts, as [`TypeMetricsReport::buckets`] lists them (zero where none ran).
    pub points: Vec<TypeCounts>,
}

impl Inspector {
    /// The per task type metrics of every queue over the `buckets` buckets of `resolution`
    /// ending with the one holding `to`: how many attempts of each task type ran, failed and
    /// how long they took, as our servers recorded them (tasks run by Go servers are not in
    /// the record).
    ///
    /// Errors: [`Error::InvalidArgument`] when `buckets` is 0 or more than
    /// [`MAX_METRIC_BUCKETS_READ`]; [`Error::Unsupported`] from a broker that keeps no such
    /// record.
    pub async fn type_metrics(
        &self,
        resolution: MetricsResolution,
        buckets: usize,
        to: SystemTime,
    ) -> Result<TypeMetricsReport> {
        if buckets == 0 || buckets as u64 > MAX_METRIC_BUCKETS_READ {
            return Err(Error::invalid("buckets", format!("must be 1 to {MAX_METRIC_BUCKETS_READ}")));
        }
        let metrics =
            self.broker.clone().as_task_metrics().ok_or(Error::Unsupported { capability: "per task type metrics" })?;
        let last = resolution.bucket_of(to);
        let first = last.saturating_sub((buckets as u64 - 1) * resolution.seconds());
        let from = UNIX_EPOCH + Duration::from_secs(first);
        let starts = resolution.buckets_between(from, to)?;
        let mut series: BTreeMap<(QueueName, String), TypeSeries> = BTreeMap::new();
        for queue in self.broker.queues().await? {
            for bucket in metrics.task_metrics(&queue, resolution, from, to).await? {
                let Ok(index) = starts.binary_search(&bucket.start) else { continue };
                for (type_name, counts) in bucket.types {
                    let entry = series.entry((queue.clone(), type_name.clone())).or_insert_with(|| TypeSeries {
                        queue: queue.clone(),
                        type_name,
                        total: TypeCounts::default(),
                        points: vec![TypeCounts::default(); starts.len()],
                    });
                    entry.total.add(&counts);
                    entry.points[index].add(&counts);
                }
            }
        }
        Ok(TypeMetricsReport {
            resolution,
            buckets: starts.into_iter().map(|s| UNIX_EPOCH + Duration::from_secs(s)).collect(),
            types: series.into_values().collect(),
        })
    }
}
