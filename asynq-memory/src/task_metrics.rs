//! Per task type metrics for [`MemoryBroker`]: per queue and resolution, the buckets by start,
//! each holding the counts of the types it kept. A write drops the buckets of its queue that
//! outlived [`MetricsResolution::kept`] since their last write, as Redis expires them.

use super::*;
use asynq_core::broker::TaskMetrics;
use asynq_core::task_metrics::{
    MetricsResolution, TaskMetricsBucket, TaskMetricsSample, TypeCounts, recorded_type_name, validate_samples,
};
use std::collections::BTreeMap;

/// One bucket and when it was last written.
#[derive(Debug, Default)]
pub(crate) struct Bucket {
    types: BTreeMap<String, TypeCounts>,
    written: Option<SystemTime>,
}

/// Per queue and resolution, the buckets by start (Unix seconds).
pub(crate) type MetricBuckets = HashMap<(QueueName, MetricsResolution), BTreeMap<u64, Bucket>>;

#[async_trait]
impl TaskMetrics for MemoryBroker {
    async fn record_task_metrics(&self, samples: &[TaskMetricsSample]) -> Result<()> {
        validate_samples(samples)?;
        let now = self.now();
        let mut state = self.state();
        for sample in samples {
            for resolution in MetricsResolution::ALL {
                let buckets = state.task_metrics.entry((sample.queue.clone(), resolution)).or_default();
                buckets.retain(|_, bucket| bucket.written.is_some_and(|at| at + resolution.kept() > now));
                let bucket = buckets.entry(resolution.bucket_of(sample.at)).or_default();
                let name = recorded_type_name(&bucket.types, &sample.type_name).to_owned();
                bucket.types.entry(name).or_default().add(&sample.counts);
                bucket.written = Some(now);
            }
        }
        Ok(())
    }

    async fn task_metrics(
        &self,
        queue: &QueueName,
        resolution: MetricsResolution,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<TaskMetricsBucket>> {
        let starts = resolution.buckets_between(from, to)?;
        let now = self.now();
        let state = self.state();
        let Some(buckets) = state.task_metrics.get(&(queue.clone(), resolution)) else { return Ok(Vec::new()) };
        Ok(starts
            .into_iter()
            .filter_map(|start| {
                let bucket = buckets.get(&start)?;
                let live = bucket.written.is_some_and(|at| at + resolution.kept() > now);
                (live && !bucket.types.is_empty()).then(|| TaskMetricsBucket { start, types: bucket.types.clone() })
            })
            .collect())
    }
}
