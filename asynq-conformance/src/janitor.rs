//! The janitor's call: deleting completed tasks whose retention ran out, a batch at a time.

use super::BrokerFactory;
use super::fixture::{Fixture, archive, assert_task_not_found, at, retry, secs};
use asynq_core::TaskState;
use asynq_core::broker::WorkerBroker;
use asynq_core::broker::{Inspect, Janitor};
use asynq_core::{QueueName, TaskId};

/// Only completed tasks whose expiry (completion + retention, whole seconds) is at or before
/// now are deleted; younger completed tasks and tasks in other states stay.
pub async fn case_janitor_deletes_only_expired_completed_tasks<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    t.complete("q", "a", secs(60)).await;
    t.advance(secs(30));
    t.complete("q", "b", secs(10)).await;
    t.complete("q", "c", secs(3_600)).await;
    t.run("q", "x", archive("x")).await;
    t.run("q", "r", retry(at(10), "x", true)).await;

    t.set(at(40) - secs(1));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 0);
    t.set(at(40));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 1);
    assert_task_not_found(t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("b")).await, "q", "b");
    t.set(at(60));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 1);
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 0);

    assert_eq!(t.all_ids("q", TaskState::Completed).await, ["c"]);
    assert_task_not_found(t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("a")).await, "q", "a");
    let info = t.info("q").await;
    assert_eq!((info.completed, info.archived, info.retry, info.size), (1, 1, 1, 3));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("unknown"), 100).await.unwrap(), 0);
}

/// One call deletes at most `batch_size` tasks, lowest expiry (then ID) first.
pub async fn case_janitor_respects_the_batch_size<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    for id in ["c3", "c0", "c4", "c1", "c2"] {
        t.complete("q", id, secs(1)).await;
    }
    t.advance(secs(10));

    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 2).await.unwrap(), 2);
    assert_eq!(t.all_ids("q", TaskState::Completed).await, ["c2", "c3", "c4"]);
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 2).await.unwrap(), 2);
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 2).await.unwrap(), 1);
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 2).await.unwrap(), 0);
    assert_eq!(t.info("q").await.completed, 0);
}
