//! `asynq stats`: tasks per state (workflow tasks waiting for their parents too) and per queue, today's processed and failed counts, and what
//! Redis says about itself, led by a warning when its eviction policy can drop tasks.

use super::Context;
use crate::error::CliResult;
use crate::output::{self, error_rate, heading, outln, print_json, print_table, rfc3339, state_cell, warning};
use crate::view::{BackendView, QueueView};
use asynq_client::QueueInfo;
use asynq_core::{Clock, SystemClock};
use serde::Serialize;

/// Counts over every queue.
#[derive(Debug, Default, Serialize)]
struct Aggregate {
    active: usize,
    pending: usize,
    aggregating: usize,
    scheduled: usize,
    retry: usize,
    archived: usize,
    completed: usize,
    /// Workflow tasks waiting for their parents (not in Go's states).
    waiting: usize,
    processed: u64,
    failed: u64,
    timestamp: String,
}

impl Aggregate {
    fn of(queues: &[QueueInfo]) -> Self {
        let mut sum = Aggregate { timestamp: rfc3339(SystemClock.now()), ..Self::default() };
        for q in queues {
            sum.active += q.active;
            sum.pending += q.pending;
            sum.aggregating += q.aggregating;
            sum.scheduled += q.scheduled;
            sum.retry += q.retry;
            sum.archived += q.archived;
            sum.completed += q.completed;
            sum.waiting += q.waiting;
            sum.processed += q.processed;
            sum.failed += q.failed;
            sum.timestamp = rfc3339(q.timestamp);
        }
        sum
    }
}

/// The JSON of `asynq stats --json`.
#[derive(Debug, Serialize)]
struct Stats {
    aggregate: Aggregate,
    queues: Vec<QueueView>,
    backend: BackendView,
}

/// Runs `asynq stats`.
pub(crate) async fn run(ctx: &Context) -> CliResult {
    let inspector = &ctx.conn.inspector;
    let mut queues = Vec::new();
    for name in inspector.queues().await? {
        queues.push(inspector.queue_info(&name).await?);
    }
    let backend = inspector.backend_info().await?;
    let aggregate = Aggregate::of(&queues);
    if ctx.json {
        let queues = queues.iter().map(QueueView::from).collect();
        print_json(&Stats { aggregate, queues, backend: BackendView::from(&backend) })?;
        return Ok(());
    }

    // Go's layout, the default namespace, prints as Go's `asynq stats` does.
    if let Some(namespace) = backend.namespace.as_deref().filter(|&n| n != asynq_redis::Namespace::DEFAULT.as_str()) {
        outln!("Namespace: {namespace}")?;
        outln!()?;
    }
    for risk in &backend.eviction_risks {
        warning(&risk.warning)?;
    }
    if !backend.eviction_risks.is_empty() {
        outln!()?;
    }

    heading("Task Count by State")?;
    let mut table = output::table(output::STATE_COLUMNS);
    let a = &aggregate;
    table.add_row([a.active, a.pending, a.aggregating, a.scheduled, a.retry, a.archived, a.completed, a.waiting]);
    print_table(&table)?;
    outln!()?;

    heading("Task Count by Queue")?;
    let mut table = output::table(["queue", "size", "waiting", "state"]);
    for q in &queues {
        let state = if q.paused { state_cell("paused") } else { state_cell("running") };
        table.add_row(vec![q.queue.clone().into(), q.size.into(), q.waiting.into(), state]);
    }
    print_table(&table)?;
    outln!()?;

    heading(&format!("Daily Stats {} UTC", &a.timestamp[..10]))?;
    let mut table = output::table(["processed", "failed", "error rate"]);
    table.add_row([a.processed.to_string(), a.failed.to_string(), error_rate(a.processed, a.failed)]);
    print_table(&table)?;
    outln!()?;

    let field = |name: &str| backend.fields.get(name).cloned().unwrap_or_default();
    if backend.kind == "redis-cluster" {
        heading("Redis Cluster Info")?;
        let mut table = output::table(["state", "known nodes", "cluster size"]);
        table.add_row([field("cluster_state").to_uppercase(), field("cluster_known_nodes"), field("cluster_size")]);
        print_table(&table)?;
    } else {
        heading("Redis Info")?;
        let mut table = output::table(["version", "uptime", "connections", "memory usage", "peak memory usage"]);
        table.add_row([
            field("redis_version"),
            format!("{} days", field("uptime_in_days")),
            field("connected_clients"),
            format!("{}B", field("used_memory_human")),
            format!("{}B", field("used_memory_peak_human")),
        ]);
        print_table(&table)?;
    }
    Ok(())
}
