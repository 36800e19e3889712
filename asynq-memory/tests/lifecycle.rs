//! A task's way through the worker path: dequeue order, leases, and each outcome of `finish`
//! with the counters it moves.

mod support;

use asynq_core::broker::{Dequeue, Forward, Inspect, Janitor, Outcome, Recover};
use asynq_core::{Error, LEASE_DURATION, Task, TaskOptions, TaskState};
use bytes::Bytes;
use std::time::Duration;
use support::{Fixture, START, at, names};

const DAY: u64 = 86_400;

#[tokio::test]
async fn pending_tasks_come_out_first_in_first_out_in_queue_order() {
    let f = Fixture::new();
    for id in ["a1", "a2", "a3"] {
        f.enqueue_plain("a", id).await;
    }
    f.enqueue_plain("b", "b1").await;

    assert_eq!(f.dequeue_ids(&["b", "a"], 2).await, ["b1", "a1"]);
    assert_eq!(f.dequeue_ids(&["missing", "b", "a"], 5).await, ["a2", "a3"]);
    assert!(f.dequeue(&["a", "b"], 5).await.is_empty());
    let info = f.info("a").await;
    assert_eq!((info.pending, info.active, info.size), (0, 3, 3));
}

#[tokio::test]
async fn a_dequeued_task_is_leased_for_thirty_whole_seconds() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    f.clock.advance(Duration::from_millis(700));

    let taken = f.dequeue_one("q").await;
    assert_eq!(taken.lease_expiry, at(START) + LEASE_DURATION);
    assert_eq!(taken.message.id, "a");
    let task = f.broker.task_info("q", "a").await.unwrap();
    assert_eq!((task.state, task.next_process_at), (TaskState::Active, None));
}

#[tokio::test]
async fn a_requeued_task_is_the_next_to_run_and_adds_no_latency() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    f.enqueue_plain("q", "b").await;
    let a = f.dequeue_one("q").await;
    f.advance(5);

    f.broker.finish(&a.message, Outcome::Requeue).await.unwrap();

    let info = f.info("q").await;
    assert_eq!((info.pending, info.active, info.processed_total, info.latency), (2, 0, 0, Duration::ZERO));
    assert_eq!(f.dequeue_ids(&["q"], 2).await, ["a", "b"]);
}

#[tokio::test]
async fn a_paused_queue_is_skipped_until_unpaused() {
    let f = Fixture::new();
    f.enqueue_plain("paused", "p").await;
    f.enqueue_plain("open", "o").await;
    f.broker.pause_queue("paused").await.unwrap();

    assert_eq!(f.dequeue_ids(&["paused", "open"], 5).await, ["o"]);
    assert!(f.info("paused").await.paused);

    f.broker.unpause_queue("paused").await.unwrap();
    assert_eq!(f.dequeue_ids(&["paused", "open"], 5).await, ["p"]);
}

#[tokio::test]
async fn only_active_tasks_get_their_lease_extended() {
    let f = Fixture::new();
    f.enqueue_plain("q", "active").await;
    let taken = f.dequeue_one("q").await;
    f.enqueue_plain("q", "pending").await;
    f.advance(10);

    let ids = names(&["active", "pending", "unknown"]);
    let expiry = f.broker.extend_leases("q", &ids).await.unwrap();

    assert_eq!(expiry, taken.lease_expiry + Duration::from_secs(10));
    let queues = names(&["q"]);
    let expired = |cutoff| f.broker.list_lease_expired(&queues, cutoff);
    assert!(expired(expiry - Duration::from_secs(1)).await.unwrap().is_empty());
    let ids: Vec<_> = expired(expiry + Duration::from_secs(DAY)).await.unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["active"]);
}

#[tokio::test]
async fn a_retry_counts_as_a_failure_only_when_it_is_one() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    let taken = f.dequeue_one("q").await;
    let retry_at = f.now() + Duration::from_secs(60);
    let retry = |is_failure| Outcome::Retry { retry_at, error: "boom".into(), is_failure };

    f.broker.finish(&taken.message, retry(true)).await.unwrap();

    let info = f.info("q").await;
    assert_eq!((info.retry, info.processed, info.failed, info.processed_total, info.failed_total), (1, 1, 1, 1, 1));
    let task = f.broker.task_info("q", "a").await.unwrap();
    assert_eq!((task.state, task.retried, task.last_error.as_deref()), (TaskState::Retry, 1, Some("boom")));
    assert_eq!((task.next_process_at, task.last_failed_at), (Some(retry_at), Some(f.now())));

    f.advance(60);
    assert_eq!(f.broker.forward_ready(&names(&["q"])).await.unwrap(), 1);
    let taken = f.dequeue_one("q").await;
    assert_eq!(taken.message.retried, 1);
    f.broker.finish(&taken.message, retry(false)).await.unwrap();

    let info = f.info("q").await;
    assert_eq!((info.retry, info.processed, info.failed), (1, 1, 1));
    assert_eq!(f.broker.task_info("q", "a").await.unwrap().retried, 1);
}

