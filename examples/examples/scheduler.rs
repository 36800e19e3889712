//! Periodic tasks: a scheduler enqueues a ping every second and a report at 09:00 on weekdays,
//! Paris time, and a worker server runs them. Two replicas of the scheduler run side by side, as
//! two processes of a deployment would, and still enqueue each ping once. Runs on the embedded
//! memory broker, or on Redis when `REDIS_URL` is set, and exits after a few pings (`PINGS`, 3 by
//! default).
//!
//! On Redis an operator can watch it: `asynq cron ls` lists both replicas' entries,
//! `asynq cron history <entry ID>` the pings enqueued, and the dashboard's Schedulers page both.
//!
//! ```text
//! cargo run --example scheduler
//! REDIS_URL=redis://127.0.0.1:6379 PINGS=60 cargo run --example scheduler
//! ```

use rasynq::core::Broker;
use rasynq::{Config, MemoryBroker, RedisBroker, Scheduler, SchedulerConfig, ServeMux, Server, Task, TaskOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let pings = match std::env::var("PINGS") {
        Ok(n) => n.parse().map_err(|e| anyhow::anyhow!("PINGS={n:?} is not a count: {e}"))?,
        Err(_) => 3,
    };
    match std::env::var("REDIS_URL") {
        Ok(url) => {
            println!("Using Redis at {url}");
            run(RedisBroker::connect(&url).await?, pings).await
        }
        Err(_) => run(MemoryBroker::new(), pings).await,
    }
}

/// Runs two scheduler replicas and a server on `broker` until the server ran `pings` pings.
async fn run<B: Broker + Clone>(broker: B, pings: usize) -> anyhow::Result<()> {
    let mut replicas = Vec::new();
    for _ in 0..2 {
        let config = SchedulerConfig { location: "Europe/Paris".to_owned(), ..SchedulerConfig::default() };
        let mut scheduler = Scheduler::new(broker.clone(), config)?;
        let periodic = TaskOptions::new().queue("periodic");
        scheduler.register("@every 1s", Task::new("health:ping", ""), periodic.clone())?;
        scheduler.register("0 9 * * 1-5", Task::new("report:daily", ""), periodic.max_retry(3))?;
        scheduler.start()?;
        replicas.push(scheduler);
    }

    // What `asynq cron ls` shows (on Redis): every replica's entries, as the heartbeat wrote
    // them at start (on a shared Redis, other live schedulers' entries too).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let now = SystemTime::now();
    for entry in broker.scheduler_entries().await? {
        let next = entry.next.and_then(|t| t.duration_since(now).ok()).unwrap_or_default();
        println!(
            "entry {}  {:<12} {:<13} next in {:>6} s  {:?}",
            entry.id,
            entry.spec,
            entry.task_type,
            next.as_secs(),
            entry.options
        );
    }

    let pinged = Arc::new(AtomicUsize::new(0));
    let counted = pinged.clone();
    let started = Instant::now();
    let mut mux = ServeMux::new();
    mux.handle_fn("health:ping", move |ctx, _task| {
        counted.fetch_add(1, Ordering::SeqCst);
        println!("{:>5.1}s  ping {}", started.elapsed().as_secs_f64(), ctx.task_id());
        async { Ok(()) }
    });
    mux.handle_fn("report:daily", |_ctx, _task| async { Ok(()) });
    let config = Config { queues: [("periodic".to_owned(), 1)].into(), ..Config::default() };
    let mut server = Server::new(broker.clone(), config)?;
    server.start(mux)?;

    while pinged.load(Ordering::SeqCst) < pings {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for scheduler in &mut replicas {
        scheduler.shutdown().await;
    }
    server.shutdown().await;
    println!("{} pings from two scheduler replicas, each enqueued once", pinged.load(Ordering::SeqCst));
    Ok(())
}
