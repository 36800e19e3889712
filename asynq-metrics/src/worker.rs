//! Worker metrics: what one server's workers did, which Go asynq does not export. A
//! [`TaskObserver`] to install in [`asynq_server::Config::task_observers`].

use crate::sharded::logical_queue_of;
use asynq_core::{QueueName, StoredTask};
use asynq_server::{AttemptOutcome, AttemptReport, TaskObserver};
use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

/// The default upper bounds of the duration histogram's buckets, in seconds: from 5 ms to an
/// hour, for handlers from a cache write to a report build.
pub const DEFAULT_DURATION_BUCKETS: [f64; 18] =
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0];

/// The labels of a task's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    queue: String,
    #[prometheus(flatten)]
    logical_queue: LogicalQueue,
    task_type: String,
}

/// The labels of a finished attempt's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    queue: String,
    #[prometheus(flatten)]
    logical_queue: LogicalQueue,
    task_type: String,
    outcome: &'static str,
}

/// The label `logical_queue` of a series of a sharded queue's shard or plain queue; no label
/// for another queue's.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct LogicalQueue(Option<String>);

impl EncodeLabelSet for LogicalQueue {
    fn encode(&self, encoder: &mut LabelSetEncoder<'_>) -> Result<(), fmt::Error> {
        match &self.0 {
            Some(logical) => [("logical_queue", logical.as_str())].encode(encoder),
            None => Ok(()),
        }
    }
}

/// Makes each label set's histogram with the configured buckets.
#[derive(Clone, Debug)]
struct Buckets(Arc<[f64]>);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(self.0.iter().copied())
    }
}

/// Metrics of the tasks one server runs, labelled by `queue` and `task_type`, under the
/// `asynq_worker` prefix. The series of a shard of a sharded queue the server serves
/// ([`asynq_server::Config::sharded_queues`]), and those of the plain queue of its logical name,
/// also carry `logical_queue`, as the queue metrics do, so `sum by (logical_queue)` shows the
/// logical queue as one; other queues keep the labels alone.
///
/// | series | type | meaning |
/// | --- | --- | --- |
/// | `asynq_worker_task_duration_seconds` | histogram | how long handlers ran, every attempt |
/// | `asynq_worker_tasks_in_flight` | gauge | handlers running now |
/// | `asynq_worker_tasks_processed_total` | counter | attempts that ran to an end: succeeded or failed (Go's "processed"; not a park) |
/// | `asynq_worker_tasks_failed_total` | counter | attempts that failed and count as failures (Go's "failed") |
/// | `asynq_worker_tasks_finished_total` | counter, also by `outcome` | every attempt by outcome: `success`, `retry`, `archived`, `revoked`, `requeued`, `lease_lost`, `parked` |
/// | `asynq_worker_task_panics_total` | counter | attempts whose handler panicked |
/// | `asynq_worker_lease_expiries_total` | counter | tasks this server's recoverer found with an expired lease |
///
/// Retries are `asynq_worker_tasks_finished_total{outcome="retry"}`; durable sleeps and signal
/// waits that freed their worker are `{outcome="parked"}`.
///
/// ```
/// use asynq_metrics::WorkerMetrics;
/// use asynq_server::Config;
/// use prometheus_client::registry::Registry;
/// use std::sync::Arc;
///
/// let metrics = WorkerMetrics::new();
/// let mut registry = Registry::default();
/// metrics.register(&mut registry);
/// let config = Config { task_observers: vec![Arc::new(metrics)], ..Config::default() };
/// # let _ = config;
/// ```
///
/// Cheap to clone; clones share the metrics. Installed in several servers, it labels the
/// sharded queues of any of them.
#[derive(Clone)]
pub struct WorkerMetrics {
    /// The logical names of the sharded queues the servers it observes serve.
    sharded: Arc<RwLock<BTreeSet<String>>>,
    duration: Family<TaskLabels, Histogram, Buckets>,
    in_flight: Family<TaskLabels, Gauge>,
    processed: Family<TaskLabels, Counter>,
    failed: Family<TaskLabels, Counter>,
    finished: Family<OutcomeLabels, Counter>,
    panics: Family<TaskLabels, Counter>,
    lease_expiries: Family<TaskLabels, Counter>,
}

