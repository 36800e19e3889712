//! Per task type metrics: the server counts the attempts it runs per queue, task type and minute
//! in memory ([`TypeMetricsRecorder`], a task observer), and adds them to the broker's bounded
//! record every [`TASK_METRICS_FLUSH_INTERVAL`] ([`TypeMetricsFlusher`], a role), and once more
//! when it shuts down. Only when the broker keeps the record
//! ([`Capabilities::as_task_metrics`](asynq_core::broker::Capabilities::as_task_metrics)) and
//! [`Config::task_metrics`](crate::Config::task_metrics) is on.

use crate::observe::{AttemptOutcome, AttemptReport, TaskObserver};
use asynq_core::broker::TaskMetrics;
use asynq_core::task_metrics::{MetricsResolution, TaskMetricsSample, TypeCounts};
use asynq_core::{Clock, QueueName, StoredTask};
use asynq_runtime::{FirstRun, run_every};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often a server adds the attempts it counted to the broker's per task type metrics.
pub const TASK_METRICS_FLUSH_INTERVAL: Duration = Duration::from_secs(5);

/// The most (minute, queue, type) counts a server holds while it cannot write them; the
/// attempts of further ones are not counted until a write succeeds.
const MAX_HELD: usize = 10_000;

/// Per minute (its Unix second), queue and task type, what the attempts added up to.
type Held = HashMap<u64, HashMap<QueueName, HashMap<String, TypeCounts>>>;

/// Counts the attempts the server runs.
pub(crate) struct TypeMetricsRecorder {
    clock: Arc<dyn Clock>,
    held: Mutex<(Held, usize)>,
}

impl TypeMetricsRecorder {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self { clock, held: Mutex::new((Held::new(), 0)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Held, usize)> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds `counts` of `type_name` in `queue` during `minute`, unless too many are held.
    fn add(&self, minute: u64, queue: &QueueName, type_name: &str, counts: &TypeCounts) {
        let mut guard = self.lock();
        let (held, len) = &mut *guard;
        let types = held.entry(minute).or_default().entry(queue.clone()).or_default();
        if let Some(known) = types.get_mut(type_name) {
            known.add(counts);
        } else if *len < MAX_HELD {
            types.insert(type_name.to_owned(), *counts);
            *len += 1;
        }
    }

    /// Everything counted since the last take, as samples.
    fn take(&self) -> Vec<TaskMetricsSample> {
        let (held, _) = std::mem::take(&mut *self.lock());
        let mut samples = Vec::new();
        for (minute, queues) in held {
            for (queue, types) in queues {
                for (type_name, counts) in types {
                    let at = UNIX_EPOCH + Duration::from_secs(minute);
                    samples.push(TaskMetricsSample { queue: queue.clone(), type_name, at, counts });
                }
            }
        }
        samples
    }

    /// Holds `samples` again after a write failed.
    fn give_back(&self, samples: Vec<TaskMetricsSample>) {
        for sample in samples {
            let minute = MetricsResolution::Minute.bucket_of(sample.at);
            self.add(minute, &sample.queue, &sample.type_name, &sample.counts);
        }
    }
}

impl TaskObserver for TypeMetricsRecorder {
    fn task_finished(&self, task: &StoredTask, report: &AttemptReport<'_>) {
        // Only attempts whose handler returned with an outcome: a requeue at shutdown or a lost
        // lease has none yet, and a park is neither processed nor failed (the attempt that goes
        // on is counted). A blank type (which no client stores) could not be recorded.
        let ran = matches!(
            report.outcome,
            AttemptOutcome::Succeeded | AttemptOutcome::Retried | AttemptOutcome::Archived | AttemptOutcome::Revoked
        );
        if ran && !task.type_name.trim().is_empty() {
            let minute = MetricsResolution::Minute.bucket_of(self.clock.now());
            self.add(minute, &task.queue, &task.type_name, &TypeCounts::attempt(report.duration, report.is_failure));
        }
    }
}

impl fmt::Debug for TypeMetricsRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypeMetricsRecorder").field("held", &self.lock().1).finish_non_exhaustive()
    }
}

/// Writes what the recorder counted.
pub(crate) struct TypeMetricsFlusher {
    metrics: Arc<dyn TaskMetrics>,
    recorder: Arc<TypeMetricsRecorder>,
}

impl TypeMetricsFlusher {
    pub(crate) fn new(metrics: Arc<dyn TaskMetrics>, recorder: Arc<TypeMetricsRecorder>) -> Self {
        Self { metrics, recorder }
    }

