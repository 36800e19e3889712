//! Debounce and replace: a debounced task takes the place of the task last enqueued with its key
//! while that one is still scheduled; a waiting task replaced by its ID keeps the ID and takes
//! the new message and placement. Each in one step, writing nothing when it is refused. A task
//! that has started (its handler parked it or recorded a step) is never replaced.

use super::BrokerFactory;
use super::fixture::{Fixture, assert_id_conflict, assert_task_not_found, at, names, retry, secs};
use asynq_core::broker::{Enqueue, Forward, Manage, Steps};
use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord};
use asynq_core::{
    EnqueueRequest, Error, QueueName, Replace, Result, StoredTask, Task, TaskId, TaskOptions, TaskState,
    resolve_enqueue,
};
use std::fmt::Debug;
use std::time::Duration;

const WINDOW: Duration = Duration::from_secs(10);

/// Enqueues task `id` with `payload` into `q` through the broker under test, debounced with `key`.
async fn debounced<B, S>(t: &Fixture<B, S>, id: &str, key: &str, payload: &str) -> Result<StoredTask>
where
    B: Enqueue + Clone,
{
    t.produce(id, &Task::new("t", payload.to_owned()), TaskOptions::new().queue("q").debounce(key, WINDOW)).await
}

/// Replaces task `id` of `q` with `payload` and `options`, as `Client::replace` does.
async fn replace<B>(t: &Fixture<B>, id: &str, payload: &str, options: TaskOptions) -> Result<()>
where
    B: asynq_core::Broker + Clone,
{
    let task = Task::new("t", payload.to_owned());
    let mut request = resolve_enqueue(&task, &options.queue("q").task_id(id), t.now(), || unreachable!())?;
    request.replace = Some(Replace::Waiting);
    t.broker.enqueue(request).await
}

/// Checks that task `id` of `q` is gone.
async fn assert_gone<B: asynq_core::Broker + Clone>(t: &Fixture<B>, id: &str) {
    let found = t.broker.task_info(&QueueName::from_static("q"), &TaskId::new(id).unwrap()).await;
    assert_task_not_found(found, "q", id);
}

#[track_caller]
fn assert_invalid<T: Debug>(result: Result<T>, field: &str) {
    match result {
        Err(Error::InvalidArgument { field: f, .. }) if f == field => {}
        other => panic!("expected InvalidArgument for {field:?}, got {other:?}"),
    }
}

/// A burst of debounced enqueues leaves one task, the last one's, due a window after it; the
/// tasks it replaced are gone.
pub async fn case_debounce_keeps_the_last_task_of_a_burst<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    debounced(&t, "a", "user:42", "v1").await.unwrap();
    t.advance(secs(4));
    debounced(&t, "b", "user:42", "v2").await.unwrap();
    t.advance(secs(4));
    debounced(&t, "c", "user:42", "v3").await.unwrap();
    assert_gone(&t, "a").await;
    assert_gone(&t, "b").await;
    let c = t.task("q", "c").await;
    assert_eq!((c.state, c.next_process_at, &c.payload[..]), (TaskState::Scheduled, Some(at(18)), &b"v3"[..]));
    assert_eq!(c.debounce_key.as_deref(), Some("user:42"), "the task names its debounce key");
    assert_eq!(t.list("q", TaskState::Scheduled, 10, 0).await[0].debounce_key.as_deref(), Some("user:42"));
    assert_eq!(t.info("q").await.scheduled, 1);

    t.set(at(17));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 0, "due a window after the last enqueue");
    t.set(at(18));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);
    let taken = t.take("q", "c").await;
    assert_eq!(&taken.message.payload[..], b"v3");
}

/// Once the debounced task is due (pending) or running, the next enqueue with the key starts a
/// new window beside it; other keys and other queues never replace each other.
pub async fn case_debounce_replaces_only_a_scheduled_task_of_its_key_and_queue<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    debounced(&t, "a", "k", "v1").await.unwrap();
    t.set(at(10));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);
    debounced(&t, "b", "k", "v2").await.unwrap();
    assert_eq!(
        (t.task("q", "a").await.state, t.task("q", "b").await.state),
        (TaskState::Pending, TaskState::Scheduled)
    );

    t.take("q", "a").await;
    debounced(&t, "c", "other key", "v3").await.unwrap();
    let elsewhere = TaskOptions::new().queue("elsewhere").debounce("k", WINDOW);
    t.enqueue("d", &Task::new("t", "v4"), elsewhere).await.unwrap();
    assert_eq!(t.task("q", "a").await.state, TaskState::Active);
    assert_eq!(t.task("q", "b").await.state, TaskState::Scheduled);
    assert_eq!(t.task("q", "c").await.state, TaskState::Scheduled);
    assert_eq!(t.task("elsewhere", "d").await.state, TaskState::Scheduled);

    debounced(&t, "e", "k", "v5").await.unwrap();
    assert_gone(&t, "b").await;
    assert_eq!(t.task("q", "a").await.state, TaskState::Active, "a running task is never replaced");
}

