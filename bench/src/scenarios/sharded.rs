//! The sharded-queue scenarios, on a Redis Cluster: one logical queue, [`SHARDED_QUEUE`], stored
//! as shards the broker spreads over the masters, filled in batches by producers placing tasks on
//! its shards in turn, drained by servers that serve it by its logical name, and checked.
//!
//! A drain waits for the sum of the shards' processed counters, read with one `MGET` per shard
//! (a shard's counters share its hash slot) every [`SHARD_POLL_INTERVAL`]: a counter in Redis
//! also counts what other processes finished. Each process reports the tasks its own handler
//! ran ([`Measurement::handled`]), so that the caller can check that every task ran once.

use super::{FILL_BATCH, connect, enqueue_in_batches};
use crate::measure::{Measurement, Timer};
use anyhow::{Context as _, bail, ensure};
use asynq_client::{Client, Inspector, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Capabilities as _;
use asynq_redis::keys::Namespace;
use asynq_server::{Config, Server, TaskContext, handler_fn};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The logical queue of the sharded scenarios.
pub const SHARDED_QUEUE: &str = "sharded";

/// How often a drain reads the shards' counters: each read is one command per shard.
pub const SHARD_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Declares [`SHARDED_QUEUE`] with `shards` shards (or finds it declared so), then enqueues
/// `tasks` benchmark tasks into it from `producers` concurrent producers sharing one client that
/// places tasks on the shards in turn, in batches of `FILL_BATCH` (1 000); timed from the first batch.
pub async fn sharded_fill(redis_url: &str, tasks: u64, shards: usize, producers: usize) -> anyhow::Result<Measurement> {
    ensure!(producers > 0, "there must be at least one producer");
    let broker = Arc::new(connect(redis_url).await?);
    let directory = broker.clone().as_sharded_queues().context("this broker has no sharded queues")?;
    let logical = QueueName::from_static(SHARDED_QUEUE);
    let declared = directory.declare_sharded_queue(&logical, shards).await.context("declaring the sharded queue")?;
    ensure!(declared.count() == shards, "{SHARDED_QUEUE:?} has {} shards, not {shards}", declared.count());
    let client = Client::from_shared(broker);
    let options = TaskOptions::new().queue(SHARDED_QUEUE);
    let timer = Timer::start();
    let mut running = tokio::task::JoinSet::new();
    let producers = producers as u64;
    for producer in 0..producers {
        let share = tasks / producers + u64::from(producer < tasks % producers);
        let (client, options) = (client.clone(), options.clone());
        running.spawn(async move { enqueue_in_batches(&client, share, FILL_BATCH, &options).await });
    }
    while let Some(done) = running.join_next().await {
        done??;
    }
    Ok(timer.finish("sharded-fill", tasks, None, true))
}

/// Runs a server of `concurrency` serving [`SHARDED_QUEUE`] by its logical name (every shard)
/// until the shards' processed counters add up to `tasks`, timed from the server's start; the
/// queue must hold the tasks already ([`sharded_fill`]). Several processes may drain it at once,
/// each waiting for the common total.
pub async fn sharded_drain(
    redis_url: &str,
    tasks: u64,
    concurrency: usize,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    let broker = connect(redis_url).await?;
    let directory = Arc::new(broker.clone()).as_sharded_queues().context("this broker has no sharded queues")?;
    let declared = directory
        .sharded_queue(&QueueName::from_static(SHARDED_QUEUE))
        .await?
        .with_context(|| format!("{SHARDED_QUEUE:?} is not declared; run sharded-fill first"))?;
    let counters = ShardCounters::connect(redis_url, declared.shards()).await?;
    let config = Config::builder().concurrency(concurrency).sharded_queue(SHARDED_QUEUE, 1).build()?;
    let mut server = Server::new(broker, config)?;
    let handled = Arc::new(AtomicU64::new(0));
    let handler = {
        let handled = handled.clone();
        handler_fn(move |_ctx: TaskContext, _task: asynq_core::Task| {
            handled.fetch_add(1, Ordering::Relaxed);
            async { Ok(()) }
        })
    };
    let timer = Timer::start();
    server.start(handler)?;
    let waited = counters.wait_until_processed(tasks, timeout).await;
    let mut measurement = timer.finish("sharded-drain", tasks, Some(concurrency), true);
    server.shutdown().await;
    measurement.handled = Some(handled.load(Ordering::Relaxed));
    waited.map(|()| measurement)
}

/// Checks, after a drain, that every task of [`SHARDED_QUEUE`] ran: nothing left in any state,
/// `tasks` processed over its shards, none failed. Its measurement counts the tasks processed.
pub async fn sharded_check(redis_url: &str, tasks: u64) -> anyhow::Result<Measurement> {
    let inspector = Inspector::new(connect(redis_url).await?);
    let timer = Timer::start();
    let info = inspector.queue_info(SHARDED_QUEUE).await.context("reading the sharded queue's info")?;
    ensure!(!info.shards.is_empty(), "{SHARDED_QUEUE:?} is not a sharded queue");
    ensure!(
        info.size == 0 && info.processed_total == tasks && info.failed_total == 0,
        "{SHARDED_QUEUE:?} after the drain: {} tasks left, {} processed of {tasks}, {} failed",
        info.size,
        info.processed_total,
        info.failed_total
    );
    let mut measurement = timer.finish("sharded-check", info.processed_total, None, false);
    measurement.handled = Some(info.processed_total);
    Ok(measurement)
}

/// The processed and failed counters of every shard, read over a Cluster connection.
struct ShardCounters {
    connection: redis::cluster_async::ClusterConnection,
    /// Per shard: one `MGET` of its processed and failed totals.
    reads: Vec<redis::Cmd>,
}

impl ShardCounters {
    /// Connects to the Cluster `redis_url` names (`redis-cluster://host:port,...`).
    async fn connect(redis_url: &str, shards: &[QueueName]) -> anyhow::Result<Self> {
        let nodes = cluster_nodes(redis_url)?;
        let client =
            redis::cluster::ClusterClient::new(nodes).with_context(|| format!("bad Cluster URL {redis_url}"))?;
        let connection =
            client.get_async_connection().await.with_context(|| format!("could not connect to {redis_url}"))?;
        let reads = shards
            .iter()
            .map(|shard| {
                let keys = Namespace::DEFAULT.queue(shard);
                let mut read = redis::cmd("MGET");
                read.arg(keys.processed_total()).arg(keys.failed_total());
                read
            })
            .collect();
        Ok(Self { connection, reads })
    }

    /// Polls until the processed totals add up to `target`; fails as soon as a task fails (the
    /// benchmark handler never does), or after `timeout`.
    async fn wait_until_processed(mut self, target: u64, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let (mut processed, mut failed) = (0, 0);
            for read in &self.reads {
                let (done, lost): (Option<u64>, Option<u64>) =
                    read.query_async(&mut self.connection).await.context("could not read a shard's counters")?;
                processed += done.unwrap_or(0);
                failed += lost.unwrap_or(0);
            }
            if failed > 0 {
                bail!("{failed} tasks failed in {SHARDED_QUEUE:?}; the benchmark handler never fails");
            }
            if processed >= target {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("only {processed} of {target} tasks were processed within {timeout:?}");
            }
            tokio::time::sleep(SHARD_POLL_INTERVAL).await;
        }
    }
}

/// The node URLs of a `redis-cluster://host:port,host:port` URL, as `redis://host:port`.
fn cluster_nodes(redis_url: &str) -> anyhow::Result<Vec<String>> {
    let Some(hosts) = redis_url.strip_prefix("redis-cluster://") else {
        bail!("the sharded scenarios run on a Redis Cluster (redis-cluster://host:port,...), not {redis_url}");
    };
    let hosts = hosts.split(['?', '#', '/']).next().unwrap_or_default();
    let nodes: Vec<String> =
        hosts.split(',').filter(|host| !host.trim().is_empty()).map(|host| format!("redis://{host}")).collect();
    ensure!(!nodes.is_empty(), "{redis_url} names no node");
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls_become_node_urls() {
        assert_eq!(
            cluster_nodes("redis-cluster://127.0.0.1:7000,127.0.0.1:7001").unwrap(),
            ["redis://127.0.0.1:7000", "redis://127.0.0.1:7001"]
        );
        assert_eq!(cluster_nodes("redis-cluster://h:1?namespace=x").unwrap(), ["redis://h:1"]);
        assert!(cluster_nodes("redis://127.0.0.1:6390").is_err());
        assert!(cluster_nodes("redis-cluster://").is_err());
    }
}
