//! `scheduled-on-time`: an idle server, and a producer that schedules tasks to fall due over a
//! few seconds (each at its own sub-second offset). For each task, how late its handler starts
//! after its due second (the whole second it is stored at, as in Go's layout, which is when a
//! forwarder may first move it): the p50 and p99 of that lateness are reported in the pickup
//! fields. A forwarder that polled at its 5 s interval would be late by up to 5 s.

use crate::measure::{Measurement, Timer};
use crate::scenarios::connect;
use crate::workload::{self, QUEUE};
use anyhow::{Context, ensure};
use asynq_client::{Client, TaskOptions};
use asynq_server::{Config, HandlerError, Server, TaskContext, handler_fn};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Schedules `tasks` tasks over `spread`, one at a time, with a server of `concurrency` idle
/// beforehand, and waits (up to `timeout`) until each has started.
pub async fn scheduled_on_time(
    redis_url: &str,
    tasks: u64,
    spread: Duration,
    concurrency: usize,
    timeout: Duration,
) -> anyhow::Result<Measurement> {
    ensure!(tasks > 0 && concurrency > 0, "tasks and concurrency must be at least 1");
    let client = Client::new(connect(redis_url).await?);
    let (started_tx, mut started_rx) = mpsc::unbounded_channel::<(u64, SystemTime)>();
    let config = Config { concurrency, queues: [(QUEUE.to_owned(), 1)].into(), ..Config::default() };
    let mut server = Server::new(connect(redis_url).await?, config)?;
    server.start(handler_fn(move |_ctx: TaskContext, task| {
        let started = SystemTime::now();
        // The payload is the task's due second, in Unix seconds.
        let due = std::str::from_utf8(task.payload()).ok().and_then(|text| text.parse().ok()).unwrap_or(0);
        let _ = started_tx.send((due, started));
        async { Ok::<(), HandlerError>(()) }
    }))?;
    // The server is idle when the first task is scheduled: its forwarder sleeps.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let timer = Timer::start();
    // From the second after next, so that no task is due (its whole second reached) before it
    // is enqueued: lateness then counts from a time the forwarder could act on.
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?;
    let first = UNIX_EPOCH + Duration::from_secs(now.as_secs() + 2);
    for i in 0..tasks {
        let at = first + spread.mul_f64(i as f64 / tasks as f64);
        let due = at.duration_since(UNIX_EPOCH)?.as_secs();
        let task = asynq_core::Task::new(workload::TASK_TYPE, due.to_string());
        client.enqueue(&task, TaskOptions::new().queue(QUEUE).process_at(at)).await?;
    }
    let mut late_ms = Vec::with_capacity(tasks as usize);
    let give_up = tokio::time::Instant::now() + timeout;
    while (late_ms.len() as u64) < tasks {
        let (due, started) =
            tokio::time::timeout_at(give_up, started_rx.recv()).await.ok().flatten().with_context(|| {
                format!("only {} of {tasks} scheduled tasks started within {timeout:?}", late_ms.len())
            })?;
        let due = UNIX_EPOCH + Duration::from_secs(due);
        late_ms.push(started.duration_since(due).unwrap_or_default().as_secs_f64() * 1_000.0);
    }
    let mut measurement = timer.finish("scheduled-on-time", tasks, Some(concurrency), false);
    server.shutdown().await;
    late_ms.sort_by(f64::total_cmp);
    measurement.pickup_p50_ms = crate::measure::percentile(&late_ms, 50.0);
    measurement.pickup_p99_ms = crate::measure::percentile(&late_ms, 99.0);
    Ok(measurement)
}