#[tokio::test]
async fn done_deletes_the_task_and_counts_it_as_processed() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    let taken = f.dequeue_one("q").await;

    f.broker.finish(&taken.message, Outcome::Done).await.unwrap();

    let info = f.info("q").await;
    assert_eq!((info.size, info.processed, info.failed, info.processed_total), (0, 1, 0, 1));
    assert!(matches!(f.broker.task_info("q", "a").await, Err(Error::TaskNotFound { .. })));
}

#[tokio::test]
async fn only_an_active_task_can_be_finished() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    let taken = f.dequeue_one("q").await;
    f.broker.finish(&taken.message, Outcome::Done).await.unwrap();

    for outcome in [Outcome::Done, Outcome::Requeue, Outcome::Archive { error: "x".into() }] {
        let err = f.broker.finish(&taken.message, outcome).await.unwrap_err();
        assert!(matches!(err, Error::TaskNotFound { ref queue, ref id } if queue == "q" && id == "a"), "{err:?}");
    }
    let mut elsewhere = taken.message.clone();
    elsewhere.queue = "nowhere".into();
    assert!(matches!(f.broker.finish(&elsewhere, Outcome::Done).await, Err(Error::TaskNotFound { .. })));
    assert_eq!(f.info("q").await.processed_total, 1);
}

#[tokio::test]
async fn archiving_counts_a_failure_and_keeps_the_newest_9999() {
    let f = Fixture::new();
    let ids: Vec<String> = (0..10_000).map(|i| format!("t{i:05}")).collect();
    for id in &ids {
        f.enqueue_plain("q", id).await;
    }
    let taken = f.dequeue(&["q"], ids.len()).await;
    assert_eq!(taken.len(), ids.len());
    for task in &taken {
        f.broker.finish(&task.message, Outcome::Archive { error: "gave up".into() }).await.unwrap();
    }

    let info = f.info("q").await;
    assert_eq!((info.archived, info.size, info.processed, info.failed), (9_999, 9_999, 10_000, 10_000));
    // All share one score, so the lowest member went first.
    assert!(matches!(f.broker.task_info("q", "t00000").await, Err(Error::TaskNotFound { .. })));
    let last = f.broker.task_info("q", "t09999").await.unwrap();
    assert_eq!((last.state, last.retried, last.last_error.as_deref()), (TaskState::Archived, 0, Some("gave up")));
}

#[tokio::test]
async fn archived_tasks_are_deleted_after_90_days() {
    let f = Fixture::new();
    let archive = |id: &'static str| {
        let f = &f;
        async move {
            f.enqueue_plain("q", id).await;
            let taken = f.dequeue_one("q").await;
            f.broker.finish(&taken.message, Outcome::Archive { error: "x".into() }).await.unwrap();
        }
    };
    archive("old").await;
    f.advance(90 * DAY - 1);
    archive("mid").await;
    assert_eq!(f.info("q").await.archived, 2);

    f.advance(1);
    archive("new").await;

    let listed = f.broker.list_tasks("q", TaskState::Archived, Default::default()).await.unwrap();
    assert_eq!(listed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["mid", "new"]);
    assert!(matches!(f.broker.task_info("q", "old").await, Err(Error::TaskNotFound { .. })));
}

#[tokio::test]
async fn a_completed_task_keeps_its_result_until_the_janitor_expires_it() {
    let f = Fixture::new();
    let options = TaskOptions::new().queue("q").retention(Duration::from_secs(60));
    f.enqueue("a", &Task::new("t", "p"), options).await.unwrap();
    let taken = f.dequeue_one("q").await;
    f.broker.write_result("q", "a", Bytes::from_static(b"42")).await.unwrap();

    f.broker.finish(&taken.message, Outcome::Complete).await.unwrap();

    let task = f.broker.task_info("q", "a").await.unwrap();
    assert_eq!(
        (task.state, task.completed_at, task.result),
        (TaskState::Completed, Some(f.now()), Some(Bytes::from("42")))
    );
    let info = f.info("q").await;
    assert_eq!((info.completed, info.processed, info.failed), (1, 1, 0));

    f.advance(59);
    assert_eq!(f.broker.delete_expired_completed("q", 100).await.unwrap(), 0);
    f.advance(1);
    assert_eq!(f.broker.delete_expired_completed("q", 100).await.unwrap(), 1);
    assert!(matches!(f.broker.task_info("q", "a").await, Err(Error::TaskNotFound { .. })));
    assert_eq!(f.broker.delete_expired_completed("unknown", 100).await.unwrap(), 0);
}

#[tokio::test]
async fn a_result_needs_an_existing_task() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    f.broker.write_result("q", "a", Bytes::from_static(b"r")).await.unwrap();
    let err = f.broker.write_result("q", "b", Bytes::from_static(b"r")).await.unwrap_err();
    assert!(matches!(err, Error::TaskNotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn daily_counters_roll_over_at_utc_midnight_and_totals_do_not() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    let taken = f.dequeue_one("q").await;
    f.broker.finish(&taken.message, Outcome::Archive { error: "x".into() }).await.unwrap();

    f.advance(DAY);
    let info = f.info("q").await;
    assert_eq!((info.processed, info.failed, info.processed_total, info.failed_total), (0, 0, 1, 1));
}
