//! Queue metrics: Go asynq's `x/metrics` collector, read from an [`Inspector`] on each scrape.
//!
//! Names, types, help texts and labels are Go's. prometheus-client writes OpenMetrics text, in
//! which a counter's family is named without its `_total` suffix; its samples keep it, so a
//! query sees exactly Go's series names (`asynq_tasks_processed_total{queue="default"}`).

use crate::sharded::Logical;
use asynq_client::{Inspector, ServerReport};
use asynq_core::shard::ShardedQueue;
use asynq_core::{BrokerError, Error, QueueInfo};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// How long one refresh may take by default: Prometheus's default scrape timeout.
pub const DEFAULT_REFRESH_TIMEOUT: Duration = Duration::from_secs(10);

/// The metrics of every queue of a broker, as Go asynq's `QueueMetricsCollector` exports them
/// (namespace `asynq`):
///
/// | series | type | labels |
/// | --- | --- | --- |
/// | `asynq_tasks_enqueued_total` | gauge | `queue`, `state` (active, pending, scheduled, retry, archived, completed; and aggregating and waiting, ours) |
/// | `asynq_queue_size` | gauge | `queue` |
/// | `asynq_queue_latency_seconds` | gauge | `queue` |
/// | `asynq_queue_memory_usage_approx_bytes` | gauge | `queue` |
/// | `asynq_tasks_processed_total` | counter | `queue` |
/// | `asynq_tasks_failed_total` | counter | `queue` |
/// | `asynq_queue_paused_total` | gauge (1 when paused) | `queue` |
///
/// The `aggregating` state (tasks waiting in groups, counted in `asynq_queue_size`) and the
/// `waiting` state (workflow tasks waiting for their parents, left out of `asynq_queue_size` as
/// Go counts) are ours.
///
/// Then ours:
/// - `asynq_up`: 1 when the last [`refresh`](QueueMetrics::refresh) read every queue and every
///   server, 0 when it failed (the queue and server series are then left out rather than shown
///   stale);
/// - `asynq_redis_eviction_risk`: 1 when the backend's eviction policy lets it drop tasks
///   without an error when it is full (Redis `maxmemory-policy` other than `noeviction`, on any
///   master), 0 when it keeps every task (always on the memory broker); left out when the
///   backend would not say ([`Inspector::backend_info`] failed). `asynq stats` and the
///   dashboard name the policy;
/// - the live servers and their workers, as each server's heartbeat records them in the broker
///   (Go's servers too; what `asynq server ls` shows), so that an exporter running in no server
///   knows them (gauges):
///
/// | series | labels | value |
/// | --- | --- | --- |
/// | `asynq_server_info` | `server_id`, `host`, `pid`, `status` | 1 per live server |
/// | `asynq_server_start_time_seconds` | `server_id`, `host`, `pid` | when it started (Unix time) |
/// | `asynq_server_concurrency` | `server_id`, `host`, `pid` | how many tasks it runs at most |
/// | `asynq_server_active_workers` | `server_id`, `host`, `pid` | how many it was running at its last heartbeat |
/// | `asynq_active_workers` | `queue`, `task_type` | tasks running on all live servers together |
/// | `asynq_queue_servers` | `queue` | live servers in the active status serving the queue (0 for a known queue none serves) |
///
/// A sharded queue ([`asynq_core::shard`]) shows as its shards, each an ordinary queue with the
/// series above, and the plain queue of its logical name with its own tasks alone; each of these
/// series carries the label `logical_queue` (the logical name), so that
/// `sum by (logical_queue) (asynq_queue_size{logical_queue!=""})` sums each logical queue.
/// `asynq_sharded_queue_shards{logical_queue}` gives each declared one's shard count. Queues
/// of no sharded queue keep Go's labels alone.
///
/// These are named apart from `WorkerMetrics`' `asynq_worker_*` (feature `server`), which a
/// server exports about itself, so no sum adds the broker's view of a server to the server's
/// own. Every exporter of one broker serves the same values, told apart only by the labels
/// Prometheus adds (`instance`, `job`): aggregate with `max by (...)` over them, not `sum`.
///
/// The values are read on [`refresh`](QueueMetrics::refresh), which the
/// [`Exporter`](crate::Exporter) calls before each scrape; encoding the registry shows the last
/// refresh. Cheap to clone; clones share the snapshot and the broker.
///
/// An exporter that must start before its broker is reachable (a container whose Redis is not
/// up yet) starts with [`awaiting_broker`](QueueMetrics::awaiting_broker), serves `asynq_up 0`,
/// and gets its broker later through [`connect`](QueueMetrics::connect).
#[derive(Clone)]
pub struct QueueMetrics {
    /// Unset until [`connect`](QueueMetrics::connect) for metrics made by
    /// [`awaiting_broker`](QueueMetrics::awaiting_broker).
    inspector: Arc<OnceLock<Inspector>>,
    timeout: Duration,
    snapshot: Arc<Mutex<Snapshot>>,
}

