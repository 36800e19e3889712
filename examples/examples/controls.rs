//! The controls a producer and an operator have over tasks, on the embedded memory broker:
//! unique tasks and task IDs refuse duplicates, a batch enqueues many tasks in one call, a
//! paused queue holds its tasks, a running task is cancelled (and retried, as in Go asynq), and
//! a rate limit spaces out the starts of a queue's tasks. Exits by itself.
//!
//! ```text
//! cargo run --example controls
//! ```

use rasynq::core::rate_limit::RateLimit;
use rasynq::{Client, Config, Error, Inspector, MemoryBroker, ServeMux, Server, Task, TaskOptions, TaskState, Tracker};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broker = MemoryBroker::new();
    let client = Client::new(broker.clone());
    let tracker = Tracker::new(broker.clone());
    let inspector = Inspector::new(broker.clone());

    // Unique tasks: one report per month while the first is queued.
    let report = Task::new("report:monthly", "2026-11");
    let unique = TaskOptions::new().unique(Duration::from_secs(3600));
    client.enqueue(&report, unique.clone()).await?;
    match client.enqueue(&report, unique).await {
        Err(Error::DuplicateTask { .. }) => println!("unique:   the second monthly report was refused"),
        other => anyhow::bail!("expected a duplicate, got {other:?}"),
    }

    // Task IDs: an ID you choose makes an enqueue idempotent.
    let order = Task::new("order:ship", "order-77");
    client.enqueue(&order, TaskOptions::new().task_id("ship-order-77")).await?;
    match client.enqueue(&order, TaskOptions::new().task_id("ship-order-77")).await {
        Err(Error::TaskIdConflict { .. }) => println!("task id:  shipping order 77 twice was refused"),
        other => anyhow::bail!("expected an ID conflict, got {other:?}"),
    }

    // A batch: one call, one result per task.
    let emails: Vec<_> =
        (0..20).map(|i| (Task::new("email:send", format!("user-{i}")), TaskOptions::new().queue("bulk"))).collect();
    let stored = client.enqueue_batch(&emails).await.iter().filter(|r| r.is_ok()).count();
    println!("batch:    {stored} of {} emails enqueued in one call", emails.len());

    // A paused queue keeps its tasks until it is unpaused.
    inspector.pause_queue("bulk").await?;

    let mut mux = ServeMux::new();
    mux.handle_fn("report:", |_ctx, _task| async { Ok(()) });
    mux.handle_fn("order:", |_ctx, _task| async { Ok(()) });
    mux.handle_fn("email:", |_ctx, _task| async { Ok(()) });
    mux.handle_fn("video:encode", |ctx, _task| async move {
        // A long job that stops when it is cancelled.
        tokio::select! {
            _ = ctx.cancelled() => {}
            _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
        }
        Ok(())
    });
    let config = Config {
        concurrency: 8,
        queues: [("default".to_owned(), 1), ("bulk".to_owned(), 1)].into(),
        // At most 10 bulk tasks start per second, shared by every server on the broker.
        rate_limits: [("bulk".to_owned(), RateLimit::new(10.0, 5)?)].into(),
        ..Config::default()
    };
    let mut server = Server::new(broker.clone(), config)?;
    server.start(mux)?;

    tokio::time::sleep(Duration::from_millis(300)).await;
    let bulk = inspector.queue_info("bulk").await?;
    println!("paused:   bulk holds {} pending tasks while paused", bulk.pending);

    // Cancel a running task: its handler sees the cancellation and the task goes to retry.
    let video = client.enqueue(&Task::new("video:encode", "movie.mp4"), TaskOptions::new()).await?;
    while inspector.task_info("default", &video.id).await?.state != TaskState::Active {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let found = tracker.cancel(&video.id).await?;
    println!("cancel:   asked to cancel the video task; {found}");
    while inspector.task_info("default", &video.id).await?.state != TaskState::Retry {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancelled = inspector.task_info("default", &video.id).await?;
    println!("cancel:   the video task is in retry: {}", cancelled.last_error.unwrap_or_default());

    // Unpause: the rate limit spaces the 20 emails over about 1.5 s (a burst of 5, then 10/s).
    let started = Instant::now();
    inspector.unpause_queue("bulk").await?;
    while inspector.queue_info("bulk").await?.processed_total < 20 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("rate:     20 bulk emails ran in {:.1} s at 10 per second", started.elapsed().as_secs_f64());

    server.shutdown().await;
    Ok(())
}
