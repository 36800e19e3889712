//! `steps-drain`: like `drain`, with a handler that runs `--steps` durable steps
//! (`TaskContext::step_bytes`, each recording a one-byte result) and returns. `cargo xtask
//! bench` runs it beside a plain drain of `--steps` times as many tasks, so that Redis's work per
//! task with steps compares with that of as many plain tasks as it has steps.

use crate::measure::{Measurement, Timer};
use crate::scenarios::{connect, wait_until_processed};
use crate::workload::QUEUE;
use anyhow::{Context, ensure};
use asynq_core::QueueName;
use asynq_core::broker::Inspect;
use asynq_server::{Config, HandlerError, Server, TaskContext, handler_fn};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

/// Runs a server of `concurrency` workers whose handler runs `steps` steps per task, until the
/// queue's processed counter reaches `tasks` (fill the queue first), or `timeout` passes.
pub async fn steps_drain(
    redis_url: &str,
    tasks: u64,
    steps: usize,
    concurrency: usize,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    ensure!(steps > 0 && concurrency > 0, "steps and concurrency must be at least 1");
    let monitor = connect(redis_url).await?;
    let info = monitor
        .queue_info(&QueueName::from_static(QUEUE))
        .await
        .with_context(|| format!("queue {QUEUE:?} is empty; fill it first"))?;
    ensure!(
        info.pending as u64 >= tasks,
        "queue {QUEUE:?} holds {} pending tasks, not {tasks}; fill it first",
        info.pending
    );
    let names: Arc<[String]> = (0..steps).map(|i| format!("step:{i}")).collect();
    let config = Config { concurrency, queues: [(QUEUE.to_owned(), 1)].into(), ..Config::default() };
    let mut server = Server::new(connect(redis_url).await?, config)?;
    let timer = Timer::start();
    server.start(handler_fn(move |ctx: TaskContext, _task| {
        let names = Arc::clone(&names);
        async move {
            for name in names.iter() {
                ctx.step_bytes(name, || async { Ok::<_, HandlerError>(Bytes::from_static(b"1")) }).await?;
            }
            Ok::<(), HandlerError>(())
        }
    }))?;
    let waited = wait_until_processed(redis_url, tasks, timeout).await;
    let measurement = timer.finish("steps-drain", tasks, Some(concurrency), true);
    server.shutdown().await;
    waited.map(|()| measurement)
}
