//! Waiting for a task's outcome: [`Wait::wait_for_outcome`] resolves promptly when the task is
//! completed, archived or deleted through the broker, goes on through retries, returns at once
//! for a task that already finished, and times out with a typed error.

use super::BrokerFactory;
use super::fixture::{Fixture, archive, assert_queue_not_found, names, retry, secs};
use asynq_core::broker::{Dequeue, Forward, Outcome, Wait};
use asynq_core::{Broker, Error, QueueName, Result, Task, TaskId, TaskOptions, TaskOutcome, TaskState};
use bytes::Bytes;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long a waiter may take to hear of a finish: well under a second, so a backend that only
/// polls once a second (a fallback for finishes it cannot hear of) does not pass by luck.
const PROMPTLY: Duration = Duration::from_millis(500);
/// The time limit every wait here is given, unless the case is about the limit.
const LIMIT: Duration = Duration::from_secs(5);
/// How long a wait that should not end is watched.
const QUIET: Duration = Duration::from_millis(300);
/// How long a started wait is left alone before its task is finished, so that it is surely
/// listening (and a backend's once-a-second look is surely not due).
const SETTLE: Duration = Duration::from_millis(50);

/// Starts a wait for task `id` of `queue` in the background, then lets it settle.
async fn wait<B: Wait + Clone + 'static>(broker: &B, queue: &str, id: &str) -> JoinHandle<Result<TaskOutcome>> {
    let (broker, queue, id) = (broker.clone(), queue.to_owned(), id.to_owned());
    let waiter = tokio::spawn(async move {
        broker.wait_for_outcome(&QueueName::new(queue).unwrap(), &TaskId::new(id).unwrap(), LIMIT).await
    });
    tokio::time::sleep(SETTLE).await;
    waiter
}

/// The outcome `waiter` reports within [`PROMPTLY`].
async fn told(waiter: JoinHandle<Result<TaskOutcome>>, what: &str) -> TaskOutcome {
    tokio::time::timeout(PROMPTLY, waiter)
        .await
        .unwrap_or_else(|_| panic!("the waiter was not told within {PROMPTLY:?} that {what}"))
        .expect("the waiter panicked")
        .unwrap_or_else(|e| panic!("the wait failed although {what}: {e}"))
}

async fn assert_still_waiting(waiter: &mut JoinHandle<Result<TaskOutcome>>, what: &str) {
    assert!(tokio::time::timeout(QUIET, &mut *waiter).await.is_err(), "the wait ended although {what}");
}

/// Enqueues task `id` into `queue` with a retention of an hour and dequeues it.
async fn activate_retained<B: Broker + Clone>(t: &Fixture<B>, queue: &str, id: &str) -> asynq_core::StoredTask {
    let options = TaskOptions::new().queue(queue).retention(secs(3600));
    t.enqueue(id, &Task::new("t", id.to_owned()), options).await.unwrap();
    t.take(queue, id).await.message
}

/// A completed task is reported with the result its handler wrote.
pub async fn case_wait_reports_a_completed_task_with_its_result<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    let msg = activate_retained(&t, "q", "a").await;
    let waiter = wait(&t.broker, "q", "a").await;
    t.broker
        .write_result(&QueueName::from_static("q"), &TaskId::from_static("a"), Bytes::from_static(b"42"))
        .await
        .unwrap();
    t.finish(&msg, Outcome::Complete).await;
    let outcome = told(waiter, "the task completed").await;
    assert_eq!(outcome.state(), Some(TaskState::Completed));
    assert_eq!(outcome.result(), Some(&Bytes::from_static(b"42")));
    assert_eq!(outcome.error(), None);
    let info = outcome.info().expect("a completed task has a snapshot");
    assert_eq!((info.id.as_str(), info.queue.as_str(), info.completed_at), ("a", "q", Some(t.now())));
}

/// An archived task is reported with its last error.
pub async fn case_wait_reports_an_archived_task_with_its_error<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    let msg = t.activate("q", "a").await;
    let waiter = wait(&t.broker, "q", "a").await;
    t.finish(&msg, archive("gave up")).await;
    let outcome = told(waiter, "the task was archived").await;
    assert_eq!(outcome.state(), Some(TaskState::Archived));
    assert_eq!((outcome.error(), outcome.result()), (Some("gave up"), None));
}

/// A task that succeeds without retention (or is revoked) is deleted, and so reported.
pub async fn case_wait_reports_a_task_done_without_retention_as_deleted<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    let msg = t.activate("q", "a").await;
    let waiter = wait(&t.broker, "q", "a").await;
    t.finish(&msg, Outcome::Done).await;
    assert_eq!(told(waiter, "the task was done").await, TaskOutcome::Deleted);
}

