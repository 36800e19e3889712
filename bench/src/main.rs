//! `asynq-bench`: runs one end-to-end benchmark scenario against a Redis and prints its
//! [`Measurement`](asynq_bench::Measurement) as one JSON line on stdout.
//!
//! `cargo xtask bench` runs it once per scenario and run, measuring Redis around each process;
//! run by hand, it needs a Redis of its own, as the scenarios leave tasks and counters behind:
//!
//! ```text
//! asynq-bench --redis-url redis://127.0.0.1:6390 fill --tasks 100000
//! asynq-bench --redis-url redis://127.0.0.1:6390 drain --tasks 100000 --concurrency 10
//! ```

use asynq_bench::{Measurement, scenarios};
use clap::{Parser, Subcommand};
use std::time::Duration;

/// Run one asynq benchmark scenario and print its measurement as JSON.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    /// The Redis to run against. Scenarios leave tasks and counters behind: use a private one.
    #[arg(long, env = "REDIS_URL")]
    redis_url: String,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Debug, Subcommand)]
enum Scenario {
    /// The baseline: `PING` round trips on one connection, `--pipeline` commands each.
    RedisPing {
        /// Commands in all (rounded up to whole pipelines).
        #[arg(long, default_value_t = 100_000)]
        commands: u64,
        #[arg(long, default_value_t = 1)]
        pipeline: usize,
    },
    /// The baseline of scripts: `HGET`s made by `redis.call` from Lua, many per `EVAL`.
    RedisCallsFromLua {
        /// Calls in all (rounded up to whole `EVAL`s).
        #[arg(long, default_value_t = 100_000)]
        calls: u64,
    },
    /// Enqueue tasks one at a time, each awaited before the next.
    Enqueue {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        /// Wait for each reply busy for up to this many microseconds (`Client::with_spin_wait`).
        #[arg(long)]
        spin_wait_us: Option<u64>,
        /// Run the producer on a current-thread runtime of its own, where the thread that
        /// enqueues also reads the socket, instead of on a worker of the multi-thread runtime.
        #[arg(long)]
        current_thread: bool,
    },
    /// Enqueue tasks with `Client::enqueue_batch`, one batch at a time.
    EnqueueBatch {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 100)]
        batch_size: usize,
        /// Schedule the tasks an hour ahead instead of making them pending.
        #[arg(long)]
        scheduled: bool,
        /// Keep an event log of about this many events on the queue first.
        #[arg(long)]
        events: Option<u32>,
    },
    /// Enqueue tasks one at a time from many concurrent producers sharing one client.
    EnqueueConcurrent {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 64)]
        producers: usize,
    },
    /// Enqueue tasks as fast as possible, to prepare `drain`.
    Fill {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        /// Keep an event log of about this many events on the queue first (the drain that
        /// follows writes to it too).
        #[arg(long)]
        events: Option<u32>,
    },
    /// Prepare `fail-for-good`: archive `--archived` tasks (enqueued, then archived at once by
    /// the inspector), then enqueue `--tasks` tasks with `max_retry` 0.
    FillFailing {
        #[arg(long, default_value_t = 20_000)]
        tasks: u64,
        /// Tasks in the archive first; 10 000 puts it at its cap.
        #[arg(long, default_value_t = 0)]
        archived: u64,
    },
    /// Run a server whose handler always fails until the queue's processed counter reaches
    /// `--tasks` (`fill-failing` first): each task fails for good into the archive.
    FailForGood {
        #[arg(long, default_value_t = 20_000)]
        tasks: u64,
        #[arg(long, default_value_t = 100)]
        concurrency: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Prepare `scheduled-storm`: schedule `--tasks` tasks an hour ahead, all due at one second.
    FillScheduled {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
    },
    /// Time one bulk operator action on the queue's `--tasks` tasks, after `fill` (`archive`,
    /// `delete`, `remove`: the pending tasks; `remove` is a forced queue removal) or
    /// `fill-scheduled` (`run`: the scheduled tasks).
    Bulk {
        #[arg(long, value_enum)]
        action: scenarios::BulkKind,
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
    },
    /// Start a server that sees the `--tasks` scheduled tasks of `fill-scheduled` due at once,
    /// and sample the pickup of fresh tasks in another queue while they are forwarded.
    ScheduledStorm {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Idle time before each fresh task's enqueue, in milliseconds.
        #[arg(long, default_value_t = 5)]
        gap_ms: u64,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Run a server until the queue's processed counter reaches `--tasks` (fill it first); run
    /// several at once to drain one queue with several processes.
    Drain {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
        /// Serve this many empty queues beside the busy one, all of the same weight.
        #[arg(long, default_value_t = 0)]
        empty_queues: usize,
    },
    /// Enqueue `--tasks` tasks, then run `--servers` servers (each with its own connection)
    /// under a concurrency limit of `--limit` shared by all, each task taking `--work-ms`; timed
    /// until all are processed, reporting the most that ran at once.
    SharedLimitWait {
        #[arg(long, default_value_t = 12)]
        tasks: u64,
        #[arg(long, default_value_t = 2)]
        servers: usize,
        #[arg(long, default_value_t = 2)]
        limit: u32,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        #[arg(long, default_value_t = 300)]
        work_ms: u64,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 120)]
        timeout_secs: u64,
    },
    /// With an idle server of `--concurrency`, schedule `--tasks` tasks to fall due over
    /// `--spread-secs`; reports how late each started after its due second (p50, p99).
    ScheduledOnTime {
        #[arg(long, default_value_t = 200)]
        tasks: u64,
        #[arg(long, default_value_t = 8)]
        spread_secs: u64,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 60)]
        timeout_secs: u64,
    },
    /// Like `drain`, with a handler that runs `--steps` durable steps per task.
    StepsDrain {
        #[arg(long, default_value_t = 20_000)]
        tasks: u64,
        #[arg(long, default_value_t = 5)]
        steps: usize,
        #[arg(long, default_value_t = 100)]
        concurrency: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// On a Redis Cluster: declare the logical queue `sharded` with `--shards` shards, then
    /// enqueue `--tasks` tasks into it in batches from `--producers` producers sharing one
    /// client, which places them on the shards in turn.
    ShardedFill {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 2)]
        shards: usize,
        #[arg(long, default_value_t = 1)]
        producers: usize,
    },
    /// Run a server serving the sharded queue `sharded` by its logical name until its shards'
    /// processed counters add up to `--tasks` (`sharded-fill` first); run several at once to
    /// drain it with several processes. Reports the tasks its own handler ran.
    ShardedDrain {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 100)]
        concurrency: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Check, after `sharded-drain`, that every one of the `--tasks` tasks ran: nothing left in
    /// the sharded queue, all processed, none failed.
    ShardedCheck {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
    },
    /// Run a server while enqueueing tasks one at a time, until all are processed.
    EnqueueAndProcess {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Run a server while `--producers` producers sharing one client enqueue `--tasks` tasks at
    /// an offered load of `--rate` tasks/s in all, by a fixed timetable (open loop); without
    /// `--rate`, as fast as they can. Reports the pickup of every task.
    Stream {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        /// Tasks per second offered, all producers together; as fast as possible without.
        #[arg(long)]
        rate: Option<f64>,
        #[arg(long, default_value_t = 4)]
        producers: usize,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Store a fan-out of `--members` tasks and one fan-in task, and run them with a server,
    /// until the fan-in task ran: as a workflow (a chord), or with `--plain` as plain batch
    /// enqueues, for comparison.
    FanIn {
        #[arg(long, default_value_t = 10_000)]
        members: u64,
        #[arg(long, default_value_t = 100)]
        concurrency: usize,
        /// The same tasks, enqueued plainly, with nothing waiting for anything.
        #[arg(long)]
        plain: bool,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Measure enqueue-to-handler-start latency on an idle server, one task at a time.
    PickupLatency {
        /// Stop after this many samples...
        #[arg(long, default_value_t = 2_000)]
        samples: u64,
        /// ...or after this many seconds, whichever comes first.
        #[arg(long, default_value_t = 20)]
        max_secs: u64,
        /// Idle time before each enqueue, in milliseconds.
        #[arg(long, default_value_t = 5)]
        gap_ms: u64,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Serve this many empty queues beside the sampled one, all of the same weight.
        #[arg(long, default_value_t = 0)]
        empty_queues: usize,
        /// Serve the pattern `tenant:*` instead, with this many empty tenant queues registered
        /// beside the sampled `tenant:quiet`.
        #[arg(long, default_value_t = 0)]
        tenants: usize,
        /// With `--tenants`: fill `tenant:busy` with this many tasks first, which the server
        /// drains while the quiet tenant's tasks are sampled.
        #[arg(long, default_value_t = 0)]
        busy_backlog: u64,
        /// Run the server without `Config::start_with_fetch`: the start of the tasks a fetch
        /// runs at once is recorded in a round trip of its own, not by the fetch.
        #[arg(long)]
        start_record_apart: bool,
    },
    /// Prepare the group scenarios: one grouped task in each of `--groups` groups.
    FillGroups {
        #[arg(long, default_value_t = 100_000)]
        groups: u64,
    },
    /// Run a server with a group aggregator (no group ever ready) for a while, after
    /// `fill-groups`.
    IdleAggregator {
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
    },
    /// Time the operator reads of a queue of `--groups` groups, after `fill-groups`.
    GroupReads {
        #[arg(long, default_value_t = 100_000)]
        groups: u64,
    },
    /// Run a server on three empty queues for a while.
    Idle {
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Serve this many empty queues of the same weight instead of the three usual ones.
        #[arg(long)]
        queues: Option<usize>,
        /// Serve the pattern `tenant:*` instead, with this many empty tenant queues registered.
        #[arg(long)]
        tenants: Option<usize>,
        /// Run this many servers on the three usual queues instead, each with its own connection,
        /// and time `Inspector::servers()` at the end.
        #[arg(long, conflicts_with_all = ["queues", "tenants"])]
        servers: Option<usize>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    // On a worker thread, as an application's request handlers are: `main`'s own future runs
    // outside the worker pool, so each Redis reply would have to cross threads to reach it.
    let measurement = tokio::spawn(async move { run(&cli.redis_url, cli.scenario).await }).await??;
    println!("{}", serde_json::to_string(&measurement)?);
    Ok(())
}

async fn run(url: &str, scenario: Scenario) -> anyhow::Result<Measurement> {
    match scenario {
        Scenario::RedisPing { commands, pipeline } => scenarios::redis_ping(url, commands, pipeline).await,
        Scenario::RedisCallsFromLua { calls } => scenarios::redis_calls_from_lua(url, calls).await,
        Scenario::Enqueue { tasks, spin_wait_us, current_thread } => {
            let spin_wait = spin_wait_us.map(Duration::from_micros);
            if current_thread {
                let url = url.to_owned();
                tokio::task::spawn_blocking(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?
                        .block_on(scenarios::enqueue(&url, tasks, spin_wait))
                })
                .await?
            } else {
                scenarios::enqueue(url, tasks, spin_wait).await
            }
        }
        Scenario::EnqueueBatch { tasks, batch_size, scheduled, events } => {
            scenarios::enqueue_batch(url, tasks, batch_size, scheduled, events).await
        }
        Scenario::EnqueueConcurrent { tasks, producers } => scenarios::enqueue_concurrent(url, tasks, producers).await,
        Scenario::Fill { tasks, events } => scenarios::fill(url, tasks, events).await,
        Scenario::Drain { tasks, concurrency, timeout_secs, empty_queues } => {
            scenarios::drain(url, tasks, concurrency, empty_queues, Duration::from_secs(timeout_secs)).await
        }
        Scenario::SharedLimitWait { tasks, servers, limit, concurrency, work_ms, timeout_secs } => {
            let (work, timeout) = (Duration::from_millis(work_ms), Duration::from_secs(timeout_secs));
            asynq_bench::limits::shared_limit_wait(url, tasks, servers, limit, concurrency, work, timeout).await
        }
        Scenario::ScheduledOnTime { tasks, spread_secs, concurrency, timeout_secs } => {
            let (spread, timeout) = (Duration::from_secs(spread_secs), Duration::from_secs(timeout_secs));
            asynq_bench::schedule::scheduled_on_time(url, tasks, spread, concurrency, timeout).await
        }
        Scenario::StepsDrain { tasks, steps, concurrency, timeout_secs } => {
            asynq_bench::steps::steps_drain(url, tasks, steps, concurrency, Duration::from_secs(timeout_secs)).await
        }
        Scenario::ShardedFill { tasks, shards, producers } => {
            scenarios::sharded_fill(url, tasks, shards, producers).await
        }
        Scenario::ShardedDrain { tasks, concurrency, timeout_secs } => {
            scenarios::sharded_drain(url, tasks, concurrency, Duration::from_secs(timeout_secs)).await
        }
        Scenario::ShardedCheck { tasks } => scenarios::sharded_check(url, tasks).await,
        Scenario::EnqueueAndProcess { tasks, concurrency, timeout_secs } => {
            scenarios::enqueue_and_process(url, tasks, concurrency, Duration::from_secs(timeout_secs)).await
        }
        Scenario::Stream { tasks, rate, producers, concurrency, timeout_secs } => {
            scenarios::stream(url, tasks, rate, producers, concurrency, Duration::from_secs(timeout_secs)).await
        }
        Scenario::FanIn { members, concurrency, plain, timeout_secs } => {
            scenarios::fan_in(url, members, concurrency, !plain, Duration::from_secs(timeout_secs)).await
        }
        Scenario::PickupLatency {
            samples,
            max_secs,
            gap_ms,
            concurrency,
            empty_queues,
            tenants,
            busy_backlog,
            start_record_apart,
        } => {
            let (gap, max) = (Duration::from_millis(gap_ms), Duration::from_secs(max_secs));
            let layout = match tenants {
                0 => scenarios::Layout::Named { empty_queues },
                tenants => scenarios::Layout::Tenants { tenants, busy_backlog },
            };
            scenarios::pickup_latency(url, samples, concurrency, layout, !start_record_apart, gap, max).await
        }
        Scenario::FillFailing { tasks, archived } => scenarios::fill_failing(url, tasks, archived).await,
        Scenario::FailForGood { tasks, concurrency, timeout_secs } => {
            scenarios::fail_for_good(url, tasks, concurrency, Duration::from_secs(timeout_secs)).await
        }
        Scenario::FillScheduled { tasks } => scenarios::fill_scheduled(url, tasks).await,
        Scenario::Bulk { action, tasks } => scenarios::bulk(url, action, tasks).await,
        Scenario::ScheduledStorm { tasks, concurrency, gap_ms, timeout_secs } => {
            let (gap, timeout) = (Duration::from_millis(gap_ms), Duration::from_secs(timeout_secs));
            scenarios::scheduled_storm(url, tasks, concurrency, gap, timeout).await
        }
        Scenario::FillGroups { groups } => scenarios::fill_groups(url, groups).await,
        Scenario::IdleAggregator { seconds, concurrency } => {
            scenarios::idle_aggregator(url, concurrency, Duration::from_secs(seconds)).await
        }
        Scenario::GroupReads { groups } => scenarios::group_reads(url, groups).await,
        Scenario::Idle { seconds, concurrency, servers: Some(servers), .. } => {
            scenarios::idle_servers(url, servers, concurrency, Duration::from_secs(seconds)).await
        }
        Scenario::Idle { seconds, concurrency, queues, tenants, servers: None } => {
            let layout = match (queues, tenants) {
                (_, Some(tenants)) => Some(scenarios::Layout::Tenants { tenants, busy_backlog: 0 }),
                // The sampled queue and the rest empty: `queues` in all.
                (Some(queues), None) => Some(scenarios::Layout::Named { empty_queues: queues.saturating_sub(1) }),
                (None, None) => None,
            };
            scenarios::idle(url, concurrency, layout, Duration::from_secs(seconds)).await
        }
    }
}
