//! What the memory broker promises beyond the broker conformance suite (which
//! `tests/tests/conformance_memory.rs` runs against it, and which covers the task's way through
//! the worker path, uniqueness, inspection, maintenance and wake-ups): every waiter wakes, a
//! result needs its task, and a grouped task waits for its aggregator however late it is.

mod support;

use asynq_core::broker::{Dequeue, Forward};
use asynq_core::{Error, QueueName, Task, TaskId, TaskOptions};
use bytes::Bytes;
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

#[tokio::test]
async fn a_result_needs_an_existing_task() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    f.broker
        .write_result(&QueueName::from_static("q"), &TaskId::from_static("a"), Bytes::from_static(b"r"))
        .await
        .unwrap();
    let err = f
        .broker
        .write_result(&QueueName::from_static("q"), &TaskId::from_static("b"), Bytes::from_static(b"r"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TaskNotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn a_grouped_task_aggregates_until_forwarded_elsewhere() {
    let f = Fixture::new();
    f.enqueue("a", &Task::new("t", ""), TaskOptions::new().queue("q").group("g")).await.unwrap();
    f.advance(3_600);

    assert_eq!(f.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 0);
    let info = f.info("q").await;
    assert_eq!((info.aggregating, info.groups, info.size, info.pending), (1, 1, 1, 0));
    assert!(f.dequeue(&["q"], 1).await.is_empty());
}
