//! What operators see: known queues, queue statistics, task snapshots and listings, pausing.

mod support;

use asynq_core::broker::{Inspect, Page, Recover};
use asynq_core::{Error, Task, TaskOptions, TaskState};
use std::time::Duration;
use support::{Fixture, START, at, names};

#[tokio::test]
async fn queues_are_known_from_their_first_enqueue_not_from_a_pause() {
    let f = Fixture::new();
    f.enqueue_plain("b", "x").await;
    f.enqueue_plain("a", "x").await;
    f.enqueue_plain("c", "x").await;
    f.broker.pause_queue("never-used").await.unwrap();

    assert_eq!(f.broker.queues().await.unwrap(), ["a", "b", "c"]);
    let err = f.broker.queue_info("never-used").await.unwrap_err();
    assert!(matches!(err, Error::QueueNotFound { ref queue } if queue == "never-used"), "{err:?}");
    assert!(matches!(f.broker.task_info("nope", "x").await, Err(Error::QueueNotFound { .. })));
    assert!(matches!(f.broker.task_info("a", "nope").await, Err(Error::TaskNotFound { .. })));
    let listed = f.broker.list_tasks("nope", TaskState::Pending, Page::default()).await;
    assert!(matches!(listed, Err(Error::QueueNotFound { .. })));
}

#[tokio::test]
async fn queue_info_counts_every_state_and_the_oldest_pending_latency() {
    let f = Fixture::new();
    f.enqueue_plain("q", "first").await;
    f.clock.advance(Duration::from_millis(2_500));
    f.enqueue_plain("q", "second").await;
    f.enqueue("s", &Task::new("t", ""), TaskOptions::new().queue("q").process_in(Duration::from_secs(9)))
        .await
        .unwrap();
    f.enqueue("g1", &Task::new("t", ""), TaskOptions::new().queue("q").group("g1")).await.unwrap();
    f.enqueue("g2", &Task::new("t", ""), TaskOptions::new().queue("q").group("g2")).await.unwrap();

    let info = f.info("q").await;
    assert_eq!((info.pending, info.scheduled, info.aggregating, info.groups, info.size), (2, 1, 2, 2, 5));
    assert_eq!((info.latency, info.timestamp, info.paused), (Duration::from_millis(2_500), f.now(), false));

    f.dequeue_one("q").await;
    assert_eq!(f.info("q").await.latency, Duration::ZERO);
}

#[tokio::test]
async fn task_info_gives_the_next_process_time_by_state() {
    let f = Fixture::new();
    f.clock.advance(Duration::from_millis(400));
    f.enqueue_plain("q", "p").await;
    let later = TaskOptions::new().queue("q").process_at(at(START + 90));
    f.enqueue("s", &Task::new("t", ""), later).await.unwrap();

    let pending = f.broker.task_info("q", "p").await.unwrap();
    assert_eq!((pending.state, pending.next_process_at), (TaskState::Pending, Some(at(START))));
    let scheduled = f.broker.task_info("q", "s").await.unwrap();
    assert_eq!((scheduled.state, scheduled.next_process_at), (TaskState::Scheduled, Some(at(START + 90))));
}

#[tokio::test]
async fn listings_page_through_tasks_in_processing_order() {
    let f = Fixture::new();
    for id in ["a", "b", "c", "d", "e"] {
        f.enqueue_plain("q", id).await;
    }
    let broker = &f.broker;
    let page = |number| async move {
        let tasks = broker.list_tasks("q", TaskState::Pending, Page { size: 2, number }).await.unwrap();
        tasks.into_iter().map(|t| t.id).collect::<Vec<_>>()
    };
    assert_eq!(page(0).await, ["a", "b"]);
    assert_eq!(page(2).await, ["e"]);
    assert!(page(3).await.is_empty());

    for (id, delay) in [("x", 30), ("y", 10), ("z", 20)] {
        let options = TaskOptions::new().queue("q").process_in(Duration::from_secs(delay));
        f.enqueue(id, &Task::new("t", ""), options).await.unwrap();
    }
    let scheduled = f.broker.list_tasks("q", TaskState::Scheduled, Page::default()).await.unwrap();
    let listed: Vec<_> = scheduled.iter().map(|t| (t.id.as_str(), t.next_process_at)).collect();
    assert_eq!(listed, [("y", Some(at(START + 10))), ("z", Some(at(START + 20))), ("x", Some(at(START + 30)))]);
}

#[tokio::test]
async fn aggregating_tasks_are_listed_group_by_group() {
    let f = Fixture::new();
    for (id, group) in [("b1", "b"), ("a1", "a"), ("b2", "b")] {
        f.enqueue(id, &Task::new("t", ""), TaskOptions::new().queue("q").group(group)).await.unwrap();
        f.advance(1);
    }
    let listed = f.broker.list_tasks("q", TaskState::Aggregating, Page::default()).await.unwrap();
    let listed: Vec<_> = listed.iter().map(|t| (t.id.as_str(), t.group.as_deref())).collect();
    assert_eq!(listed, [("a1", Some("a")), ("b1", Some("b")), ("b2", Some("b"))]);
}

#[tokio::test]
async fn active_tasks_whose_lease_ran_out_are_orphaned() {
    let f = Fixture::new();
    f.enqueue_plain("q", "old").await;
    f.dequeue_one("q").await;
    f.advance(10);
    f.enqueue_plain("q", "new").await;
    f.dequeue_one("q").await;
    f.advance(20);

    let active = f.broker.list_tasks("q", TaskState::Active, Page::default()).await.unwrap();
    let listed: Vec<_> = active.iter().map(|t| (t.id.as_str(), t.is_orphaned)).collect();
    assert_eq!(listed, [("old", true), ("new", false)]);
    assert_eq!(f.broker.list_lease_expired(&names(&["q"]), f.now()).await.unwrap().len(), 1);
}

#[tokio::test]
async fn pausing_twice_or_unpausing_a_running_queue_fails() {
    let f = Fixture::new();
    let precondition = |r: asynq_core::Result<()>| match r {
        Err(Error::FailedPrecondition(message)) => message,
        other => panic!("expected a failed precondition, got {other:?}"),
    };
    assert_eq!(precondition(f.broker.unpause_queue("q").await), r#"queue "q" is not paused"#);
    f.broker.pause_queue("q").await.unwrap();
    assert_eq!(precondition(f.broker.pause_queue("q").await), r#"queue "q" is already paused"#);
    f.broker.unpause_queue("q").await.unwrap();
    assert_eq!(precondition(f.broker.unpause_queue("q").await), r#"queue "q" is not paused"#);
}
