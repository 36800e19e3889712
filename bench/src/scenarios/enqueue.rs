//! The enqueue scenarios, timed (one at a time, in batches, from concurrent producers) or filling
//! a queue for a scenario that processes it.

use super::{FILL_BATCH, SCHEDULED_AHEAD, connect, enqueue_in_batches, keep_events};
use crate::measure::{Measurement, Timer};
use crate::workload::{self, QUEUE};
use anyhow::{Context as _, ensure};
use asynq_client::{Client, TaskOptions};
use asynq_core::{Clock, SystemClock};
use std::time::{Duration, UNIX_EPOCH};

/// Enqueues `tasks` tasks one at a time, each awaited before the next is sent; with
/// `spin_wait`, waiting for each reply busy for up to that long (`Client::with_spin_wait`).
pub async fn enqueue(redis_url: &str, tasks: u64, spin_wait: Option<Duration>) -> anyhow::Result<Measurement> {
    let mut client = Client::new(connect(redis_url).await?);
    if let Some(budget) = spin_wait {
        client = client.with_spin_wait(budget);
    }
    let task = workload::task();
    let timer = Timer::start();
    for _ in 0..tasks {
        client.enqueue(&task, TaskOptions::new()).await.context("enqueue failed")?;
    }
    Ok(timer.finish("enqueue", tasks, None, true))
}

/// Enqueues `tasks` tasks with [`Client::enqueue_batch`], `batch_size` at a time, each batch
/// awaited before the next is sent; `scheduled`, due in an hour instead of pending; with
/// `events`, into a queue that keeps an event log of about that many events.
pub async fn enqueue_batch(
    redis_url: &str,
    tasks: u64,
    batch_size: usize,
    scheduled: bool,
    events: Option<u32>,
) -> anyhow::Result<Measurement> {
    let broker = connect(redis_url).await?;
    keep_events(&broker, events).await?;
    let client = Client::new(broker);
    let options = if scheduled { TaskOptions::new().process_in(SCHEDULED_AHEAD) } else { TaskOptions::new() };
    let timer = Timer::start();
    enqueue_in_batches(&client, tasks, batch_size, &options).await?;
    Ok(timer.finish("enqueue-batch", tasks, None, true))
}

/// Enqueues `tasks` tasks one at a time from `producers` concurrent tasks sharing one
/// [`Client`], as a service's request handlers do: the client gathers the enqueues that
/// arrive while a call is in flight into one batch call.
pub async fn enqueue_concurrent(redis_url: &str, tasks: u64, producers: usize) -> anyhow::Result<Measurement> {
    ensure!(producers > 0, "there must be at least one producer");
    let client = Client::new(connect(redis_url).await?);
    let task = workload::task();
    let timer = Timer::start();
    let mut running = tokio::task::JoinSet::new();
    for producer in 0..producers as u64 {
        // The first `tasks % producers` producers send one task more.
        let share = tasks / producers as u64 + u64::from(producer < tasks % producers as u64);
        let (client, task) = (client.clone(), task.clone());
        running.spawn(async move {
            for _ in 0..share {
                client.enqueue(&task, TaskOptions::new()).await.context("enqueue failed")?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = running.join_next().await {
        done??;
    }
    Ok(timer.finish("enqueue-concurrent", tasks, Some(producers), true))
}

/// Enqueues `tasks` tasks as fast as the client allows, to prepare a scenario that processes
/// them; the run is measured like the others, but only the queue it leaves matters.
pub async fn fill(redis_url: &str, tasks: u64, events: Option<u32>) -> anyhow::Result<Measurement> {
    let broker = connect(redis_url).await?;
    keep_events(&broker, events).await?;
    let client = Client::new(broker);
    let timer = Timer::start();
    enqueue_in_batches(&client, tasks, FILL_BATCH, &TaskOptions::new()).await?;
    Ok(timer.finish("fill", tasks, None, true))
}

/// Prepares [`fail_for_good`](super::fail_for_good): archives `archived` tasks first (enqueued, then archived by one
/// `Inspector::archive_all` of the pending tasks, as an operator would), then enqueues `tasks`
/// tasks that fail for good at their first failure (`max_retry` 0). With `archived` at
/// [`asynq_core::ARCHIVE_MAX_SIZE`], every failure that follows lands in an archive at its cap.
pub async fn fill_failing(redis_url: &str, tasks: u64, archived: u64) -> anyhow::Result<Measurement> {
    let broker = connect(redis_url).await?;
    let (client, inspector) = (Client::new(broker.clone()), asynq_client::Inspector::new(broker));
    let timer = Timer::start();
    if archived > 0 {
        enqueue_in_batches(&client, archived, FILL_BATCH, &TaskOptions::new()).await?;
        let pending = asynq_client::TaskSet::State(asynq_client::TaskState::Pending);
        inspector.archive_all(QUEUE, &pending).await.context("archiving the pending tasks failed")?;
    }
    enqueue_in_batches(&client, tasks, FILL_BATCH, &TaskOptions::new().max_retry(0)).await?;
    Ok(timer.finish("fill-failing", tasks, None, true))
}

/// Prepares [`scheduled_storm`](super::scheduled_storm): `tasks` tasks scheduled an hour from now, all at
/// the same whole second.
pub async fn fill_scheduled(redis_url: &str, tasks: u64) -> anyhow::Result<Measurement> {
    let client = Client::new(connect(redis_url).await?);
    let due = SystemClock.now() + SCHEDULED_AHEAD;
    let due = UNIX_EPOCH + Duration::from_secs(due.duration_since(UNIX_EPOCH)?.as_secs());
    let timer = Timer::start();
    enqueue_in_batches(&client, tasks, FILL_BATCH, &TaskOptions::new().process_at(due)).await?;
    Ok(timer.finish("fill-scheduled", tasks, None, true))
}
