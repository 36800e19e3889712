//! The end-to-end scenarios, each against the Redis at a given URL. Each connects, runs its
//! timed phase and returns its [`Measurement`](crate::Measurement); none flushes Redis, which is
//! the caller's job. They live in one module per family, re-exported here; this module holds
//! what they share (connecting, server configurations, filling and waiting on the queue).
//!
//! Scenarios that process tasks wait until the queue's processed counter reaches the target,
//! reading it every [`POLL_INTERVAL`]: a counter in Redis, rather than in the handler, also
//! counts the tasks finished by other processes and waits for the last acknowledgements to be
//! written. The counters are read with one `MGET`, not
//! [`Inspect::queue_info`](asynq_core::broker::Inspect::queue_info), whose dozen commands (a
//! memory sample among them) would weigh on the Redis work measured per task.

mod baseline;
mod bulk;
mod enqueue;
mod groups;
mod idle;
mod latency;
mod process;
mod sharded;

pub use baseline::{CALLS_PER_EVAL, redis_calls_from_lua, redis_ping};
pub use bulk::{BulkKind, bulk};
pub use enqueue::{enqueue, enqueue_batch, enqueue_concurrent, fill, fill_failing, fill_scheduled};
pub use groups::{fill_groups, group_reads, idle_aggregator};
pub use idle::{idle, idle_servers};
pub use latency::{BUSY_TENANT, FRESH_QUEUE, Layout, QUIET_TENANT, TENANTS, pickup_latency, scheduled_storm};
pub use process::{drain, enqueue_and_process, fail_for_good, fan_in, stream};
pub use sharded::{SHARD_POLL_INTERVAL, SHARDED_QUEUE, sharded_check, sharded_drain, sharded_fill};

use crate::workload::{self, QUEUE};
use anyhow::{Context as _, bail, ensure};
use asynq_client::{Client, TaskOptions};
use asynq_core::QueueName;
use asynq_redis::RedisBroker;
use asynq_redis::keys::Namespace;
use asynq_server::{Config, HandlerError, TaskContext};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often the processed counter is polled while waiting for a queue to drain.
pub const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// How many tasks one [`fill`] call sends in one batch.
const FILL_BATCH: usize = 1_000;

/// How far ahead `enqueue-batch --scheduled` schedules its tasks: past the end of any run.
const SCHEDULED_AHEAD: Duration = Duration::from_secs(3600);

/// Makes the bench queue keep an event log of about `events` events, if given.
async fn keep_events(broker: &RedisBroker, events: Option<u32>) -> anyhow::Result<()> {
    if let Some(events) = events {
        let cap = asynq_core::events::EventCap::new(events)?;
        asynq_core::broker::EventLog::set_event_cap(broker, &QueueName::from_static(QUEUE), Some(cap)).await?;
    }
    Ok(())
}

pub(crate) async fn connect(redis_url: &str) -> anyhow::Result<RedisBroker> {
    RedisBroker::connect(redis_url).await.with_context(|| format!("could not connect to {redis_url}"))
}

/// The default server configuration, with `concurrency` and `queues`.
fn server_config(concurrency: usize, queues: &BTreeMap<String, u32>) -> Config {
    Config { concurrency, queues: queues.clone(), ..Config::default() }
}

/// `queues` with their priorities, and `empty` more of priority 1 (`empty-0`, `empty-1`, ...),
/// which no scenario enqueues into.
fn with_empty_queues(queues: &[(&str, u32)], empty: usize) -> BTreeMap<String, u32> {
    let named = queues.iter().map(|(name, priority)| ((*name).to_owned(), *priority));
    named.chain((0..empty).map(|i| (format!("empty-{i}"), 1))).collect()
}

/// The handler of [`fail_for_good`]: fails at once.
async fn fail(_ctx: TaskContext, _task: asynq_core::Task) -> Result<(), HandlerError> {
    Err(HandlerError::new("the bench handler always fails"))
}

/// The benchmark handler: succeeds at once.
async fn noop(_ctx: TaskContext, _task: asynq_core::Task) -> Result<(), HandlerError> {
    Ok(())
}

/// Enqueues `tasks` benchmark tasks in batches of `batch_size`, failing on the first task the
/// broker refuses.
async fn enqueue_in_batches(
    client: &Client,
    tasks: u64,
    batch_size: usize,
    options: &TaskOptions,
) -> anyhow::Result<()> {
    ensure!(batch_size > 0, "the batch size must be at least 1");
    let batch = vec![(workload::task(), options.clone()); batch_size];
    let mut left = tasks;
    while left > 0 {
        let size = batch_size.min(usize::try_from(left).unwrap_or(usize::MAX));
        if let Some(Err(e)) = client.enqueue_batch(&batch[..size]).await.into_iter().find(Result::is_err) {
            return Err(e).context("batch enqueue failed");
        }
        left -= size as u64;
    }
    Ok(())
}

/// Polls the queue's processed counter until it reaches `target`. Fails as soon as a task
/// fails (the benchmark handler never does, so something is broken), or after `timeout`.
pub(crate) async fn wait_until_processed(redis_url: &str, target: u64, timeout: Duration) -> anyhow::Result<()> {
    wait_until_processed_or_failed(redis_url, target, timeout, false).await
}

/// [`wait_until_processed`]; with `failures_expected`, failed tasks count as processed (as the
/// processed counter counts them) instead of being an error.
async fn wait_until_processed_or_failed(
    redis_url: &str,
    target: u64,
    timeout: Duration,
    failures_expected: bool,
) -> anyhow::Result<()> {
    let client = redis::Client::open(redis_url).with_context(|| format!("bad Redis URL {redis_url}"))?;
    let mut connection =
        client.get_multiplexed_async_connection().await.with_context(|| format!("could not connect to {redis_url}"))?;
    let keys = Namespace::DEFAULT.queue(QUEUE);
    let mut read = redis::cmd("MGET");
    read.arg(keys.processed_total()).arg(keys.failed_total());
    let deadline = Instant::now() + timeout;
    loop {
        let (processed, failed): (Option<u64>, Option<u64>) =
            read.query_async(&mut connection).await.context("could not read the queue's counters")?;
        let (processed, failed) = (processed.unwrap_or(0), failed.unwrap_or(0));
        if failed > 0 && !failures_expected {
            bail!("{failed} tasks failed in queue {QUEUE:?}; the benchmark handler never fails");
        }
        if processed >= target {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("only {processed} of {target} tasks were processed within {timeout:?}");
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}