/// Successes settled together ([`Dequeue::finish_batch`]) tell each of their waiters.
pub async fn case_finish_batch_tells_every_waiter<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    for id in ["a", "b", "c"] {
        t.plain("q", id).await;
    }
    let taken = t.dequeue(&["q"], 3).await;
    let retained = activate_retained(&t, "q", "d").await;
    let waiters = [wait(&t.broker, "q", "a").await, wait(&t.broker, "q", "b").await, wait(&t.broker, "q", "d").await];
    let mut batch: Vec<_> = taken.into_iter().map(|d| (d.message, Outcome::Done)).collect();
    batch.push((retained, Outcome::Complete));
    assert!(t.broker.finish_batch(batch).await.iter().all(Result::is_ok));
    let [a, b, d] = waiters;
    assert_eq!(told(a, "task a was done in a batch").await, TaskOutcome::Deleted);
    assert_eq!(told(b, "task b was done in a batch").await, TaskOutcome::Deleted);
    assert_eq!(told(d, "task d was completed in a batch").await.state(), Some(TaskState::Completed));
}

/// A retry does not end a wait; the task's final outcome, attempts later, does.
pub async fn case_wait_goes_on_through_retries<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    let msg = t.activate("q", "a").await;
    let mut waiter = wait(&t.broker, "q", "a").await;
    t.finish(&msg, retry(t.now() + secs(10), "boom", true)).await;
    assert_still_waiting(&mut waiter, "the task only went to retry").await;
    t.advance(secs(10));
    t.broker.forward_ready(&names(&["q"])).await.unwrap();
    let msg = t.take("q", "a").await.message;
    assert_still_waiting(&mut waiter, "the task runs again").await;
    t.finish(&msg, archive("boom again")).await;
    let outcome = told(waiter, "the retried task was archived").await;
    assert_eq!((outcome.error(), outcome.info().map(|i| i.retried)), (Some("boom again"), Some(1)));
}

/// A task that finished before the wait began is reported at once: completed or archived; one
/// that is not there (it never existed, or it succeeded without a retention) is a typed
/// not-found, since nothing tells the two apart.
pub async fn case_wait_returns_at_once_for_a_finished_task<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    t.complete("q", "completed", secs(3600)).await;
    t.run("q", "archived", archive("gave up")).await;
    t.run("q", "done", Outcome::Done).await;
    let now = |id: &'static str| {
        let broker = t.broker.clone();
        async move {
            let waited = tokio::time::timeout(
                PROMPTLY,
                broker.wait_for_outcome(&QueueName::from_static("q"), &TaskId::new(id).unwrap(), LIMIT),
            )
            .await;
            waited.unwrap_or_else(|_| panic!("{id}: no answer at once"))
        }
    };
    assert_eq!(now("completed").await.unwrap().state(), Some(TaskState::Completed));
    assert_eq!(now("archived").await.unwrap().error(), Some("gave up"));
    for id in ["done", "never-enqueued"] {
        let waited = now(id).await;
        assert!(
            matches!(&waited, Err(Error::TaskNotFound { id: missing, .. }) if missing.as_str() == id),
            "{id}: {waited:?}"
        );
    }
}

/// A wait that outlasts its limit fails with [`Error::WaitTimeout`], naming the task.
pub async fn case_wait_times_out_with_a_typed_error<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    t.activate("q", "a").await;
    let limit = Duration::from_millis(200);
    let waited = tokio::time::timeout(
        LIMIT,
        t.broker.wait_for_outcome(&QueueName::from_static("q"), &TaskId::from_static("a"), limit),
    )
    .await
    .expect("gave up");
    match waited {
        Err(Error::WaitTimeout { queue, id, timeout }) => {
            assert_eq!((queue.as_str(), id.as_str(), timeout), ("q", "a", limit))
        }
        other => panic!("expected WaitTimeout, got {other:?}"),
    }
    assert_eq!(t.task("q", "a").await.state, TaskState::Active, "the wait left the task as it was");
}

/// A zero timeout is refused before anything is written (names are checked by their types); a
/// queue that never had a task is not found.
pub async fn case_wait_refuses_bad_arguments_and_unknown_queues<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Wait,
{
    let t = Fixture::new(factory).await;
    t.plain("q", "a").await;
    let before = t.snapshot("q").await;
    let refused =
        t.broker.wait_for_outcome(&QueueName::from_static("q"), &TaskId::from_static("a"), Duration::ZERO).await;
    assert!(matches!(&refused, Err(Error::InvalidArgument { field: "timeout", .. })), "{refused:?}");
    assert_queue_not_found(
        t.broker.wait_for_outcome(&QueueName::from_static("nowhere"), &TaskId::from_static("a"), LIMIT).await,
        "nowhere",
    );
    assert_eq!(t.snapshot("q").await, before);
}
