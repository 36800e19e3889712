//! `wait_for_tasks`: idle processors wake when a task may have become ready, and never miss
//! one that arrived before they started waiting.

mod support;

use asynq_core::broker::{Dequeue, Forward, Inspect, Outcome};
use asynq_core::{Task, TaskOptions};
use std::sync::Arc;
use std::time::Duration;
use support::{Fixture, names};
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// Spawns a processor waiting on `queues`, and lets it start waiting.
async fn waiter(f: &Arc<Fixture>, queues: &[&str]) -> JoinHandle<()> {
    let (f, queues) = (Arc::clone(f), names(queues));
    let handle = tokio::spawn(async move { f.broker.wait_for_tasks(&queues).await });
    tokio::task::yield_now().await;
    assert!(!handle.is_finished(), "nothing is ready yet");
    handle
}

async fn woken(handle: JoinHandle<()>) -> bool {
    timeout(Duration::from_secs(60), handle).await.is_ok()
}

#[tokio::test(start_paused = true)]
async fn every_waiter_wakes_on_enqueue() {
    let f = Arc::new(Fixture::new());
    let first = waiter(&f, &["q"]).await;
    let second = waiter(&f, &["other", "q"]).await;

    f.enqueue_plain("q", "a").await;

    assert!(woken(first).await && woken(second).await);
}

#[tokio::test(start_paused = true)]
async fn a_task_that_is_already_pending_needs_no_wake_up() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    assert!(timeout(Duration::from_secs(60), f.broker.wait_for_tasks(&names(&["q"]))).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_paused_queue_does_not_count_as_ready_until_unpaused() {
    let f = Arc::new(Fixture::new());
    f.enqueue_plain("q", "a").await;
    f.broker.pause_queue("q").await.unwrap();
    let handle = waiter(&f, &["q"]).await;

    f.broker.unpause_queue("q").await.unwrap();

    assert!(woken(handle).await);
}

#[tokio::test(start_paused = true)]
async fn forwarding_and_requeueing_wake_waiters() {
    let f = Arc::new(Fixture::new());
    let options = TaskOptions::new().queue("q").process_in(Duration::from_secs(5));
    f.enqueue("a", &Task::new("t", ""), options).await.unwrap();
    let handle = waiter(&f, &["q"]).await;
    f.advance(5);
    f.broker.forward_ready(&names(&["q"])).await.unwrap();
    assert!(woken(handle).await);

    let taken = f.dequeue_one("q").await;
    let handle = waiter(&f, &["q"]).await;
    f.broker.finish(&taken.message, Outcome::Requeue).await.unwrap();
    assert!(woken(handle).await);
}

#[tokio::test(start_paused = true)]
async fn nothing_ready_means_no_wake_up() {
    let f = Arc::new(Fixture::new());
    let handle = waiter(&f, &["q"]).await;
    f.enqueue("a", &Task::new("t", ""), TaskOptions::new().queue("q").group("g")).await.unwrap();
    assert!(!woken(handle).await);
}
