//! The end-to-end scenarios, each against the Redis at a given URL. Each connects, runs its
//! timed phase and returns its [`Measurement`]; none flushes Redis, which is the caller's job.
//!
//! Scenarios that process tasks wait until the queue's processed counter reaches the target,
//! reading it every [`POLL_INTERVAL`]: a counter in Redis, rather than in the handler, also
//! counts the tasks finished by other processes and waits for the last acknowledgements to be
//! written. The counters are read with one `MGET`, not [`Inspect::queue_info`], whose dozen
//! commands (a memory sample among them) would weigh on the Redis work measured per task.

use crate::measure::{Measurement, Timer, percentile};
use crate::workload::{self, IDLE_QUEUES, QUEUE};
use anyhow::{Context as _, bail, ensure};
use asynq_client::{Client, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Inspect;
use asynq_core::{Clock, SystemClock};
use asynq_redis::RedisBroker;
use asynq_redis::keys::Namespace;
use asynq_server::{Config, HandlerError, Server, TaskContext, handler_fn};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, UNIX_EPOCH};
use tokio::sync::mpsc;

/// How often the processed counter is polled while waiting for a queue to drain.
pub const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// How many tasks one [`fill`] call sends in one batch.
const FILL_BATCH: usize = 1_000;

/// How far ahead `enqueue-batch --scheduled` schedules its tasks: past the end of any run.
const SCHEDULED_AHEAD: Duration = Duration::from_secs(3600);

