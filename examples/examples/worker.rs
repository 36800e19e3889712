//! Runs every task type found in some queues of a shared Redis, Go's or ours: prints one line per
//! task handled and fails the tasks whose type starts with `fail:`.
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example worker -- --queues critical,default --concurrency 10 --exit-when-empty
//! ```

use clap::Parser;
use rasynq::core::Broker;
use rasynq::{Config, HandlerError, Inspector, RedisBroker, Server, handler_fn};
use std::sync::Arc;
use std::time::Duration;

/// Process the tasks of some queues.
#[derive(Debug, Parser)]
struct Args {
    /// The queues to serve, comma-separated, all with the same priority.
    #[arg(long, value_delimiter = ',', default_value = "default")]
    queues: Vec<String>,
    /// The most tasks run at once.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// Exit once the queues have nothing pending, active, or scheduled or retrying within the next 5 seconds.
    #[arg(long)]
    exit_when_empty: bool,
    /// The Redis to use; `redis://`, `rediss://`, `redis-cluster://` or `redis-sentinel://`.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
}

/// Tasks due within this window count as work still to do for `--exit-when-empty`.
const SOON: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let args = Args::parse();
    let broker: Arc<dyn Broker> = Arc::new(RedisBroker::connect(&args.redis_url).await?);
    let config = Config {
        concurrency: args.concurrency,
        queues: args.queues.iter().map(|q| (q.clone(), 1)).collect(),
        delayed_task_check_interval: Duration::from_secs(1),
        ..Config::default()
    };
    let handler = handler_fn(|ctx, task| async move {
        println!(
            "handled {} {} {} {}",
            ctx.queue(),
            ctx.task_id(),
            task.type_name(),
            String::from_utf8_lossy(task.payload())
        );
        if task.type_name().starts_with("fail:") {
            return Err(HandlerError::new(format!("task type {} always fails", task.type_name())));
        }
        Ok(())
    });
    let mut server = Server::from_shared(broker.clone(), config)?;
    if !args.exit_when_empty {
        return Ok(server.run(handler).await?);
    }
    server.start(handler)?;
    let inspector = Inspector::from_shared(broker.clone());
    while has_work(&inspector, &args.queues).await? {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.shutdown().await;
    Ok(())
}

/// True while a queue has pending or active tasks, or scheduled or retry tasks due soon.
async fn has_work(inspector: &Inspector, queues: &[String]) -> anyhow::Result<bool> {
    use rasynq::TaskState;
    use rasynq::core::broker::Page;
    let soon = std::time::SystemTime::now() + SOON; // allow: wall-clock
    for queue in queues {
        let info = match inspector.queue_info(queue).await {
            Ok(info) => info,
            Err(rasynq::Error::QueueNotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        if info.pending > 0 || info.active > 0 {
            return Ok(true);
        }
        for state in [TaskState::Scheduled, TaskState::Retry] {
            let first = inspector.list_tasks(queue, state, Page { size: 1, number: 0 }).await?;
            if first.iter().any(|t| t.next_process_at.is_some_and(|at| at <= soon)) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}
