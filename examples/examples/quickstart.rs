//! The quickstart: one process enqueues a realistic mix of tasks and processes them, showing
//! tasks move through every state. It runs on the embedded memory broker, or on Redis when
//! `REDIS_URL` is set; on a Redis that other work shares, it follows the tasks it enqueued (by
//! their IDs) and ends when they have settled, whatever else waits in its queues.
//!
//! ```text
//! cargo run --release --example quickstart
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example quickstart
//! ```

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use rasynq::TaskState;
use rasynq::core::Broker;
use rasynq::{
    Client, Config, HandlerError, Inspector, MemoryBroker, RedisBroker, ServeMux, Server, Task, TaskContext,
    TaskOptions, aggregator_fn,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const QUEUES: [(&str, u32); 3] = [("critical", 6), ("default", 3), ("low", 1)];

/// The mix: (type, how many, options, what the handler does with it).
fn workload() -> Vec<(&'static str, usize, TaskOptions)> {
    let secs = Duration::from_secs;
    vec![
        // Immediate work spread over the three queues.
        ("email:send", 60, TaskOptions::new().queue("critical")),
        ("email:digest", 50, TaskOptions::new()),
        ("analytics:rollup", 40, TaskOptions::new().queue("low")),
        // Due a few seconds from now.
        ("report:generate", 20, TaskOptions::new().process_in(secs(3))),
        // Fail twice, then succeed on the second retry.
        ("payment:charge", 20, TaskOptions::new().queue("critical").max_retry(5)),
        // Always fail: archived after two retries.
        ("image:resize", 10, TaskOptions::new().max_retry(2)),
        // A payload that does not decode as a `Webhook`: archived at once, since retrying
        // cannot fix it.
        ("webhook:deliver", 10, TaskOptions::new().queue("low")),
        // Succeed and keep their result for an hour.
        ("thumbnail:render", 20, TaskOptions::new().retention(secs(3600))),
        // Wait in a group; the aggregator turns each group into one `notify:digest` task.
        ("notify:event", 30, TaskOptions::new().queue("low").group("user:42")),
    ]
}

/// The payload of every task of the mix.
#[derive(Serialize, Deserialize)]
struct Work {
    n: usize,
}

/// What `webhook:deliver` expects, and the mix does not send.
#[derive(Deserialize)]
struct Webhook {
    url: String,
}

/// The result `thumbnail:render` keeps.
#[derive(Serialize, Deserialize)]
struct Thumbnail {
    file: String,
    bytes: usize,
}

/// The `notify:digest` tasks the aggregator made, and those run: the grouped tasks' IDs are gone
/// once aggregated, so the digests are followed by count.
#[derive(Default)]
struct Digests {
    made: AtomicUsize,
    run: AtomicUsize,
}

fn handlers(digests: Arc<Digests>) -> ServeMux {
    let mut mux = ServeMux::new();
    let work = |ms: u64| tokio::time::sleep(Duration::from_millis(ms));
    mux.handle_fn("email:", move |_ctx, _task| async move {
        work(20).await;
        Ok(())
    });
    mux.handle_fn("analytics:rollup", move |_ctx, _task| async move {
        work(40).await;
        Ok(())
    });
    mux.handle_fn("report:generate", move |ctx, _task| async move {
        // A longer task says how far it has come: the inspector, `asynq task inspect` and the
        // dashboard show its last report while it runs (written at most once a second).
        for section in 1..=4 {
            work(25).await;
            ctx.progress().report(f64::from(section) / 4.0, format!("section {section} of 4"))?;
        }
        Ok(())
    });
    mux.handle_fn("payment:charge", |ctx, _task| async move {
        if ctx.retry_count() < 2 {
            return Err(HandlerError::new("card processor timed out"));
        }
        Ok(())
    });
    mux.handle_fn("image:resize", |_ctx, _task| async { Err(HandlerError::new("unsupported image format")) });
    mux.handle_json("webhook:deliver", |_ctx: TaskContext, hook: Webhook| async move {
        println!("delivering to {}", hook.url);
        Ok(())
    });
    mux.handle_fn("notify:digest", move |_ctx, task| {
        let digests = digests.clone();
        async move {
            // The aggregated payload carries every grouped event.
            assert!(!task.payload().is_empty());
            work(20).await;
            digests.run.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    });
    mux.handle_json("thumbnail:render", |ctx: TaskContext, work: Work| async move {
        let thumbnail = Thumbnail { file: format!("{}.png", ctx.task_id()), bytes: 1_000 + work.n * 100 };
        ctx.result_writer().write_json(&thumbnail).await?;
        Ok(())
    });
    mux
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let broker: Arc<dyn Broker> = match std::env::var("REDIS_URL") {
        Ok(url) => {
            println!("Using Redis at {url}");
            Arc::new(RedisBroker::connect(&url).await?)
        }
        Err(_) => Arc::new(MemoryBroker::new()),
    };
    let started = Instant::now();
    let client = Client::from_shared(broker.clone());
    let inspector = Inspector::from_shared(broker.clone());
    let digests = Arc::new(Digests::default());
    let made = digests.clone();

    let config = Config {
        concurrency: 10,
        queues: QUEUES.iter().map(|(q, p)| ((*q).to_owned(), *p)).collect(),
        // Short delays so the demo finishes in seconds; production keeps the defaults
        // (exponential backoff from 15 s, forwarding every 5 s, cleaning every 8 s).
        retry_delay: Arc::new(|_, _, _| Duration::from_millis(500)),
        delayed_task_check_interval: Duration::from_millis(250),
        janitor_interval: Duration::from_secs(1),
        group_aggregator: Some(Arc::new(aggregator_fn(move |group, tasks| {
            made.made.fetch_add(1, Ordering::SeqCst);
            let events: Vec<String> = tasks.iter().map(|t| String::from_utf8_lossy(t.payload()).into_owned()).collect();
            Task::new("notify:digest", format!("{{\"group\":\"{group}\",\"events\":[{}]}}", events.join(",")))
        }))),
        group_grace_period: Duration::from_secs(1),
        ..Config::default()
    };
    let mut server = Server::from_shared(broker.clone(), config)?;
    server.start(handlers(digests.clone()))?;

    // The tasks of this run, by ID: other work may share the queues (on a shared Redis), and
    // earlier runs leave archived and completed tasks behind.
    let mut tasks = Vec::new();
    for (type_name, count, options) in workload() {
        for i in 0..count {
            let info = client
                .enqueue(&Task::json(type_name, &Work { n: i })?, options.clone())
                .await
                .with_context(|| format!("enqueue {type_name}"))?;
            tasks.push(Followed { queue: info.queue.to_string(), id: info.id.to_string(), type_name, state: None });
        }
    }
    let total = tasks.len();

    let bar = ProgressBar::new(total as u64);
    bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} settled  {msg}")?);
    let mut last_line = Instant::now();
    loop {
        let sum = follow(&inspector, &mut tasks).await?;
        let digests_left = digests.made.load(Ordering::SeqCst).saturating_sub(digests.run.load(Ordering::SeqCst));
        let settled = total - sum.unsettled();
        bar.set_position(settled as u64);
        let states = format!(
            "pending {} active {} scheduled {} retry {} aggregating {} archived {} completed {} digests to run {}",
            sum.pending,
            sum.active,
            sum.scheduled,
            sum.retry,
            sum.aggregating,
            sum.archived,
            sum.completed,
            digests_left
        );
        let done = settled == total && digests_left == 0;
        if bar.is_hidden() {
            // Not a terminal: print the same line, less often.
            if last_line.elapsed() >= Duration::from_millis(500) || done {
                println!("{settled}/{total} settled  {states}");
                last_line = Instant::now();
            }
        }
        bar.set_message(states);
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bar.finish();
    server.shutdown().await;

    println!();
    println!("The queues as a whole (on a shared Redis, other work and earlier runs included):");
    println!(
        "{:<10} {:>8} {:>7} {:>10} {:>6} {:>12} {:>9} {:>10} {:>10} {:>7}",
        "queue",
        "pending",
        "active",
        "scheduled",
        "retry",
        "aggregating",
        "archived",
        "completed",
        "processed",
        "failed"
    );
    for (queue, _) in QUEUES {
        let q = inspector.queue_info(queue).await?;
        println!(
            "{:<10} {:>8} {:>7} {:>10} {:>6} {:>12} {:>9} {:>10} {:>10} {:>7}",
            q.queue,
            q.pending,
            q.active,
            q.scheduled,
            q.retry,
            q.aggregating,
            q.archived,
            q.completed,
            q.processed_total,
            q.failed_total
        );
    }
    let sum = follow(&inspector, &mut tasks).await?;
    let grouped = tasks.iter().filter(|t| t.type_name == "notify:event").count();
    println!();
    println!(
        "This run: {total} tasks enqueued: {} deleted after success, {} completed with results kept, {} archived, \
         {grouped} aggregated into {} digest task(s).",
        sum.gone - grouped,
        sum.completed,
        sum.archived,
        digests.run.load(Ordering::SeqCst)
    );
    let first = |type_name: &str, state: TaskState| {
        tasks.iter().find(|t| t.type_name == type_name && t.state == Some(Settled::Kept(state)))
    };
    if let Some(t) = first("thumbnail:render", TaskState::Completed)
        && let Some(thumbnail) = inspector.task_info(&t.queue, &t.id).await?.json_result::<Thumbnail>()?
    {
        println!("A kept result, decoded: {} of {} bytes.", thumbnail.file, thumbnail.bytes);
    }
    if let Some(t) = first("webhook:deliver", TaskState::Archived) {
        let task = inspector.task_info(&t.queue, &t.id).await?;
        println!("Why a {} task was archived: {}", task.type_name, task.last_error.unwrap_or_default());
    }
    println!("Finished in {:.1} s.", started.elapsed().as_secs_f64());
    Ok(())
}

/// One task of this run, and where it ended once it settled.
struct Followed {
    queue: String,
    id: String,
    type_name: &'static str,
    state: Option<Settled>,
}

/// How a task settled: kept archived or completed, or gone (deleted after success, or
/// aggregated into a digest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    Kept(TaskState),
    Gone,
}

/// How many of this run's tasks are in each state.
#[derive(Default)]
struct Totals {
    pending: usize,
    active: usize,
    scheduled: usize,
    retry: usize,
    aggregating: usize,
    archived: usize,
    completed: usize,
    gone: usize,
}

impl Totals {
    fn unsettled(&self) -> usize {
        self.pending + self.active + self.scheduled + self.retry + self.aggregating
    }
}

/// Looks again at each task of this run not yet settled, and counts them all by state.
async fn follow(inspector: &Inspector, tasks: &mut [Followed]) -> anyhow::Result<Totals> {
    let mut t = Totals::default();
    for task in tasks.iter_mut() {
        if task.state.is_none() {
            match inspector.task_info(&task.queue, &task.id).await {
                Ok(info) => match info.state {
                    TaskState::Pending => t.pending += 1,
                    TaskState::Active => t.active += 1,
                    TaskState::Scheduled => t.scheduled += 1,
                    TaskState::Retry => t.retry += 1,
                    TaskState::Aggregating => t.aggregating += 1,
                    state @ (TaskState::Archived | TaskState::Completed) => task.state = Some(Settled::Kept(state)),
                    other => anyhow::bail!("task {} is {other:?}, which the quickstart does not make", task.id),
                },
                Err(rasynq::Error::TaskNotFound { .. } | rasynq::Error::QueueNotFound { .. }) => {
                    task.state = Some(Settled::Gone);
                }
                Err(e) => return Err(e.into()),
            }
        }
        match task.state {
            Some(Settled::Kept(TaskState::Archived)) => t.archived += 1,
            Some(Settled::Kept(_)) => t.completed += 1,
            Some(Settled::Gone) => t.gone += 1,
            None => {}
        }
    }
    Ok(t)
}
