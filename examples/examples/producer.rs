//! Enqueues tasks into a Redis shared with other asynq programs, Go's or ours, and prints their
//! IDs.
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example producer -- --queue default --type email:welcome --count 10 --payload '{"user_id":42}'
//! ```

use anyhow::Context;
use clap::Parser;
use rasynq::{Client, RedisBroker, Task, TaskOptions};

/// Enqueue N tasks of one type into one queue.
#[derive(Debug, Parser)]
struct Args {
    /// The queue to enqueue into.
    #[arg(long, default_value = "default")]
    queue: String,
    /// The task type.
    #[arg(long = "type")]
    type_name: String,
    /// How many tasks to enqueue.
    #[arg(long, default_value_t = 1)]
    count: usize,
    /// The payload of every task (JSON by convention, any bytes work).
    #[arg(long, default_value = "")]
    payload: String,
    /// The Redis to use; `redis://`, `rediss://`, `redis-cluster://` or `redis-sentinel://`.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let broker = RedisBroker::connect(&args.redis_url).await?;
    let client = Client::new(broker);
    let task = Task::new(args.type_name.as_str(), args.payload.clone());
    for _ in 0..args.count {
        let info = client
            .enqueue(&task, TaskOptions::new().queue(args.queue.as_str()))
            .await
            .with_context(|| format!("enqueue {} into {}", args.type_name, args.queue))?;
        println!("{}", info.id);
    }
    Ok(())
}
