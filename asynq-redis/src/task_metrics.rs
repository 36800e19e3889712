//! Per task type metrics for [`RedisBroker`]: one hash per queue, resolution and bucket,
//! `<ns>:{<q>}:metrics:<minute|hour>:<start>`, in the queue's slot. A write is one
//! `record_task_metrics.lua` call per bucket it touches (the type cap is applied there); a read
//! is one pipeline of `HGETALL`s of one queue's buckets. Ours only: Go asynq neither writes nor
//! reads any of it, so tasks Go servers run are not in it.

use crate::RedisBroker;
use crate::error::broker_error;
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::TaskMetrics;
use asynq_core::task_metrics::{
    MAX_METRIC_TYPE_LEN, MAX_METRIC_TYPES, MetricsResolution, TaskMetricsBucket, TaskMetricsSample, TypeCounts,
    validate_samples,
};
use asynq_core::{QueueName, Result};
use redis::Script;
use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::SystemTime;

static RECORD: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/record_task_metrics.lua")));

#[async_trait]
impl TaskMetrics for RedisBroker {
    async fn record_task_metrics(&self, samples: &[TaskMetricsSample]) -> Result<()> {
        validate_samples(samples)?;
        // Per bucket, its samples merged by type, in a stable order.
        let mut buckets: BTreeMap<(String, MetricsResolution, u64), BTreeMap<&str, TypeCounts>> = BTreeMap::new();
        for sample in samples {
            for resolution in MetricsResolution::ALL {
                let bucket = (sample.queue.as_str().to_owned(), resolution, resolution.bucket_of(sample.at));
                buckets.entry(bucket).or_default().entry(&sample.type_name).or_default().add(&sample.counts);
            }
        }
        for ((queue, resolution, start), types) in buckets {
            let mut call = ScriptCall::new(&RECORD);
            call.key(self.namespace().queue(&queue).task_metrics(resolution.as_str(), start));
            call.arg(resolution.kept().as_secs()).arg(MAX_METRIC_TYPES).arg(MAX_METRIC_TYPE_LEN);
            for (name, counts) in types {
                call.arg(name).arg(counts.runs).arg(counts.failed).arg(counts.total_ms).arg(counts.max_ms);
            }
            let _: i64 = call.run(&mut self.conn(), "record task metrics").await?;
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
        let keys = self.namespace().queue(queue.as_str());
        let mut pipe = redis::pipe();
        for start in &starts {
            pipe.hgetall(keys.task_metrics(resolution.as_str(), *start));
        }
        let hashes: Vec<Vec<(Vec<u8>, Vec<u8>)>> =
            pipe.query_async(&mut self.conn()).await.map_err(|e| broker_error("read task metrics", e))?;
        Ok(starts
            .into_iter()
            .zip(hashes)
            .map(|(start, fields)| TaskMetricsBucket { start, types: read_bucket(fields) })
            .filter(|bucket| !bucket.types.is_empty())
            .collect())
    }
}

/// The counts of a bucket's hash; fields of no known shape (or not numbers) are passed over.
fn read_bucket(fields: Vec<(Vec<u8>, Vec<u8>)>) -> BTreeMap<String, TypeCounts> {
    let mut types: BTreeMap<String, TypeCounts> = BTreeMap::new();
    for (field, value) in fields {
        let field = String::from_utf8_lossy(&field);
        let Some((name, which)) = field.rsplit_once(':') else { continue };
        let Some(value) = std::str::from_utf8(&value).ok().and_then(|v| v.parse::<i64>().ok()) else { continue };
        let value = u64::try_from(value).unwrap_or(0);
        let counts = types.entry(name.to_owned()).or_default();
        match which {
            "runs" => counts.runs = value,
            "failed" => counts.failed = value,
            "ms" => counts.total_ms = value,
            "max" => counts.max_ms = value,
            _ => {}
        }
    }
    types.retain(|_, counts| counts.runs > 0);
    types
}