    /// Writes what was counted; on failure holds it for the next tick.
    pub(crate) async fn tick(&self) -> asynq_core::Result<()> {
        let samples = self.recorder.take();
        if samples.is_empty() {
            return Ok(());
        }
        match self.metrics.record_task_metrics(&samples).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.recorder.give_back(samples);
                Err(e)
            }
        }
    }

    /// Writes every [`TASK_METRICS_FLUSH_INTERVAL`] until `stop` is cancelled, then once more.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let tick = || async {
                if let Err(e) = self.tick().await {
                    tracing::warn!(error = %e, "could not record per task type metrics; will try again");
                }
            };
            run_every(TASK_METRICS_FLUSH_INTERVAL, FirstRun::AfterInterval, &stop, tick).await;
            tick().await;
        })
    }
}

impl fmt::Debug for TypeMetricsFlusher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypeMetricsFlusher").field("recorder", &self.recorder).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::task_metrics::TaskMetricsBucket;
    use asynq_core::{SimulatedClock, TaskId};
    use std::time::SystemTime;

    /// Refuses the first write, then keeps what it is given.
    #[derive(Default)]
    struct Flaky {
        calls: Mutex<usize>,
        written: Mutex<Vec<TaskMetricsSample>>,
    }

    #[async_trait::async_trait]
    impl TaskMetrics for Flaky {
        async fn record_task_metrics(&self, samples: &[TaskMetricsSample]) -> asynq_core::Result<()> {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            if *calls == 1 {
                return Err(asynq_core::Error::invalid("test", "the first write fails"));
            }
            self.written.lock().unwrap().extend_from_slice(samples);
            Ok(())
        }

        async fn task_metrics(
            &self,
            _: &QueueName,
            _: MetricsResolution,
            _: SystemTime,
            _: SystemTime,
        ) -> asynq_core::Result<Vec<TaskMetricsBucket>> {
            Ok(Vec::new())
        }
    }

    fn finish(recorder: &TypeMetricsRecorder, type_name: &str, outcome: AttemptOutcome, is_failure: bool) {
        let task = StoredTask::new(TaskId::new("t").unwrap(), QueueName::default(), type_name);
        let report = AttemptReport { outcome, duration: Duration::from_millis(30), error: None, is_failure };
        recorder.task_finished(&task, &report);
    }

    #[tokio::test]
    async fn counts_are_written_once_even_when_a_write_fails() {
        let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(3_600));
        let recorder = Arc::new(TypeMetricsRecorder::new(Arc::new(clock)));
        let broker = Arc::new(Flaky::default());
        let flusher = TypeMetricsFlusher::new(broker.clone(), recorder.clone());
        finish(&recorder, "a", AttemptOutcome::Succeeded, false);
        finish(&recorder, "a", AttemptOutcome::Archived, true);
        finish(&recorder, "a", AttemptOutcome::Requeued, false);
        finish(&recorder, "a", AttemptOutcome::LeaseLost, false);
        finish(&recorder, "a", AttemptOutcome::Parked, false);
        finish(&recorder, " ", AttemptOutcome::Succeeded, false);
        assert!(flusher.tick().await.is_err(), "the first write fails and the counts are held");
        finish(&recorder, "a", AttemptOutcome::Retried, false);
        flusher.tick().await.unwrap();
        flusher.tick().await.unwrap();
        let written = broker.written.lock().unwrap().clone();
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(written[0].counts, TypeCounts { runs: 3, failed: 1, total_ms: 90, max_ms: 30 });
        assert_eq!(written[0].at, UNIX_EPOCH + Duration::from_secs(3_600));
    }

    #[test]
    fn a_server_holds_a_bounded_number_of_counts() {
        let recorder = TypeMetricsRecorder::new(Arc::new(SimulatedClock::new(UNIX_EPOCH)));
        for i in 0..MAX_HELD + 10 {
            finish(&recorder, &format!("type-{i}"), AttemptOutcome::Succeeded, false);
        }
        finish(&recorder, "type-0", AttemptOutcome::Succeeded, false);
        let samples = recorder.take();
        assert_eq!(samples.len(), MAX_HELD);
        assert_eq!(samples.iter().map(|s| s.counts.runs).sum::<u64>(), MAX_HELD as u64 + 1, "known types still add up");
        assert!(recorder.take().is_empty());
    }
}
