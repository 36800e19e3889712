//! Refused enqueues: ID conflicts and uniqueness locks, and when a lock is taken, kept and
//! released.

mod support;

use asynq_core::broker::{Dequeue, Forward, Outcome};
use asynq_core::{Error, Task, TaskOptions};
use std::time::Duration;
use support::{Fixture, names};

fn unique(ttl_secs: u64) -> TaskOptions {
    TaskOptions::new().queue("q").unique(Duration::from_secs(ttl_secs))
}

fn is_duplicate(result: asynq_core::Result<()>) -> bool {
    matches!(result, Err(Error::DuplicateTask { ref queue, ref type_name }) if queue == "q" && type_name == "email")
}

#[tokio::test]
async fn a_conflicting_id_writes_nothing() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    let later = TaskOptions::new().queue("q").process_in(Duration::from_secs(60));

    let err = f.enqueue("a", &Task::new("other", "x"), later).await.unwrap_err();

    assert!(matches!(err, Error::TaskIdConflict { ref queue, ref id } if queue == "q" && id == "a"), "{err:?}");
    let info = f.info("q").await;
    assert_eq!((info.pending, info.scheduled, info.size), (1, 0, 1));
    assert_eq!(f.dequeue_one("q").await.message.type_name, "t");
}

#[tokio::test]
async fn a_duplicate_writes_nothing_and_other_payloads_are_not_duplicates() {
    let f = Fixture::new();
    let task = Task::new("email", "to:ann");
    f.enqueue("a", &task, unique(60)).await.unwrap();

    assert!(is_duplicate(f.enqueue("b", &task, unique(60)).await));
    assert!(is_duplicate(f.enqueue("c", &task, unique(60).process_in(Duration::from_secs(5))).await));
    f.enqueue("d", &Task::new("email", "to:bob"), unique(60)).await.unwrap();
    f.enqueue("e", &task, unique(60).queue("other")).await.unwrap();

    let info = f.info("q").await;
    assert_eq!((info.pending, info.scheduled, info.size), (2, 0, 2));
}

#[tokio::test]
async fn the_stored_message_carries_the_lock_key() {
    let f = Fixture::new();
    f.enqueue("a", &Task::new("email", "\x01\x02"), unique(60)).await.unwrap();
    f.enqueue("b", &Task::new("email", ""), unique(60)).await.unwrap();

    let keys: Vec<_> = f.dequeue(&["q"], 2).await.into_iter().map(|d| d.message.unique_key).collect();
    assert_eq!(keys, ["5:email:0102", "5:email:"]);
}

#[tokio::test]
async fn the_lock_lasts_its_ttl() {
    let f = Fixture::new();
    let task = Task::new("email", "p");
    f.enqueue("a", &task, unique(60)).await.unwrap();
    f.advance(60);
    assert!(is_duplicate(f.enqueue("b", &task, unique(60)).await));
    f.advance(1);
    f.enqueue("b", &task, unique(60)).await.unwrap();
}

#[tokio::test]
async fn the_lock_is_kept_on_retry_and_released_on_success() {
    let f = Fixture::new();
    let task = Task::new("email", "p");
    f.enqueue("a", &task, unique(3_600)).await.unwrap();
    let taken = f.dequeue_one("q").await;
    let retry = Outcome::Retry { retry_at: f.now(), error: "boom".into(), is_failure: true };
    f.broker.finish(&taken.message, retry).await.unwrap();
    assert!(is_duplicate(f.enqueue("b", &task, unique(3_600)).await));

    f.broker.forward_ready(&names(&["q"])).await.unwrap();
    let taken = f.dequeue_one("q").await;
    f.broker.finish(&taken.message, Outcome::Done).await.unwrap();

    f.enqueue("b", &task, unique(3_600)).await.unwrap();
}

#[tokio::test]
async fn success_releases_only_a_lock_the_task_still_holds() {
    let f = Fixture::new();
    let task = Task::new("email", "p");
    f.enqueue("a", &task, unique(10)).await.unwrap();
    let a = f.dequeue_one("q").await;
    f.advance(11);
    f.enqueue("b", &task, unique(3_600)).await.unwrap();

    f.broker.finish(&a.message, Outcome::Done).await.unwrap();

    assert!(is_duplicate(f.enqueue("c", &task, unique(3_600)).await), "b still holds the lock");
}

#[tokio::test]
async fn a_lock_taken_before_an_id_conflict_is_kept() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    let task = Task::new("email", "p");

    let err = f.enqueue("a", &task, unique(60)).await.unwrap_err();

    assert!(matches!(err, Error::TaskIdConflict { .. }), "{err:?}");
    assert!(is_duplicate(f.enqueue("b", &task, unique(60)).await));
    assert_eq!(f.info("q").await.size, 1);
}