/// What the last refresh read.
#[derive(Debug, Default)]
struct Snapshot {
    /// Whether it succeeded; false before the first one.
    up: bool,
    queues: Vec<QueueInfo>,
    /// The live servers and their workers.
    servers: Vec<ServerReport>,
    /// The sharded queues declared.
    sharded: Vec<ShardedQueue>,
    /// Whether the backend may evict tasks; `None` when it could not be read.
    eviction_risk: Option<bool>,
}

impl QueueMetrics {
    /// Queue metrics read through `inspector`, each refresh limited to
    /// [`DEFAULT_REFRESH_TIMEOUT`].
    pub fn new(inspector: Inspector) -> Self {
        let metrics = Self::awaiting_broker();
        metrics.connect(inspector);
        metrics
    }

    /// Queue metrics with no broker yet: every refresh fails and `asynq_up` is 0, with no queue
    /// series, until [`connect`](Self::connect) gives them one.
    pub fn awaiting_broker() -> Self {
        Self { inspector: Arc::default(), timeout: DEFAULT_REFRESH_TIMEOUT, snapshot: Arc::default() }
    }

    /// Gives these metrics (and their clones) the broker `inspector` reads; the next refresh
    /// reads through it. Returns false, and changes nothing, when they already have one.
    pub fn connect(&self, inspector: Inspector) -> bool {
        self.inspector.set(inspector).is_ok()
    }

    /// Whether they have a broker to read ([`new`](Self::new), or [`connect`](Self::connect)
    /// was called).
    pub fn has_broker(&self) -> bool {
        self.inspector.get().is_some()
    }

    /// These metrics with each refresh limited to `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Adds the queue metrics to `registry`, under the `asynq` prefix.
    pub fn register(&self, registry: &mut Registry) {
        registry.sub_registry_with_prefix("asynq").register_collector(Box::new(QueueCollector(self.snapshot.clone())));
    }

    /// Reads every queue's statistics from the broker (`queues` then each queue's own info,
    /// as Go does), the sharded queues declared, the live servers and their workers ([`Inspector::servers`]), and whether
    /// its eviction policy can drop tasks ([`Inspector::backend_info`]), and keeps them for the
    /// next encoding.
    ///
    /// Errors: the broker's error, or [`Error::Broker`] when the refresh takes longer than the
    /// timeout or there is no broker yet ([`awaiting_broker`](Self::awaiting_broker)). On error the snapshot is cleared and `asynq_up` is 0. A backend that answers
    /// for its queues but not about itself (an ACL refusing `INFO`) is no error: the eviction
    /// series is left out and the failure logged.
    pub async fn refresh(&self) -> asynq_core::Result<()> {
        let read = tokio::time::timeout(self.timeout, self.read()).await.unwrap_or_else(|_| {
            Err(Error::Broker(BrokerError::permanent(format!(
                "reading the queue statistics took longer than {:?}",
                self.timeout
            ))))
        });
        let mut snapshot = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        match read {
            Ok(Read { queues, servers, sharded, eviction_risk }) => {
                *snapshot = Snapshot { up: true, queues, servers, sharded, eviction_risk };
                Ok(())
            }
            Err(e) => {
                *snapshot = Snapshot::default();
                Err(e)
            }
        }
    }

