//! The quickstart: one process enqueues a realistic mix of tasks and processes them, showing
//! tasks move through every state. It runs on the embedded memory broker, or on Redis when
//! `REDIS_URL` is set.
//!
//! ```text
//! cargo run --release --example quickstart
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example quickstart
//! ```

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use rasynq::TaskState;
use rasynq::core::Broker;
use rasynq::core::broker::Page;
use rasynq::{
    Client, Config, HandlerError, Inspector, MemoryBroker, RedisBroker, ServeMux, Server, Task, TaskContext,
    TaskOptions, aggregator_fn,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
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

fn handlers() -> ServeMux {
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
    mux.handle_fn("notify:digest", move |_ctx, task| async move {
        // The aggregated payload carries every grouped event.
        assert!(!task.payload().is_empty());
        work(20).await;
        Ok(())
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
    // Archived and completed tasks of earlier runs stay in Redis; count only this run's.
    let before = totals(&inspector).await?;

    let config = Config {
        concurrency: 10,
        queues: QUEUES.iter().map(|(q, p)| ((*q).to_owned(), *p)).collect(),
        // Short delays so the demo finishes in seconds; production keeps the defaults
        // (exponential backoff from 15 s, forwarding every 5 s, cleaning every 8 s).
        retry_delay: Arc::new(|_, _, _| Duration::from_millis(500)),
        delayed_task_check_interval: Duration::from_millis(250),
        janitor_interval: Duration::from_secs(1),
        group_aggregator: Some(Arc::new(aggregator_fn(|group, tasks| {
            let events: Vec<String> = tasks.iter().map(|t| String::from_utf8_lossy(t.payload()).into_owned()).collect();
            Task::new("notify:digest", format!("{{\"group\":\"{group}\",\"events\":[{}]}}", events.join(",")))
        }))),
        group_grace_period: Duration::from_secs(1),
        ..Config::default()
    };
    let mut server = Server::from_shared(broker.clone(), config)?;
    server.start(handlers())?;

    let mut total: usize = 0;
    for (type_name, count, options) in workload() {
        for i in 0..count {
            client
                .enqueue(&Task::json(type_name, &Work { n: i })?, options.clone())
                .await
                .with_context(|| format!("enqueue {type_name}"))?;
            total += 1;
        }
    }

    let bar = ProgressBar::new(total as u64);
    bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} settled  {msg}")?);
    let mut last_line = Instant::now();
    loop {
        let sum = totals(&inspector).await?.since(&before);
        let settled = total.saturating_sub(sum.pending + sum.active + sum.scheduled + sum.retry + sum.aggregating);
        bar.set_position(settled as u64);
        let states = format!(
            "pending {} active {} scheduled {} retry {} aggregating {} archived {} completed {}",
            sum.pending, sum.active, sum.scheduled, sum.retry, sum.aggregating, sum.archived, sum.completed
        );
        if bar.is_hidden() {
            // Not a terminal: print the same line, less often.
            if last_line.elapsed() >= Duration::from_millis(500) || settled == total {
                println!("{settled}/{total} settled  {states}");
                last_line = Instant::now();
            }
        }
        bar.set_message(states);
        if settled == total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bar.finish();
    server.shutdown().await;

    println!();
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
    let sum = totals(&inspector).await?.since(&before);
    let grouped = workload().iter().filter(|(name, ..)| *name == "notify:event").map(|(_, n, _)| n).sum::<usize>();
    println!();
    println!(
        "{total} tasks enqueued: {} deleted after success, {} completed with results kept, {} archived, \
         {grouped} aggregated into one digest task.",
        total - sum.archived - sum.completed - grouped,
        sum.completed,
        sum.archived
    );
    let first = async |queue, state| {
        let page = Page { size: 1, number: 0 };
        anyhow::Ok(inspector.list_tasks(queue, state, page).await?.into_iter().next())
    };
    if let Some(task) = first("default", TaskState::Completed).await?
        && let Some(thumbnail) = task.json_result::<Thumbnail>()?
    {
        println!("A kept result, decoded: {} of {} bytes.", thumbnail.file, thumbnail.bytes);
    }
    if let Some(task) = first("low", TaskState::Archived).await? {
        println!("Why a {} task was archived: {}", task.type_name, task.last_error.unwrap_or_default());
    }
    println!("Finished in {:.1} s.", started.elapsed().as_secs_f64());
    Ok(())
}

#[derive(Default)]
struct Totals {
    pending: usize,
    active: usize,
    scheduled: usize,
    retry: usize,
    aggregating: usize,
    archived: usize,
    completed: usize,
}

impl Totals {
    /// These totals less the archived and completed tasks that were there `before`.
    fn since(mut self, before: &Totals) -> Totals {
        self.archived -= before.archived.min(self.archived);
        self.completed -= before.completed.min(self.completed);
        self
    }
}

async fn totals(inspector: &Inspector) -> anyhow::Result<Totals> {
    let mut t = Totals::default();
    for (queue, _) in QUEUES {
        let q = match inspector.queue_info(queue).await {
            Ok(q) => q,
            Err(rasynq::Error::QueueNotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        t.pending += q.pending;
        t.active += q.active;
        t.scheduled += q.scheduled;
        t.retry += q.retry;
        t.aggregating += q.aggregating;
        t.archived += q.archived;
        t.completed += q.completed;
    }
    Ok(t)
}
