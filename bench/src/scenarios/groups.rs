//! The group scenarios: a queue of many groups, its idle aggregator and its operator reads.

use super::idle::serve_idle;
use super::{FILL_BATCH, connect, server_config, with_empty_queues};
use crate::measure::{Measurement, Timer, percentile};
use crate::workload::{self, QUEUE};
use anyhow::{Context as _, ensure};
use asynq_client::{Client, TaskOptions};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The grace period of the group scenarios' aggregator: longer than any run, so no group is
/// ever ready and every check is the idle cost of looking.
const GROUP_GRACE_PERIOD: Duration = Duration::from_secs(3600);

/// How many times `group-reads` times each read; it reports the median.
const GROUP_READ_CALLS: usize = 3;

/// Prepares the group scenarios: one grouped task (of the benchmark workload) in each of
/// `groups` groups of [`QUEUE`], `group-0`, `group-1`, ..., enqueued in batches.
pub async fn fill_groups(redis_url: &str, groups: u64) -> anyhow::Result<Measurement> {
    let client = Client::new(connect(redis_url).await?);
    let timer = Timer::start();
    let mut next = 0;
    while next < groups {
        let end = groups.min(next + FILL_BATCH as u64);
        let batch: Vec<_> =
            (next..end).map(|i| (workload::task(), TaskOptions::new().group(format!("group-{i}")))).collect();
        if let Some(Err(e)) = client.enqueue_batch(&batch).await.into_iter().find(Result::is_err) {
            return Err(e).context("batch enqueue failed");
        }
        next = end;
    }
    Ok(timer.finish("fill-groups", groups, None, true))
}

/// Runs a server with a group aggregator on [`QUEUE`] for `duration`, its grace period an hour
/// so that no group is ready ([`fill_groups`] first): what its checks cost Redis meanwhile is
/// measured from outside. The aggregator checks every 7 s (Go's longest interval).
pub async fn idle_aggregator(redis_url: &str, concurrency: usize, duration: Duration) -> anyhow::Result<Measurement> {
    let mut config = server_config(concurrency, &with_empty_queues(&[(QUEUE, 1)], 0));
    config.group_aggregator = Some(Arc::new(asynq_server::aggregator_fn(|_: &str, _| workload::task())));
    config.group_grace_period = GROUP_GRACE_PERIOD;
    serve_idle(redis_url, config, "idle-aggregator", duration).await
}

/// Times the operator reads of a queue of many groups ([`fill_groups`] first), each
/// three times, and reports their medians in [`Measurement::reads_ms`]:
/// `queue_info` (`asynq queue inspect`, and per queue `asynq stats`, `queue ls` and a metrics
/// scrape), `queues_and_info` (what a metrics scrape reads: the queue list and each queue's
/// info), `groups` (`asynq group ls`) and `aggregating_page` (the first 20 aggregating tasks,
/// the dashboard's page of them). Checks that the queue counts `groups` groups.
pub async fn group_reads(redis_url: &str, groups: u64) -> anyhow::Result<Measurement> {
    let inspector = asynq_client::Inspector::new(connect(redis_url).await?);
    let timer = Timer::start();
    let mut reads: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut time = |name: &str, started: Instant| {
        reads.entry(name.to_owned()).or_default().push(started.elapsed().as_secs_f64() * 1e3);
    };
    for _ in 0..GROUP_READ_CALLS {
        let started = Instant::now();
        let info = inspector.queue_info(QUEUE).await.context("Inspector::queue_info failed")?;
        time("queue_info", started);
        ensure!(info.groups as u64 == groups, "queue_info counted {} groups of {groups}", info.groups);
        ensure!(info.aggregating as u64 == groups, "queue_info counted {} aggregating tasks", info.aggregating);
        let started = Instant::now();
        for queue in inspector.queues().await.context("Inspector::queues failed")? {
            inspector.queue_info(queue.as_str()).await.context("Inspector::queue_info failed")?;
        }
        time("queues_and_info", started);
        let started = Instant::now();
        let listed = inspector.groups(QUEUE).await.context("Inspector::groups failed")?;
        time("groups", started);
        let started = Instant::now();
        let page = asynq_core::broker::Page { size: 20, number: 0 };
        let tasks = inspector.list_tasks(QUEUE, asynq_core::TaskState::Aggregating, page).await;
        time("aggregating_page", started);
        ensure!(tasks.context("Inspector::list_tasks failed")?.len() == 20, "a page of aggregating tasks is short");
        ensure!(listed.len() as u64 == groups, "Inspector::groups listed {} groups of {groups}", listed.len());
    }
    let mut measurement = timer.finish("group-reads", 0, None, false);
    for (name, mut took_ms) in reads {
        took_ms.sort_by(f64::total_cmp);
        if let Some(median) = percentile(&took_ms, 50.0) {
            measurement.reads_ms.insert(name, median);
        }
    }
    Ok(measurement)
}