    async fn read(&self) -> asynq_core::Result<Read> {
        let Some(inspector) = self.inspector.get() else {
            return Err(Error::Broker(BrokerError::permanent("not connected to the broker yet")));
        };
        let names = inspector.queues().await?;
        let sharded = inspector.sharded_queues().await?;
        let mut queues = Vec::with_capacity(names.len());
        for name in names {
            // Each queue alone: the plain queue of a logical name is not the sum of its shards,
            // which are read as queues of their own.
            match inspector.own_queue_info(&name).await {
                Ok(info) => queues.push(info),
                // Deleted between the two calls.
                Err(Error::QueueNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let servers = inspector.servers().await?;
        let eviction_risk = match inspector.backend_info().await {
            Ok(info) => Some(!info.eviction_risks.is_empty()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the backend's eviction policy");
                None
            }
        };
        Ok(Read { queues, servers, sharded, eviction_risk })
    }
}

/// What one refresh read.
struct Read {
    queues: Vec<QueueInfo>,
    servers: Vec<ServerReport>,
    sharded: Vec<ShardedQueue>,
    eviction_risk: Option<bool>,
}

impl fmt::Debug for QueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueMetrics")
            .field("timeout", &self.timeout)
            .field("has_broker", &self.has_broker())
            .finish_non_exhaustive()
    }
}

/// Encodes the last snapshot.
#[derive(Debug)]
struct QueueCollector(Arc<Mutex<Snapshot>>);

type QueueGauge = fn(&QueueInfo) -> f64;
type QueueCounter = fn(&QueueInfo) -> u64;
type StateCount = fn(&QueueInfo) -> usize;

/// Go's per-queue gauges: name, help, value.
const GAUGES: [(&str, &str, QueueGauge); 3] = [
    ("queue_size", "Number of tasks in a queue", |q| q.size as f64),
    (
        "queue_latency_seconds",
        "Number of seconds the oldest pending task is waiting in pending state to be processed.",
        |q| q.latency.as_secs_f64(),
    ),
    (
        "queue_memory_usage_approx_bytes",
        "Number of memory used by a given queue (approximated number by sampling).",
        |q| q.memory_usage as f64,
    ),
];

/// Go's per-queue counters: name without `_total`, help, value.
const COUNTERS: [(&str, &str, QueueCounter); 2] = [
    ("tasks_processed", "Number of tasks processed (both succeeded and failed); broken down by queue", |q| {
        q.processed_total
    }),
    ("tasks_failed", "Number of tasks failed; broken down by queue", |q| q.failed_total),
];

/// The states `tasks_enqueued_total` breaks queues down by: Go's, in Go's order, then our
/// tasks waiting in groups and workflow tasks waiting for their parents.
const STATES: [(&str, StateCount); 8] = [
    ("active", |q| q.active),
    ("pending", |q| q.pending),
    ("scheduled", |q| q.scheduled),
    ("retry", |q| q.retry),
    ("archived", |q| q.archived),
    ("completed", |q| q.completed),
    ("aggregating", |q| q.aggregating),
    ("waiting", |q| q.waiting),
];

impl Collector for QueueCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let snapshot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let up = ConstGauge::new(i64::from(snapshot.up));
        up.encode(encoder.encode_descriptor(
            "up",
            "Whether the queue metrics of this scrape were read from the broker (1) or reading them failed (0).",
            None,
            up.metric_type(),
        )?)?;
        if let Some(risk) = snapshot.eviction_risk {
            let risk = ConstGauge::new(i64::from(risk));
            risk.encode(encoder.encode_descriptor(
                "redis_eviction_risk",
                "Whether the backend's eviction policy lets it drop tasks without an error when it is full (1) or it \
                 keeps every task (0).",
                None,
                risk.metric_type(),
            )?)?;
        }
        if !snapshot.up {
            return Ok(());
        }
        let logical = Logical::new(&snapshot.sharded);
        crate::server::encode(&snapshot.servers, &snapshot.queues, &logical, &mut encoder)?;
        crate::sharded::encode_shard_counts(&snapshot.sharded, &mut encoder)?;
        let queues = &snapshot.queues;
        if queues.is_empty() {
            return Ok(());
        }

        let mut family = encoder.encode_descriptor(
            "tasks_enqueued_total",
            "Number of tasks enqueued; broken down by queue and state.",
            None,
            MetricType::Gauge,
        )?;
        for q in queues {
            for (state, count) in STATES {
                let labels = logical.labels(q.queue.as_str(), &[("state", state)]);
                ConstGauge::new(count(q) as f64).encode(family.encode_family(&labels)?)?;
            }
        }
        for (name, help, value) in GAUGES {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for q in queues {
                ConstGauge::new(value(q)).encode(family.encode_family(&logical.labels(q.queue.as_str(), &[]))?)?;
            }
        }
        for (name, help, value) in COUNTERS {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for q in queues {
                ConstCounter::new(value(q)).encode(family.encode_family(&logical.labels(q.queue.as_str(), &[]))?)?;
            }
        }
        let mut family =
            encoder.encode_descriptor("queue_paused_total", "Number of queues paused", None, MetricType::Gauge)?;
        for q in queues {
            ConstGauge::new(f64::from(u8::from(q.paused)))
                .encode(family.encode_family(&logical.labels(q.queue.as_str(), &[]))?)?;
        }
        Ok(())
    }
}
