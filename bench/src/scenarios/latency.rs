//! The pickup-latency scenarios: one task at a time into an idle server (beside empty queues or
//! tenant queues), and fresh tasks during a storm of scheduled ones falling due.

use super::{POLL_INTERVAL, SCHEDULED_AHEAD, connect, enqueue_in_batches, server_config, with_empty_queues};
use crate::measure::{Measurement, Timer, percentile};
use crate::workload::{self, QUEUE};
use anyhow::{Context as _, ensure};
use asynq_client::{Client, TaskOptions};
use asynq_core::{Clock, SystemClock};
use asynq_redis::RedisBroker;
use asynq_redis::keys::Namespace;
use asynq_server::{Config, Server, TaskContext, handler_fn};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long `pickup-latency` waits for one task to start before giving up.
const PICKUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The queues a latency or idle scenario's server serves.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// The sampled queue and `empty_queues` empty ones of the same weight, all named.
    Named {
        /// How many empty queues.
        empty_queues: usize,
    },
    /// The pattern [`TENANTS`], with `tenants` empty tenant queues registered beside the
    /// sampled [`QUIET_TENANT`], and [`BUSY_TENANT`] filled with `busy_backlog` tasks first.
    Tenants {
        /// How many empty tenant queues.
        tenants: usize,
        /// How many tasks the busy tenant holds when sampling starts.
        busy_backlog: u64,
    },
}

/// The pattern the tenant layouts serve.
pub const TENANTS: &str = "tenant:*";
/// The tenant whose tasks a tenant layout samples.
pub const QUIET_TENANT: &str = "tenant:quiet";
/// The tenant a tenant layout fills with a backlog.
pub const BUSY_TENANT: &str = "tenant:busy";

impl Layout {
    /// Sets the queues up in Redis and returns the server's configuration and the sampled
    /// queue.
    pub(super) async fn prepare(self, redis_url: &str, concurrency: usize) -> anyhow::Result<(Config, &'static str)> {
        match self {
            Layout::Named { empty_queues } => {
                Ok((server_config(concurrency, &with_empty_queues(&[(QUEUE, 1)], empty_queues)), QUEUE))
            }
            Layout::Tenants { tenants, busy_backlog } => {
                register_queues(redis_url, (0..tenants).map(|i| format!("tenant:{i}"))).await?;
                register_queues(redis_url, [QUIET_TENANT.to_owned()]).await?;
                if busy_backlog > 0 {
                    let client = Client::new(connect(redis_url).await?);
                    enqueue_in_batches(&client, busy_backlog, 100, &TaskOptions::new().queue(BUSY_TENANT)).await?;
                }
                let config = Config::builder().concurrency(concurrency).queue_pattern(TENANTS, 1).build()?;
                Ok((config, QUIET_TENANT))
            }
        }
    }
}

/// Registers `queues` as an enqueue would (Go's `SADD` to the registry), without tasks.
async fn register_queues(redis_url: &str, queues: impl IntoIterator<Item = String>) -> anyhow::Result<()> {
    let mut conn = redis::Client::open(redis_url)?.get_multiplexed_async_connection().await?;
    let registry = Namespace::default().all_queues();
    let queues: Vec<String> = queues.into_iter().collect();
    for chunk in queues.chunks(1_000) {
        let _: i64 = redis::cmd("SADD").arg(&registry).arg(chunk).query_async(&mut conn).await?;
    }
    Ok(())
}

