//! `shared-limit-wait`: servers sharing a concurrency limit on one Redis, each with its own
//! connection as separate processes would have, drain tasks that each take `work`. Timed from the
//! servers' start until the queue's processed counter reaches the task count; reports the most
//! handlers that ran at once. A task over the limit waits for a slot, so the ideal is
//! `ceil(tasks / limit) × work`; any task that was retried fails the run.

use crate::measure::{Measurement, Timer};
use crate::scenarios::{connect, wait_until_processed};
use crate::workload::{self, QUEUE, TASK_TYPE};
use anyhow::{bail, ensure};
use asynq_client::{Client, TaskOptions};
use asynq_server::{Config, HandlerError, Server, TaskContext, handler_fn};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What the handlers saw: how many run now, the most at once, and how many were retries.
#[derive(Debug, Default)]
struct Running {
    now: AtomicU64,
    max: AtomicU64,
    retried: AtomicU64,
}

/// Enqueues `tasks` tasks (untimed), then runs `servers` servers of `concurrency` workers, with
/// a shared limit of `limit` on the benchmark task type, whose handler sleeps `work`.
pub async fn shared_limit_wait(
    redis_url: &str,
    tasks: u64,
    servers: usize,
    limit: u32,
    concurrency: usize,
    work: Duration,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    ensure!(servers > 0 && limit > 0 && concurrency > 0, "servers, limit and concurrency must be at least 1");
    let client = Client::new(connect(redis_url).await?);
    for _ in 0..tasks {
        client.enqueue(&workload::task(), TaskOptions::new().queue(QUEUE)).await?;
    }
    let running = Arc::new(Running::default());
    let mut started = Vec::with_capacity(servers);
    for _ in 0..servers {
        let config = Config {
            concurrency,
            queues: [(QUEUE.to_owned(), 1)].into(),
            shared_type_concurrency: [(TASK_TYPE.to_owned(), limit)].into(),
            ..Config::default()
        };
        started.push((Server::new(connect(redis_url).await?, config)?, Arc::clone(&running)));
    }
    let timer = Timer::start();
    let mut servers = Vec::with_capacity(started.len());
    for (mut server, running) in started {
        server.start(handler_fn(move |ctx: TaskContext, _task| {
            let running = Arc::clone(&running);
            async move {
                if ctx.retry_count() > 0 {
                    running.retried.fetch_add(1, Ordering::SeqCst);
                }
                let now = running.now.fetch_add(1, Ordering::SeqCst) + 1;
                running.max.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(work).await;
                running.now.fetch_sub(1, Ordering::SeqCst);
                Ok::<(), HandlerError>(())
            }
        }))?;
        servers.push(server);
    }
    let waited = wait_until_processed(redis_url, tasks, timeout).await;
    let mut measurement = timer.finish("shared-limit-wait", tasks, Some(concurrency), true);
    for server in &mut servers {
        server.shutdown().await;
    }
    waited?;
    let retried = running.retried.load(Ordering::SeqCst);
    if retried > 0 {
        bail!("{retried} tasks over the shared limit ran as retries; a task over the limit must wait, uncharged");
    }
    measurement.max_running = Some(running.max.load(Ordering::SeqCst));
    Ok(measurement)
}