/// The mark counts only for a task still debounced with its key: a task stored again under the
/// same ID without the key, or replaced by its ID, is not replaced by the next debounce.
pub async fn case_debounce_replaces_only_a_task_debounced_with_its_key<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let (q, later) = (QueueName::from_static("q"), TaskOptions::new().queue("q").process_in(secs(100)));
    debounced(&t, "a", "k1", "v1").await.unwrap();
    t.broker.delete_task(&q, &TaskId::from_static("a")).await.unwrap();
    t.enqueue("a", &Task::new("t", "plain"), later.clone()).await.unwrap();
    debounced(&t, "b", "k1", "v2").await.unwrap();
    assert_eq!(&t.task("q", "a").await.payload[..], b"plain", "a task of the same ID, not debounced, stays");

    debounced(&t, "c", "k2", "v3").await.unwrap();
    replace(&t, "c", "replaced", later).await.unwrap();
    debounced(&t, "d", "k2", "v4").await.unwrap();
    assert_eq!(&t.task("q", "c").await.payload[..], b"replaced", "a task replaced by ID is no longer debounced");
    assert_eq!(t.task("q", "c").await.debounce_key, None);
    assert_eq!(t.info("q").await.scheduled, 4);
}

/// A debounced task whose ID is taken is refused with `TaskIdConflict`, and the task it would
/// have replaced stays; a debounced task with the same ID as the one waiting replaces it where it
/// is.
pub async fn case_debounce_with_a_taken_id_writes_nothing<F: BrokerFactory<Broker: asynq_core::broker::Enqueue>>(
    factory: &F,
) {
    let t = Fixture::producer(factory).await;
    t.produce_plain("q", "taken").await;
    debounced(&t, "a", "k", "v1").await.unwrap();
    assert_id_conflict(debounced(&t, "taken", "k", "v2").await, "q", "taken");
    assert_eq!(t.task("q", "a").await.state, TaskState::Scheduled);
    assert_eq!(&t.task("q", "taken").await.payload[..], b"taken");

    t.advance(secs(3));
    debounced(&t, "a", "k", "v3").await.unwrap();
    let a = t.task("q", "a").await;
    assert_eq!((a.state, a.next_process_at, &a.payload[..]), (TaskState::Scheduled, Some(at(13)), &b"v3"[..]));
    assert_eq!(t.info("q").await.scheduled, 1);
}

/// A waiting task replaced by its ID keeps the ID and takes the new payload and placement: a
/// pending task stays pending or is scheduled, a scheduled one moves or becomes pending; the
/// uniqueness lock the old task held is released.
pub async fn case_replace_by_id_moves_a_waiting_task<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.plain("q", "p").await;
    t.plain("q", "p2").await;
    t.enqueue("s", &Task::new("t", "s"), TaskOptions::new().queue("q").process_at(at(100))).await.unwrap();
    let unique = TaskOptions::new().queue("q").unique(secs(3600));
    t.enqueue("u", &Task::new("t", "locked"), unique.clone()).await.unwrap();

    replace(&t, "p", "p-new", TaskOptions::new()).await.unwrap();
    let p = t.task("q", "p").await;
    assert_eq!((p.state, &p.payload[..]), (TaskState::Pending, &b"p-new"[..]));
    replace(&t, "p2", "p2-later", TaskOptions::new().process_at(at(50))).await.unwrap();
    assert_eq!(t.task("q", "p2").await.next_process_at, Some(at(50)));
    assert_eq!(t.task("q", "p2").await.state, TaskState::Scheduled);
    replace(&t, "s", "s-sooner", TaskOptions::new().process_at(at(20))).await.unwrap();
    assert_eq!(t.task("q", "s").await.next_process_at, Some(at(20)));
    replace(&t, "u", "unlocked", TaskOptions::new()).await.unwrap();
    t.enqueue("u2", &Task::new("t", "locked"), unique).await.expect("the replaced task's lock was released");

    let info = t.info("q").await;
    assert_eq!((info.pending, info.scheduled), (3, 2), "p, u and u2 pending; p2 and s scheduled");
    assert_eq!(t.dequeue_ids(&["q"], 10).await, ["p", "u", "u2"], "a replaced pending task joins the back");
}