/// How long `pickup-latency` waits for one task to start before giving up.
const PICKUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The baseline the other scenarios are bounded by: `commands` `PING`s (rounded up to whole
/// pipelines) on one connection, `pipeline` per round trip, each round trip awaited before the
/// next. With `pipeline` 1 this is the rate of Redis round trips on this machine.
pub async fn redis_ping(redis_url: &str, commands: u64, pipeline: usize) -> anyhow::Result<Measurement> {
    ensure!(pipeline > 0, "the pipeline must hold at least one command");
    let round_trips = commands.div_ceil(pipeline as u64);
    let client = redis::Client::open(redis_url).with_context(|| format!("bad Redis URL {redis_url}"))?;
    let mut connection =
        client.get_multiplexed_async_connection().await.with_context(|| format!("could not connect to {redis_url}"))?;
    let mut ping = redis::pipe();
    for _ in 0..pipeline {
        ping.cmd("PING");
    }
    let timer = Timer::start();
    for _ in 0..round_trips {
        let _: Vec<String> = ping.query_async(&mut connection).await.context("PING failed")?;
    }
    Ok(timer.finish("redis-ping", round_trips * pipeline as u64, None, true))
}

/// How many `redis.call`s one `EVAL` of [`redis_calls_from_lua`] makes: a few milliseconds of
/// Redis, well under the 10 ms no command may take.
pub const CALLS_PER_EVAL: u64 = 5_000;

/// The baseline of the scripts' own cost: `calls` `HGET`s of one small hash (rounded up to whole
/// `EVAL`s of [`CALLS_PER_EVAL`]), each made by `redis.call` from Lua. Redis's CPU per call,
/// less the `HGET`'s own time in `INFO commandstats`, is what a script pays to call Redis once:
/// the price of each command our scripts (and Go's) run per task.
pub async fn redis_calls_from_lua(redis_url: &str, calls: u64) -> anyhow::Result<Measurement> {
    let evals = calls.div_ceil(CALLS_PER_EVAL);
    let client = redis::Client::open(redis_url).with_context(|| format!("bad Redis URL {redis_url}"))?;
    let mut connection =
        client.get_multiplexed_async_connection().await.with_context(|| format!("could not connect to {redis_url}"))?;
    let key = "asynq-bench:calls-from-lua";
    let () = redis::cmd("HSET")
        .arg(key)
        .arg(&["msg", &"m".repeat(106), "state", "pending"])
        .query_async(&mut connection)
        .await
        .context("HSET failed")?;
    let script =
        redis::Script::new("for _ = 1, tonumber(ARGV[1]) do redis.call('HGET', KEYS[1], 'state') end return ARGV[1]");
    // Loaded before the timer starts, so the runs below are all EVALSHA.
    let _: String = script.key(key).arg(0).invoke_async(&mut connection).await.context("EVAL failed")?;
    let timer = Timer::start();
    for _ in 0..evals {
        let _: String =
            script.key(key).arg(CALLS_PER_EVAL).invoke_async(&mut connection).await.context("EVAL failed")?;
    }
    let measurement = timer.finish("redis-calls-from-lua", evals * CALLS_PER_EVAL, None, true);
    let () = redis::cmd("DEL").arg(key).query_async(&mut connection).await.context("DEL failed")?;
    Ok(measurement)
}

/// Enqueues `tasks` tasks one at a time, each awaited before the next is sent; with
/// `spin_wait`, waiting for each reply busy for up to that long (`Client::with_spin_wait`).
pub async fn enqueue(redis_url: &str, tasks: u64, spin_wait: Option<Duration>) -> anyhow::Result<Measurement> {
    let mut client = Client::new(connect(redis_url).await?);
    if let Some(budget) = spin_wait {
        client = client.with_spin_wait(budget);
    }
    let task = workload::task();
    let timer = Timer::start();
    for _ in 0..tasks {
        client.enqueue(&task, TaskOptions::new()).await.context("enqueue failed")?;
    }
    Ok(timer.finish("enqueue", tasks, None, true))
}

/// Enqueues `tasks` tasks with [`Client::enqueue_batch`], `batch_size` at a time, each batch
/// awaited before the next is sent; `scheduled`, due in an hour instead of pending; with
/// `events`, into a queue that keeps an event log of about that many events.
pub async fn enqueue_batch(
    redis_url: &str,
    tasks: u64,
    batch_size: usize,
    scheduled: bool,
    events: Option<u32>,
) -> anyhow::Result<Measurement> {
    let broker = connect(redis_url).await?;
    keep_events(&broker, events).await?;
    let client = Client::new(broker);
    let options = if scheduled { TaskOptions::new().process_in(SCHEDULED_AHEAD) } else { TaskOptions::new() };
    let timer = Timer::start();
    enqueue_in_batches(&client, tasks, batch_size, &options).await?;
    Ok(timer.finish("enqueue-batch", tasks, None, true))
}

/// Enqueues `tasks` tasks one at a time from `producers` concurrent tasks sharing one
/// [`Client`], as a service's request handlers do: the client gathers the enqueues that
/// arrive while a call is in flight into one batch call.
pub async fn enqueue_concurrent(redis_url: &str, tasks: u64, producers: usize) -> anyhow::Result<Measurement> {
    ensure!(producers > 0, "there must be at least one producer");
    let client = Client::new(connect(redis_url).await?);
    let task = workload::task();
    let timer = Timer::start();
    let mut running = tokio::task::JoinSet::new();
    for producer in 0..producers as u64 {
        // The first `tasks % producers` producers send one task more.
        let share = tasks / producers as u64 + u64::from(producer < tasks % producers as u64);
        let (client, task) = (client.clone(), task.clone());
        running.spawn(async move {
            for _ in 0..share {
                client.enqueue(&task, TaskOptions::new()).await.context("enqueue failed")?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = running.join_next().await {
        done??;
    }
    Ok(timer.finish("enqueue-concurrent", tasks, Some(producers), true))
}

/// Enqueues `tasks` tasks as fast as the client allows, to prepare a scenario that processes
/// them; the run is measured like the others, but only the queue it leaves matters.
pub async fn fill(redis_url: &str, tasks: u64, events: Option<u32>) -> anyhow::Result<Measurement> {
    let broker = connect(redis_url).await?;
    keep_events(&broker, events).await?;
    let client = Client::new(broker);
    let timer = Timer::start();
    enqueue_in_batches(&client, tasks, FILL_BATCH, &TaskOptions::new()).await?;
    Ok(timer.finish("fill", tasks, None, true))
}

/// Prepares [`fail_for_good`]: archives `archived` tasks first (enqueued, then archived by one
/// `Inspector::archive_all` of the pending tasks, as an operator would), then enqueues `tasks`
/// tasks that fail for good at their first failure (`max_retry` 0). With `archived` at
/// [`asynq_core::ARCHIVE_MAX_SIZE`], every failure that follows lands in an archive at its cap.
pub async fn fill_failing(redis_url: &str, tasks: u64, archived: u64) -> anyhow::Result<Measurement> {
    let broker = connect(redis_url).await?;
    let (client, inspector) = (Client::new(broker.clone()), asynq_client::Inspector::new(broker));
    let timer = Timer::start();
    if archived > 0 {
        enqueue_in_batches(&client, archived, FILL_BATCH, &TaskOptions::new()).await?;
        let pending = asynq_client::TaskSet::State(asynq_client::TaskState::Pending);
        inspector.archive_all(QUEUE, &pending).await.context("archiving the pending tasks failed")?;
    }
    enqueue_in_batches(&client, tasks, FILL_BATCH, &TaskOptions::new().max_retry(0)).await?;
    Ok(timer.finish("fill-failing", tasks, None, true))
}

/// Prepares [`scheduled_storm`]: `tasks` tasks scheduled an hour from now, all at
/// the same whole second.
pub async fn fill_scheduled(redis_url: &str, tasks: u64) -> anyhow::Result<Measurement> {
    let client = Client::new(connect(redis_url).await?);
    let due = SystemClock.now() + SCHEDULED_AHEAD;
    let due = UNIX_EPOCH + Duration::from_secs(due.duration_since(UNIX_EPOCH)?.as_secs());
    let timer = Timer::start();
    enqueue_in_batches(&client, tasks, FILL_BATCH, &TaskOptions::new().process_at(due)).await?;
    Ok(timer.finish("fill-scheduled", tasks, None, true))
}

/// A bulk operator action of the `bulk` scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BulkKind {
    /// `Inspector::archive_all` of the pending tasks.
    Archive,
    /// `Inspector::delete_all` of the pending tasks.
    Delete,
    /// `Inspector::run_all` of the scheduled tasks.
    Run,
    /// `Inspector::delete_queue` with force.
    Remove,
}

/// Times one bulk action on the queue's `tasks` tasks ([`fill`], or [`fill_scheduled`] for
/// [`BulkKind::Run`]), as `asynq task archiveall` and the others run it; fails unless it acted
/// on all of them.
pub async fn bulk(redis_url: &str, kind: BulkKind, tasks: u64) -> anyhow::Result<Measurement> {
    use asynq_client::{BulkAction, TaskSet, TaskState};
    let inspector = asynq_client::Inspector::new(connect(redis_url).await?);
    let pending = TaskSet::State(TaskState::Pending);
    let timer = Timer::start();
    let acted = match kind {
        BulkKind::Archive => inspector.bulk_action(QUEUE, BulkAction::Archive, &pending, |_| {}).await?,
        BulkKind::Delete => inspector.bulk_action(QUEUE, BulkAction::Delete, &pending, |_| {}).await?,
        BulkKind::Run => {
            inspector.bulk_action(QUEUE, BulkAction::Run, &TaskSet::State(TaskState::Scheduled), |_| {}).await?
        }
        BulkKind::Remove => {
            let deleted = std::sync::atomic::AtomicUsize::new(0);
            inspector
                .delete_queue_with_progress(QUEUE, true, |p| {
                    deleted.store(p.done, std::sync::atomic::Ordering::Relaxed)
                })
                .await?;
            deleted.into_inner()
        }
    };
    anyhow::ensure!(acted as u64 == tasks, "the {kind:?} action acted on {acted} of {tasks} tasks");
    Ok(timer.finish("bulk", tasks, None, true))
}

/// Runs a server with `concurrency` on the queue until its processed counter reaches `tasks`,
/// timed from the server's start. The queue must hold the tasks already ([`fill`]); several
/// processes may drain the same queue at once, each waiting for the common total.
///
/// With `empty_queues`, the server serves that many empty queues beside it, all of the same
/// weight: a fetch finds the busy queue first once in `empty_queues + 1` times.
pub async fn drain(
    redis_url: &str,
    tasks: u64,
    concurrency: usize,
    empty_queues: usize,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    run_queue(redis_url, tasks, concurrency, empty_queues, timeout, false).await
}

/// [`drain`], or with `failing` [`fail_for_good`].
async fn run_queue(
    redis_url: &str,
    tasks: u64,
    concurrency: usize,
    empty_queues: usize,
    timeout: Duration,
    failing: bool,
) -> anyhow::Result<Measurement> {
    let monitor = connect(redis_url).await?;
    let info = monitor
        .queue_info(&QueueName::from_static(QUEUE))
        .await
        .with_context(|| format!("queue {QUEUE:?} is empty; fill it first"))?;
    // Another process may be draining it already: count what it took too.
    let available = (info.pending + info.active) as u64 + info.processed_total;
    ensure!(
        available >= tasks,
        "queue {QUEUE:?} holds only {available} tasks (pending, active or processed), not {tasks}; fill it first"
    );
    let config = server_config(concurrency, &with_empty_queues(&[(QUEUE, 1)], empty_queues));
    let mut server = Server::new(connect(redis_url).await?, config)?;
    let timer = Timer::start();
    if failing {
        server.start(handler_fn(fail))?;
    } else {
        server.start(handler_fn(noop))?;
    }
    let waited = wait_until_processed_or_failed(redis_url, tasks, timeout, failing).await;
    let measurement = timer.finish(if failing { "fail-for-good" } else { "drain" }, tasks, Some(concurrency), true);
    server.shutdown().await;
    waited.map(|()| measurement)
}

/// Like [`drain`], with a handler that always fails: the queue must hold tasks that fail for
/// good at once ([`fill_failing`]: `max_retry` 0), so each run of it archives one. Timed until
/// the processed counter (which counts failures too) reaches `tasks`.
pub async fn fail_for_good(
    redis_url: &str,
    tasks: u64,
    concurrency: usize,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    run_queue(redis_url, tasks, concurrency, 0, timeout, true).await
}

/// Starts a server with `concurrency`, then enqueues `tasks` tasks one at a time while it
/// processes them; timed until every task is processed.
pub async fn enqueue_and_process(
    redis_url: &str,
    tasks: u64,
    concurrency: usize,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    let client = Client::new(connect(redis_url).await?);
    let mut server =
        Server::new(connect(redis_url).await?, server_config(concurrency, &with_empty_queues(&[(QUEUE, 1)], 0)))?;
    let task = workload::task();
    let timer = Timer::start();
    server.start(handler_fn(noop))?;
    let result = async {
        for _ in 0..tasks {
            client.enqueue(&task, TaskOptions::new()).await.context("enqueue failed")?;
        }
        wait_until_processed(redis_url, tasks, timeout).await
    }
    .await;
    let measurement = timer.finish("enqueue-and-process", tasks, Some(concurrency), true);
    server.shutdown().await;
    result.map(|()| measurement)
}

/// Producers and a worker server running together: `producers` concurrent producers sharing
/// one [`Client`] enqueue `tasks` tasks into [`QUEUE`] at an offered load of `rate` tasks per
/// second in all (`None`: as fast as they can, each awaiting its enqueue before the next), while
/// a server of `concurrency` runs them; timed from the server's start until every task is
/// processed.
///
/// The load is open-loop: task `i` is due at `i / rate` seconds after the start, by a fixed
/// timetable (shared round-robin among the producers), not a sleep after each send, so a slow
/// enqueue does not lower the load offered after it; tokio's timer wakes producers at 1 ms
/// resolution, so sends due within one millisecond go out together. A producer behind its
/// timetable sends at once. Reports the rate achieved against the timetable
/// ([`Measurement::offered_per_s`]: `tasks` over the time from the start to the last enqueue's
/// return) and the pickup percentiles of every task: from just before its enqueue to the start
/// of its handler, read from a monotonic clock whose reading travels in the task's payload
/// (40 bytes, as the workload's).
pub async fn stream(
    redis_url: &str,
    tasks: u64,
    rate: Option<f64>,
    producers: usize,
    concurrency: usize,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    ensure!(producers > 0, "there must be at least one producer");
    ensure!(rate.is_none_or(|rate| rate > 0.0), "the offered rate must be positive");
    let client = Client::new(connect(redis_url).await?);
    let epoch = Instant::now();
    let latencies_us = Arc::new(std::sync::Mutex::new(Vec::<u64>::with_capacity(tasks as usize)));
    let handler = {
        let latencies_us = latencies_us.clone();
        handler_fn(move |_ctx: TaskContext, task: asynq_core::Task| {
            let started = epoch.elapsed().as_micros() as u64;
            let sent = std::str::from_utf8(task.payload()).ok().and_then(|sent| sent.trim().parse::<u64>().ok());
            if let Some(sent) = sent {
                latencies_us.lock().expect("no handler panics holding it").push(started.saturating_sub(sent));
            }
            async { Ok(()) }
        })
    };
    let mut server =
        Server::new(connect(redis_url).await?, server_config(concurrency, &with_empty_queues(&[(QUEUE, 1)], 0)))?;
    let timer = Timer::start();
    server.start(handler)?;
    let start = tokio::time::Instant::now();
    let interval = rate.map(|rate| Duration::from_secs_f64(1.0 / rate));
    let mut running = tokio::task::JoinSet::new();
    for producer in 0..producers as u64 {
        let client = client.clone();
        running.spawn(async move {
            for i in (producer..tasks).step_by(producers) {
                if let Some(interval) = interval {
                    tokio::time::sleep_until(start + interval.mul_f64(i as f64)).await;
                }
                // The monotonic microseconds since `epoch` at the send, padded to the
                // workload's 40 bytes.
                let payload = format!("{:>40}", epoch.elapsed().as_micros());
                let task = asynq_core::Task::new(workload::TASK_TYPE, payload.into_bytes());
                client.enqueue(&task, TaskOptions::new()).await.context("enqueue failed")?;
            }
            anyhow::Ok(())
        });
    }
    let result = async {
        while let Some(done) = running.join_next().await {
            done??;
        }
        let offered = tasks as f64 / start.elapsed().as_secs_f64();
        wait_until_processed(redis_url, tasks, timeout).await?;
        anyhow::Ok(offered)
    }
    .await;
    let mut measurement = timer.finish("stream", tasks, Some(concurrency), true);
    server.shutdown().await;
    measurement.offered_per_s = Some(result?);
    let mut latencies_ms: Vec<f64> = std::mem::take(&mut *latencies_us.lock().expect("no handler panicked"))
        .into_iter()
        .map(|us| us as f64 / 1e3)
        .collect();
    ensure!(latencies_ms.len() as u64 >= tasks, "only {} of {tasks} tasks reached a handler", latencies_ms.len());
    latencies_ms.sort_by(f64::total_cmp);
    measurement.pickup_p50_ms = percentile(&latencies_ms, 50.0);
    measurement.pickup_p99_ms = percentile(&latencies_ms, 99.0);
    Ok(measurement)
}

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
    async fn prepare(self, redis_url: &str, concurrency: usize) -> anyhow::Result<(Config, &'static str)> {
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
/// sampled one.
pub async fn pickup_latency(
    redis_url: &str,
    samples: u64,
    concurrency: usize,
    layout: Layout,
    gap: Duration,
    max_duration: Duration,
) -> anyhow::Result<Measurement> {
    let client = Client::new(connect(redis_url).await?);
    let (config, sampled) = layout.prepare(redis_url, concurrency).await?;
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

/// Runs a server with `concurrency` on three empty queues ([`IDLE_QUEUES`]), or on the queues
/// of `layout` (the sampled queue included), for `duration`; what it costs Redis meanwhile is
/// measured from outside.
pub async fn idle(
    redis_url: &str,
    concurrency: usize,
    layout: Option<Layout>,
    duration: Duration,
) -> anyhow::Result<Measurement> {
    let config = match layout {
        Some(layout) => layout.prepare(redis_url, concurrency).await?.0,
        None => server_config(concurrency, &with_empty_queues(&IDLE_QUEUES, 0)),
    };
    serve_idle(redis_url, config, "idle", duration).await
}

/// Runs a no-op server with `config` for `duration`, measured as scenario `name`.
async fn serve_idle(redis_url: &str, config: Config, name: &str, duration: Duration) -> anyhow::Result<Measurement> {
    let concurrency = config.concurrency;
    let mut server = Server::new(connect(redis_url).await?, config)?;
    let timer = Timer::start();
    server.start(handler_fn(noop))?;
    tokio::time::sleep(duration).await;
    let measurement = timer.finish(name, 0, Some(concurrency), false);
    server.shutdown().await;
    Ok(measurement)
}

/// How many times `idle --servers` times `Inspector::servers()` after its idle time; it
/// reports the median.
const SERVERS_LS_CALLS: usize = 5;

/// Runs `servers` servers in this process, each with its own connection and `concurrency`, on
/// the three queues of [`IDLE_QUEUES`], for `duration`; what they cost Redis meanwhile is
/// measured from outside. Then times `Inspector::servers()` (what `asynq server ls` calls)
/// 5 times and reports the median as
/// [`Measurement::servers_ls_ms`], after checking that it lists every server.
pub async fn idle_servers(
    redis_url: &str,
    servers: usize,
    concurrency: usize,
    duration: Duration,
) -> anyhow::Result<Measurement> {
    ensure!(servers > 0, "there must be at least one server");
    let config = server_config(concurrency, &with_empty_queues(&IDLE_QUEUES, 0));
    let mut running = Vec::with_capacity(servers);
    for _ in 0..servers {
        running.push(Server::new(connect(redis_url).await?, config.clone())?);
    }
    let timer = Timer::start();
    for server in &mut running {
        server.start(handler_fn(noop))?;
    }
    tokio::time::sleep(duration).await;
    let mut measurement = timer.finish("idle", 0, Some(concurrency), false);
    let inspector = asynq_client::Inspector::new(connect(redis_url).await?);
    let mut listed = Vec::new();
    let mut took_ms = Vec::new();
    for _ in 0..SERVERS_LS_CALLS {
        let started = Instant::now();
        listed = inspector.servers().await.context("Inspector::servers failed")?;
        took_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let mut stopping = tokio::task::JoinSet::new();
    for mut server in running {
        stopping.spawn(async move { server.shutdown().await });
    }
    while stopping.join_next().await.is_some() {}
    ensure!(listed.len() >= servers, "Inspector::servers listed {} servers of {servers}", listed.len());
    took_ms.sort_by(f64::total_cmp);
    measurement.servers_ls_ms = percentile(&took_ms, 50.0);
    Ok(measurement)
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
/// due at one second ([`fill_scheduled`]), which a server started now sees due at once (its
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

/// A fan-out of `members` tasks and one fan-in task, stored and run by one process with a
/// server of `concurrency`: with `workflow`, a chord stored by a `FlowProducer`, each member
/// writing a result and the callback reading every member's (and checking their number);
/// without, the same tasks as plain batch enqueues (500 per call), the callback reading
/// nothing, to set the workflow's cost per member against. Ends when the callback ran.
pub async fn fan_in(
    redis_url: &str,
    members: u64,
    concurrency: usize,
    workflow: bool,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    use asynq_core::workflow::{Flow, ParentOutcome};
    let broker = connect(redis_url).await?;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Result<(), String>>();
    let handler = handler_fn(move |ctx: TaskContext, task: asynq_core::Task| {
        let done_tx = done_tx.clone();
        async move {
            if task.type_name() == "bench:member" {
                ctx.result_writer().write("1").await?;
                return Ok(());
            }
            let parents = ctx.parent_results().await.map_err(HandlerError::new)?;
            let succeeded = parents.iter().filter(|p| matches!(p.outcome, ParentOutcome::Succeeded { .. })).count();
            let outcome = match (workflow, succeeded as u64) {
                (true, n) if n != members => Err(format!("the callback saw {n} succeeded members of {members}")),
                _ => Ok(()),
            };
            let _ = done_tx.send(outcome);
            Ok(())
        }
    });
    let mut server = Server::new(broker.clone(), server_config(concurrency, &with_empty_queues(&[(QUEUE, 1)], 0)))?;
    let member = asynq_core::Task::new("bench:member", workload::task().payload().clone());
    let callback = asynq_core::Task::new("bench:callback", "");
    let timer = Timer::start();
    server.start(handler)?;
    let result = async {
        if workflow {
            let members = (0..members).map(|_| Flow::task(member.clone(), TaskOptions::new()));
            let flow = Flow::chord(members, Flow::task(callback, TaskOptions::new()));
            asynq_client::FlowProducer::new(broker).enqueue(&flow).await.context("storing the workflow failed")?;
        } else {
            let client = Client::new(broker);
            let mut tasks: Vec<(asynq_core::Task, TaskOptions)> =
                (0..members).map(|_| (member.clone(), TaskOptions::new())).collect();
            tasks.push((callback, TaskOptions::new()));
            for batch in tasks.chunks(500) {
                for result in client.enqueue_batch(batch).await {
                    result.context("enqueue failed")?;
                }
            }
        }
        match tokio::time::timeout(timeout, done_rx.recv()).await {
            Ok(Some(outcome)) => outcome.map_err(anyhow::Error::msg),
            _ => bail!("the fan-in task did not run within {timeout:?}"),
        }
    }
    .await;
    let measurement =
        timer.finish(if workflow { "workflow-fan-in" } else { "plain-fan-in" }, members + 1, Some(concurrency), true);
    server.shutdown().await;
    result.map(|()| measurement)
}

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