impl WorkerMetrics {
    /// Worker metrics with the [`DEFAULT_DURATION_BUCKETS`].
    pub fn new() -> Self {
        Self::with_duration_buckets(DEFAULT_DURATION_BUCKETS)
    }

    /// Worker metrics whose duration histogram has buckets with these upper bounds, in seconds
    /// (the `+Inf` bucket is always there).
    pub fn with_duration_buckets(buckets: impl IntoIterator<Item = f64>) -> Self {
        Self {
            sharded: Arc::default(),
            duration: Family::new_with_constructor(Buckets(buckets.into_iter().collect())),
            in_flight: Family::default(),
            processed: Family::default(),
            failed: Family::default(),
            finished: Family::default(),
            panics: Family::default(),
            lease_expiries: Family::default(),
        }
    }

    /// Adds the worker metrics to `registry`, under the `asynq_worker` prefix (prometheus-client
    /// ends each help text with a period).
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("asynq_worker");
        r.register("task_duration_seconds", "How long task handlers ran, in seconds", self.duration.clone());
        r.register("tasks_in_flight", "Number of task handlers running now", self.in_flight.clone());
        r.register(
            "tasks_processed",
            "Number of task attempts that ran to an end, successfully or not",
            self.processed.clone(),
        );
        r.register("tasks_failed", "Number of task attempts that failed and count as failures", self.failed.clone());
        r.register("tasks_finished", "Number of task attempts, by how they ended", self.finished.clone());
        r.register("task_panics", "Number of task attempts whose handler panicked", self.panics.clone());
        r.register(
            "lease_expiries",
            "Number of tasks the recoverer found with an expired lease (their worker died or lost the broker)",
            self.lease_expiries.clone(),
        );
    }
}

impl Default for WorkerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerMetrics {
    /// The labels of `task`'s series.
    fn labels(&self, task: &StoredTask) -> TaskLabels {
        let sharded = self.sharded.read().unwrap_or_else(PoisonError::into_inner);
        let logical = logical_queue_of(&task.queue, |name| sharded.contains(name)).map(str::to_owned);
        TaskLabels {
            queue: task.queue.to_string(),
            logical_queue: LogicalQueue(logical),
            task_type: task.type_name.clone(),
        }
    }
}

impl TaskObserver for WorkerMetrics {
    fn serving_sharded_queues(&self, logical: &[QueueName]) {
        if !logical.is_empty() {
            let mut sharded = self.sharded.write().unwrap_or_else(PoisonError::into_inner);
            sharded.extend(logical.iter().map(QueueName::to_string));
        }
    }

    fn task_started(&self, task: &StoredTask, _span: &tracing::Span) {
        self.in_flight.get_or_create(&self.labels(task)).inc();
    }

    fn task_finished(&self, task: &StoredTask, report: &AttemptReport<'_>) {
        let labels = self.labels(task);
        self.in_flight.get_or_create(&labels).dec();
        self.duration.get_or_create(&labels).observe(report.duration.as_secs_f64());
        let ran_to_an_end =
            !matches!(report.outcome, AttemptOutcome::Requeued | AttemptOutcome::LeaseLost | AttemptOutcome::Parked);
        if ran_to_an_end {
            self.processed.get_or_create(&labels).inc();
        }
        if report.is_failure {
            self.failed.get_or_create(&labels).inc();
        }
        if report.panicked() {
            self.panics.get_or_create(&labels).inc();
        }
        let TaskLabels { queue, logical_queue, task_type } = labels;
        let outcome = OutcomeLabels { queue, logical_queue, task_type, outcome: report.outcome.as_str() };
        self.finished.get_or_create(&outcome).inc();
    }

    fn lease_expired(&self, task: &StoredTask) {
        self.lease_expiries.get_or_create(&self.labels(task)).inc();
    }
}

impl fmt::Debug for WorkerMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerMetrics").finish_non_exhaustive()
    }
}