/// With an idle server of `concurrency`, enqueues one task at a time and measures how long it
/// takes from just before the enqueue to the start of its handler (monotonic clock, one
/// process). Each sample waits `gap` first, so that the server is idle again (or, beside a busy
/// tenant, busy with that tenant only); sampling stops after `samples` samples or once
/// `max_duration` has passed. `layout` says which queues the server serves besides the
/// sampled one; `start_with_fetch` sets the server's `Config::start_with_fetch`.
pub async fn pickup_latency(
    redis_url: &str,
    samples: u64,
    concurrency: usize,
    layout: Layout,
    start_with_fetch: bool,
    gap: Duration,
    max_duration: Duration,
) -> anyhow::Result<Measurement> {
    let client = Client::new(connect(redis_url).await?);
    let (mut config, sampled) = layout.prepare(redis_url, concurrency).await?;
    config.start_with_fetch = start_with_fetch;
    let (started_tx, mut started_rx) = mpsc::unbounded_channel::<Instant>();
    let handler = handler_fn(move |ctx: TaskContext, _task| {
        let started = Instant::now();
        let started_tx = started_tx.clone();
        let (sample, busy) = (ctx.queue() == sampled, ctx.queue() == BUSY_TENANT);
        async move {
            // The receiver outlives the server; a send fails only if the scenario gave up.
            if sample {
                let _ = started_tx.send(started);
            }
            if busy {
                // A millisecond each: the backlog keeps every worker busy while sampling.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Ok(())
        }
    });
    let mut server = Server::new(connect(redis_url).await?, config)?;
    server.start(handler)?;
    if let Layout::Tenants { .. } = layout {
        // The quiet tenant is registered: the pattern's first refresh finds it.
        tokio::time::sleep(Duration::from_millis(1_100)).await;
    }
    let task = workload::task();
    let options = TaskOptions::new().queue(sampled);
    let timer = Timer::start();
    let mut latencies_ms = Vec::new();
    let result = async {
        while (latencies_ms.len() as u64) < samples && timer.elapsed() < max_duration {
            tokio::time::sleep(gap).await;
            latencies_ms.push(pickup_ms(&client, &task, &options, &mut started_rx).await?);
        }
        anyhow::Ok(())
    }
    .await;
    let mut measurement = timer.finish("pickup-latency", latencies_ms.len() as u64, Some(concurrency), false);
    server.shutdown().await;
    result?;
    latencies_ms.sort_by(f64::total_cmp);
    measurement.pickup_p50_ms = percentile(&latencies_ms, 50.0);
    measurement.pickup_p99_ms = percentile(&latencies_ms, 99.0);
    Ok(measurement)
}

/// Enqueues `task` and waits for its handler to report its start on `started`; returns the
/// milliseconds from just before the enqueue to that start.
async fn pickup_ms(
    client: &Client,
    task: &asynq_core::Task,
    options: &TaskOptions,
    started: &mut mpsc::UnboundedReceiver<Instant>,
) -> anyhow::Result<f64> {
    let enqueued = Instant::now();
    client.enqueue(task, options.clone()).await.context("enqueue failed")?;
    let started = tokio::time::timeout(PICKUP_TIMEOUT, started.recv())
        .await
        .with_context(|| format!("no handler started within {PICKUP_TIMEOUT:?} of an enqueue"))?
        .context("the server dropped its handler")?;
    Ok(started.duration_since(enqueued).as_secs_f64() * 1e3)
}

/// The queue whose fresh tasks [`scheduled_storm`] samples, beside the storm's [`QUEUE`].
pub const FRESH_QUEUE: &str = "fresh";

/// A wall clock `ahead` of the system's: the storm's server sees the scheduled tasks due.
#[derive(Debug)]
struct AheadClock(Duration);

impl Clock for AheadClock {
    fn now(&self) -> std::time::SystemTime {
        SystemClock.now() + self.0
    }
}

/// A storm of scheduled tasks falling due at once: [`QUEUE`] must hold `tasks` scheduled tasks
/// due at one second ([`fill_scheduled`](super::fill_scheduled)), which a server started now sees due at once (its
/// clock runs an hour and a minute ahead; nothing else in the run reads it). The
/// server of `concurrency` serves [`QUEUE`] and [`FRESH_QUEUE`] with the same weight, running
/// the forwarded tasks as they come; meanwhile one fresh task at a time is enqueued into
/// [`FRESH_QUEUE`] every `gap`, and its pickup latency is sampled while tasks are being
/// forwarded (from the first one forwarded to the last).
///
/// Reports the pickup percentiles of those samples, `tasks_per_s` as the forwarding rate
/// (`tasks` over the time from the first task forwarded to the last) and `elapsed_s` from the
/// server's start until all are forwarded (its forwarder looks at once).
pub async fn scheduled_storm(
    redis_url: &str,
    tasks: u64,
    concurrency: usize,
    gap: Duration,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    let redis = redis::Client::open(redis_url).with_context(|| format!("bad Redis URL {redis_url}"))?;
    let mut monitor =
        redis.get_multiplexed_async_connection().await.with_context(|| format!("could not connect to {redis_url}"))?;
    let scheduled_key = Namespace::DEFAULT.queue(QUEUE).scheduled();
    let held: u64 = redis::cmd("ZCARD").arg(&scheduled_key).query_async(&mut monitor).await?;
    ensure!(held >= tasks, "queue {QUEUE:?} holds {held} scheduled tasks, not {tasks}; fill it first");
    let mut config = asynq_redis::RedisConfig::from_url(redis_url)?;
    config.clock = Arc::new(AheadClock(SCHEDULED_AHEAD + Duration::from_secs(60)));
    let broker =
        RedisBroker::connect_with(config).await.with_context(|| format!("could not connect to {redis_url}"))?;
    let (started_tx, mut started_rx) = mpsc::unbounded_channel::<Instant>();
    let handler = handler_fn(move |ctx: TaskContext, _task| {
        let started = Instant::now();
        let started_tx = started_tx.clone();
        let fresh = ctx.queue() == FRESH_QUEUE;
        async move {
            if fresh {
                // The receiver outlives the server; a send fails only if the scenario gave up.
                let _ = started_tx.send(started);
            }
            Ok(())
        }
    });
    let mut server =
        Server::new(broker, server_config(concurrency, &with_empty_queues(&[(QUEUE, 1), (FRESH_QUEUE, 1)], 0)))?;
    let client = Client::new(connect(redis_url).await?);
    // Tasks still scheduled, as last seen; when the first and the last were forwarded.
    let remaining = Arc::new(AtomicU64::new(held));
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<Instant>();
    let watcher = {
        let remaining = remaining.clone();
        tokio::spawn(async move {
            let mut first_tx = Some(first_tx);
            loop {
                let left: u64 = redis::cmd("ZCARD").arg(&scheduled_key).query_async(&mut monitor).await?;
                remaining.store(left, Ordering::SeqCst);
                if left < held
                    && let Some(tx) = first_tx.take()
                {
                    let _ = tx.send(Instant::now());
                }
                if left == 0 {
                    return anyhow::Ok(Instant::now());
                }
                tokio::time::sleep(POLL_INTERVAL).await;
            }
        })
    };
    let task = workload::task();
    let options = TaskOptions::new().queue(FRESH_QUEUE);
    let timer = Timer::start();
    server.start(handler)?;
    let mut latencies_ms = Vec::new();
    let sampled = async {
        while remaining.load(Ordering::SeqCst) > 0 {
            ensure!(timer.elapsed() < timeout, "the scheduled tasks were not all forwarded within {timeout:?}");
            tokio::time::sleep(gap).await;
            let during_storm = remaining.load(Ordering::SeqCst) < held;
            let latency_ms = pickup_ms(&client, &task, &options, &mut started_rx).await?;
            if during_storm {
                latencies_ms.push(latency_ms);
            }
        }
        anyhow::Ok(())
    }
    .await;
    let mut measurement = timer.finish("scheduled-storm", tasks, Some(concurrency), false);
    server.shutdown().await;
    if sampled.is_err() {
        watcher.abort();
    }
    sampled?;
    let last = watcher.await??;
    let first = first_rx.await.context("no task was forwarded")?;
    measurement.tasks_per_s =
        Some(tasks as f64 / last.duration_since(first).as_secs_f64().max(POLL_INTERVAL.as_secs_f64()));
    latencies_ms.sort_by(f64::total_cmp);
    measurement.pickup_p50_ms = percentile(&latencies_ms, 50.0);
    measurement.pickup_p99_ms = percentile(&latencies_ms, 99.0);
    Ok(measurement)
}