/// Only a pending or scheduled task can be replaced: a running, retrying, archived or completed
/// one is refused with `FailedPrecondition` and an unknown one with `TaskNotFound`, nothing
/// written; a replacement that is unique or grouped is refused before anything is written.
pub async fn case_replace_refuses_what_is_not_waiting<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.activate("q", "active").await;
    t.run("q", "retry", retry(at(60), "boom", true)).await;
    t.complete("q", "completed", secs(600)).await;
    for id in ["active", "retry", "completed"] {
        let before = t.task("q", id).await;
        match replace(&t, id, "new", TaskOptions::new()).await {
            Err(Error::FailedPrecondition(message)) if message.contains(id) => {}
            other => panic!("replacing {id}: expected FailedPrecondition, got {other:?}"),
        }
        assert_eq!(t.task("q", id).await, before, "{id} is unchanged");
    }
    assert_task_not_found(replace(&t, "nope", "new", TaskOptions::new()).await, "q", "nope");

    t.plain("q", "p").await;
    let task = Task::new("t", "new");
    for (options, field) in [(TaskOptions::new().unique(secs(60)), "unique"), (TaskOptions::new().group("g"), "group")]
    {
        let mut request: EnqueueRequest =
            resolve_enqueue(&task, &options.queue("q").task_id("p"), t.now(), || unreachable!()).unwrap();
        request.replace = Some(Replace::Waiting);
        assert_invalid(t.broker.enqueue(request).await, field);
    }
    assert_eq!(&t.task("q", "p").await.payload[..], b"p");
}

/// Checks that replacing task `id` by its ID, and updating its payload, are refused with
/// `FailedPrecondition` naming it, and that it is unchanged.
async fn assert_kept_from_replacement<B: asynq_core::Broker + Clone>(t: &Fixture<B>, id: &str) {
    let before = t.task("q", id).await;
    match replace(t, id, "new", TaskOptions::new()).await {
        Err(Error::FailedPrecondition(message)) if message.contains(id) && message.contains("started") => {}
        other => panic!("replacing {id}: expected FailedPrecondition, got {other:?}"),
    }
    let (q, task_id) = (QueueName::from_static("q"), TaskId::new(id).unwrap());
    if before.state == TaskState::Scheduled {
        match t.broker.update_task_payload(&q, &task_id, bytes::Bytes::from_static(b"new")).await {
            Err(Error::FailedPrecondition(message)) if message.contains(id) && message.contains("started") => {}
            other => panic!("updating {id}'s payload: expected FailedPrecondition, got {other:?}"),
        }
    }
    assert_eq!(t.task("q", id).await, before, "{id} is unchanged");
}

/// A task that has started is never replaced: a debounce with its key leaves a parked task to
/// resume and stores its own task beside it (the mark then naming the new one, which the next
/// debounce replaces), and one under the parked task's own ID is refused with
/// `TaskIdConflict`. Replacing it by its ID, or updating its payload, is refused with
/// `FailedPrecondition` while it is parked, and once it is pending again with its step records;
/// nothing is written. A parked task without records is started too.
pub async fn case_a_started_task_is_never_replaced<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Steps,
{
    let t = Fixture::new(factory).await;
    let (q, a) = (QueueName::from_static("q"), TaskId::from_static("a"));
    let step = |name: &str| StepRecord::new(StepName::new(name).unwrap(), "1".to_owned(), t.now()).unwrap();
    debounced(&t, "a", "k", "v1").await.unwrap();
    t.set(at(10));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);
    let message = t.take("q", "a").await.message;
    t.broker.record_step(&q, &a, &step("charge")).await.unwrap();
    let parked = Parked::new(ParkReason::Sleep, at(100));
    t.broker.park(&message, &parked, Some(&step("sleep#1"))).await.unwrap();
    let before = t.task("q", "a").await;
    assert_eq!(
        (before.state, before.parked.as_ref(), before.debounce_key.as_deref()),
        (TaskState::Scheduled, Some(&parked), Some("k"))
    );

    assert_id_conflict(debounced(&t, "a", "k", "v2").await, "q", "a");
    debounced(&t, "b", "k", "v3").await.unwrap();
    assert_eq!(t.task("q", "a").await, before, "the parked task is left to resume");
    let b = t.task("q", "b").await;
    assert_eq!((b.state, b.next_process_at, &b.payload[..]), (TaskState::Scheduled, Some(at(20)), &b"v3"[..]));
    debounced(&t, "c", "k", "v4").await.unwrap();
    assert_gone(&t, "b").await;
    assert_eq!(t.task("q", "a").await, before, "the mark names the new task, not the parked one");
    assert_eq!(t.info("q").await.scheduled, 2, "a and c");

    assert_kept_from_replacement(&t, "a").await;
    t.set(at(100));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 2);
    assert_eq!(t.task("q", "a").await.state, TaskState::Pending);
    assert_kept_from_replacement(&t, "a").await;
    let taken = t.take("q", "c").await;
    assert_eq!(&taken.message.payload[..], b"v4");
    let resumed = t.take("q", "a").await;
    assert_eq!(&resumed.message.payload[..], b"v1", "the parked task goes on with its own message");
    assert_eq!(t.broker.step_records(&q, &a).await.unwrap().len(), 2, "with its records");

    let bare = t.activate("q", "bare").await;
    t.broker.park(&bare, &Parked::new(ParkReason::Sleep, at(200)), None).await.unwrap();
    assert_kept_from_replacement(&t, "bare").await;
}
