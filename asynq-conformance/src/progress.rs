//! Task progress: a handler's last report is kept with its active task, shown wherever the task
//! is read, cleared when the task is dequeued again, and refused for a task that is not running.

use super::BrokerFactory;
use super::fixture::{Fixture, assert_task_not_found, retry, secs};
use asynq_core::broker::{Dequeue, Forward, Outcome};
use asynq_core::{Progress, QueueName, TaskId, TaskState};

fn report(t: &Fixture<impl asynq_core::Broker + Clone>, fraction: f64, message: &str) -> Progress {
    Progress::new(fraction, message, t.now()).unwrap()
}

/// The last report of the running attempt is what the task shows, in its info and its
/// listing; a completed task keeps it.
pub async fn case_progress_of_a_running_task_is_shown_and_kept_when_it_completes<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let (q, a) = (QueueName::from_static("q"), TaskId::from_static("a"));
    let options = asynq_core::TaskOptions::new().queue("q").retention(secs(60));
    t.enqueue("a", &asynq_core::Task::new("t", ""), options).await.unwrap();
    assert_eq!(t.task("q", "a").await.progress, None);
    let message = t.take("q", "a").await.message;

    t.broker.write_progress(&q, &a, &report(&t, 0.25, "resizing")).await.unwrap();
    t.advance(secs(1));
    let half = report(&t, 0.5, "half way");
    t.broker.write_progress(&q, &a, &half).await.unwrap();
    assert_eq!(t.task("q", "a").await.progress.as_ref(), Some(&half));
    let listed = t.list("q", TaskState::Active, 10, 0).await;
    assert_eq!(listed[0].progress.as_ref(), Some(&half));

    t.finish(&message, Outcome::Complete).await;
    assert_eq!(t.task("q", "a").await.progress, Some(half), "a completed task keeps its last report");
}

/// Only a running task takes a report: a pending, retrying or unknown one is refused with
/// `TaskNotFound`, and nothing is written.
pub async fn case_progress_is_refused_for_a_task_that_is_not_running<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let q = QueueName::from_static("q");
    t.plain("q", "pending").await;
    let refused = t.broker.write_progress(&q, &TaskId::from_static("pending"), &report(&t, 0.1, "")).await;
    assert_task_not_found(refused, "q", "pending");
    assert_eq!(t.task("q", "pending").await.progress, None);
    let refused = t.broker.write_progress(&q, &TaskId::from_static("nope"), &report(&t, 0.1, "")).await;
    assert_task_not_found(refused, "q", "nope");
}

/// A retried task shows its failed attempt's last report until it runs again, and starts the
/// next attempt with none.
pub async fn case_a_new_attempt_starts_without_progress<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let (q, a) = (QueueName::from_static("q"), TaskId::from_static("a"));
    let message = t.activate("q", "a").await;
    let last = report(&t, 0.9, "almost");
    t.broker.write_progress(&q, &a, &last).await.unwrap();
    t.finish(&message, retry(t.now() + secs(10), "boom", true)).await;
    assert_eq!(t.task("q", "a").await.progress, Some(last));
    let refused = t.broker.write_progress(&q, &a, &report(&t, 1.0, "late")).await;
    assert_task_not_found(refused, "q", "a");

    t.advance(secs(11));
    t.broker.forward_ready(std::slice::from_ref(&q)).await.unwrap();
    t.take("q", "a").await;
    assert_eq!(t.task("q", "a").await.progress, None);
}
