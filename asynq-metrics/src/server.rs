//! Server metrics: the live servers and the tasks their workers run, as the servers record them
//! in the broker with each heartbeat (what `asynq server ls` shows, Go's servers included), read
//! with the queue metrics on each scrape. A standalone exporter (`asynq metrics`) knows every
//! server this way, without running in any of them.
//!
//! The names differ from `WorkerMetrics`' `asynq_worker_*`, which one
//! server exports about itself, so that a query summing one never adds the other: the broker's
//! view counts each server once whichever process exports it, the in-process view counts the
//! tasks of the process that serves it.

use crate::sharded::Logical;
use asynq_client::ServerReport;
use asynq_core::{QueueInfo, ServerStatus};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use std::collections::BTreeMap;
use std::fmt;
use std::time::UNIX_EPOCH;

/// The labels naming one server: its ID (new at each start), host and process ID.
fn server_labels(report: &ServerReport) -> [(&'static str, String); 3] {
    let server = &report.server;
    [("server_id", server.server_id.clone()), ("host", server.host.clone()), ("pid", server.pid.to_string())]
}

/// Encodes the server series of `servers`; `queues` are the queues the broker knows, each of
/// which gets an `asynq_queue_servers` series (0 when no active server serves it); the queues of
/// a sharded queue `logical` names carry its name.
pub(crate) fn encode(
    servers: &[ServerReport],
    queues: &[QueueInfo],
    logical: &Logical<'_>,
    encoder: &mut DescriptorEncoder,
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "server_info",
        "A live server (1), by its ID, host, process ID and status (new, active, stopped, closed), as its last \
         heartbeat recorded it in the broker.",
        None,
        MetricType::Gauge,
    )?;
    for report in servers {
        let [id, host, pid] = server_labels(report);
        let labels = [id, host, pid, ("status", report.server.status.as_str().to_owned())];
        ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
    }

    type ServerValue = fn(&ServerReport) -> f64;
    let per_server: [(&str, &str, ServerValue); 3] = [
        ("server_start_time_seconds", "When a live server started, in seconds since the Unix epoch.", |r| {
            r.server.started.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
        }),
        ("server_concurrency", "How many tasks a live server runs at most at once.", |r| {
            f64::from(r.server.concurrency)
        }),
        (
            "server_active_workers",
            "How many tasks a live server was running at its last heartbeat (its worker records in the broker).",
            |r| r.workers.len() as f64,
        ),
    ];
    for (name, help, value) in per_server {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for report in servers {
            ConstGauge::new(value(report)).encode(family.encode_family(&server_labels(report))?)?;
        }
    }

    // Tasks running on every live server together, by queue and type.
    let mut running: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for worker in servers.iter().flat_map(|r| &r.workers) {
        *running.entry((worker.queue.as_str(), worker.task_type.as_str())).or_default() += 1;
    }
    let mut family = encoder.encode_descriptor(
        "active_workers",
        "How many tasks the live servers were running at their last heartbeats, by queue and task type.",
        None,
        MetricType::Gauge,
    )?;
    for ((queue, task_type), n) in running {
        ConstGauge::new(n as f64).encode(family.encode_family(&logical.labels(queue, &[("task_type", task_type)]))?)?;
    }

    // Active servers per queue: every known queue, and every queue a server serves.
    let mut serving: BTreeMap<&str, u64> = queues.iter().map(|q| (q.queue.as_str(), 0)).collect();
    for report in servers {
        for queue in report.server.queues.keys() {
            *serving.entry(queue.as_str()).or_default() += u64::from(report.server.status == ServerStatus::Active);
        }
    }
    let mut family = encoder.encode_descriptor(
        "queue_servers",
        "How many live servers in the active status serve a queue (0: nothing takes its pending tasks).",
        None,
        MetricType::Gauge,
    )?;
    for (queue, n) in serving {
        ConstGauge::new(n as f64).encode(family.encode_family(&logical.labels(queue, &[]))?)?;
    }
    Ok(())
}
