//! The scenarios that process tasks: draining a filled queue (or failing its tasks for good),
//! enqueueing while processing, an open-loop stream of producers, and a workflow's fan-in.

use super::{
    connect, fail, noop, server_config, wait_until_processed, wait_until_processed_or_failed, with_empty_queues,
};
use crate::measure::{Measurement, Timer, percentile};
use crate::workload::{self, QUEUE};
use anyhow::{Context as _, bail, ensure};
use asynq_client::{Client, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Inspect;
use asynq_server::{HandlerError, Server, TaskContext, handler_fn};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Runs a server with `concurrency` on the queue until its processed counter reaches `tasks`,
/// timed from the server's start. The queue must hold the tasks already ([`fill`](super::fill)); several
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
/// good at once ([`fill_failing`](super::fill_failing): `max_retry` 0), so each run of it archives one. Timed until
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
