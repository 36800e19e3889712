//! Durable steps (`Steps`): a running task's step records are kept with it through retries and
//! new attempts, replaced by name, refused for a task that is not running, and gone when the
//! task goes. A parked task resumes as pending, never back in a group it was once in.

use super::BrokerFactory;
use super::fixture::{Fixture, assert_task_not_found, retry, secs};
use asynq_core::broker::{Forward, Janitor, Manage, Outcome, Steps};
use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord};
use asynq_core::{QueueName, TaskId, TaskOptions, TaskState};

fn record(t: &Fixture<impl asynq_core::Broker + Clone>, name: &str, result: &str) -> StepRecord {
    StepRecord::new(StepName::new(name).unwrap(), result.to_owned(), t.now()).unwrap()
}

fn names(records: &[StepRecord]) -> Vec<&str> {
    records.iter().map(|r| r.name().as_str()).collect()
}

/// Records of a running task are read back by time then name, a record of the same name
/// replaces the last one, and they stay through a retry into the next attempt.
pub async fn case_step_records_are_kept_through_retries<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Steps,
{
    let t = Fixture::new(factory).await;
    let (q, a) = (QueueName::from_static("q"), TaskId::from_static("a"));
    let message = t.activate("q", "a").await;
    assert_eq!(t.broker.step_records(&q, &a).await.unwrap(), vec![]);

    let charge = record(&t, "charge", "{\"receipt\":\"r-1\"}");
    let reserve = record(&t, "reserve", "7");
    t.broker.record_step(&q, &a, &reserve).await.unwrap();
    t.broker.record_step(&q, &a, &charge).await.unwrap();
    t.advance(secs(1));
    let ship = record(&t, "ship:0", "null");
    t.broker.record_step(&q, &a, &ship).await.unwrap();
    assert_eq!(t.broker.step_records(&q, &a).await.unwrap(), vec![charge, reserve.clone(), ship.clone()]);

    t.advance(secs(1));
    let charge_again = record(&t, "charge", "{\"receipt\":\"r-2\"}");
    t.broker.record_step(&q, &a, &charge_again).await.unwrap();
    let records = t.broker.step_records(&q, &a).await.unwrap();
    assert_eq!(records, vec![reserve.clone(), ship.clone(), charge_again.clone()]);

    t.finish(&message, retry(t.now() + secs(10), "boom", true)).await;
    assert_eq!(t.broker.step_records(&q, &a).await.unwrap(), records, "a retrying task keeps its records");
    let refused = t.broker.record_step(&q, &a, &record(&t, "late", "1")).await;
    assert_task_not_found(refused, "q", "a");

    t.advance(secs(11));
    t.broker.forward_ready(std::slice::from_ref(&q)).await.unwrap();
    t.take("q", "a").await;
    assert_eq!(t.broker.step_records(&q, &a).await.unwrap(), records, "the next attempt finds them");
    assert_eq!(names(&records), ["reserve", "ship:0", "charge"]);
}

/// Only a running task takes a record: a pending or unknown one is refused with
/// `TaskNotFound`, and nothing is written; an unknown task has no records.
pub async fn case_step_records_are_refused_for_a_task_that_is_not_running<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) where
    F::Broker: Steps,
{
    let t = Fixture::new(factory).await;
    let q = QueueName::from_static("q");
    t.plain("q", "pending").await;
    let pending = TaskId::from_static("pending");
    assert_task_not_found(t.broker.record_step(&q, &pending, &record(&t, "s", "1")).await, "q", "pending");
    assert_eq!(t.broker.step_records(&q, &pending).await.unwrap(), vec![]);
    let nope = TaskId::from_static("nope");
    assert_task_not_found(t.broker.record_step(&q, &nope, &record(&t, "s", "1")).await, "q", "nope");
    assert_eq!(t.broker.step_records(&q, &nope).await.unwrap(), vec![]);
}

/// Records go when the task goes: done without retention, deleted, or completed and then
/// past its retention; a completed task keeps them while it is kept.
pub async fn case_step_records_go_with_their_task<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Steps,
{
    let t = Fixture::new(factory).await;
    let q = QueueName::from_static("q");
    let id = |s: &'static str| TaskId::from_static(s);

    let done = t.activate("q", "done").await;
    t.broker.record_step(&q, &id("done"), &record(&t, "s", "1")).await.unwrap();
    t.finish(&done, Outcome::Done).await;
    assert_eq!(t.broker.step_records(&q, &id("done")).await.unwrap(), vec![]);

    let deleted = t.activate("q", "deleted").await;
    t.broker.record_step(&q, &id("deleted"), &record(&t, "s", "1")).await.unwrap();
    t.finish(&deleted, retry(t.now() + secs(60), "boom", true)).await;
    t.broker.delete_task(&q, &id("deleted")).await.unwrap();
    assert_eq!(t.broker.step_records(&q, &id("deleted")).await.unwrap(), vec![]);

    let task = asynq_core::Task::new("t", "");
    t.enqueue("kept", &task, TaskOptions::new().queue("q").retention(secs(60))).await.unwrap();
    let kept = t.take("q", "kept").await.message;
    let step = record(&t, "s", "1");
    t.broker.record_step(&q, &id("kept"), &step).await.unwrap();
    t.finish(&kept, Outcome::Complete).await;
    assert_eq!(t.broker.step_records(&q, &id("kept")).await.unwrap(), vec![step]);
    t.advance(secs(61));
    assert_eq!(t.broker.delete_expired_completed(&q, 100).await.unwrap(), 1);
    assert_eq!(t.broker.step_records(&q, &id("kept")).await.unwrap(), vec![]);

    let requeued = t.activate("q", "requeued").await;
    t.broker.record_step(&q, &id("requeued"), &record(&t, "s", "1")).await.unwrap();
    t.finish(&requeued, Outcome::Requeue).await;
    assert_eq!(t.broker.step_records(&q, &id("requeued")).await.unwrap().len(), 1, "a requeued task keeps them");
}

/// A parked task (a durable sleep) is scheduled until its time, charged nothing, and shows why
/// and its records; once due it runs again with its records, and no longer shows as parked.
/// Only an active task can be parked.
pub async fn case_a_parked_task_is_scheduled_uncharged_and_shows_why<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Steps,
{
    let t = Fixture::new(factory).await;
    let (q, a) = (QueueName::from_static("q"), TaskId::from_static("a"));
    let message = t.activate("q", "a").await;
    let charge = record(&t, "charge", "1");
    t.broker.record_step(&q, &a, &charge).await.unwrap();
    let parked = Parked::new(ParkReason::Sleep, t.now() + secs(30));
    let sleep = record(&t, "sleep#1", "0");
    t.broker.park(&message, &parked, Some(&sleep)).await.unwrap();

    let info = t.task("q", "a").await;
    assert_eq!(info.state, TaskState::Scheduled);
    assert_eq!(info.retried, 0, "a parked task is charged nothing");
    assert_eq!(info.next_process_at, Some(asynq_core::time::whole_secs(parked.until)));
    assert_eq!(info.parked, Some(parked.clone()));
    assert_eq!(info.steps, vec![charge.clone(), sleep.clone()]);
    let counts = t.info("q").await;
    assert_eq!((counts.scheduled, counts.active, counts.processed, counts.failed), (1, 0, 0, 0));
    assert_task_not_found(t.broker.park(&message, &parked, None).await, "q", "a");

    t.advance(secs(29));
    assert_eq!(t.broker.forward_ready(std::slice::from_ref(&q)).await.unwrap().moved, 0, "not due yet");
    t.advance(secs(1));
    assert_eq!(t.broker.forward_ready(std::slice::from_ref(&q)).await.unwrap().moved, 1);
    let info = t.task("q", "a").await;
    assert_eq!((info.state, info.parked), (TaskState::Pending, None));
    t.take("q", "a").await;
    assert_eq!(t.broker.step_records(&q, &a).await.unwrap(), vec![charge, sleep]);
    assert_task_not_found(t.broker.park(&t.plain("q", "b").await, &parked, None).await, "q", "b");
}

/// A signal is kept with its task whatever its state; one to a task parked waiting for it
/// makes the task pending at once, one of another name does not; a task parked waiting for a
/// signal sent already is due at once. A signal to no task, or too large, writes nothing.
pub async fn case_a_signal_is_kept_and_wakes_a_task_waiting_for_it<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Steps,
{
    let t = Fixture::new(factory).await;
    let q = QueueName::from_static("q");
    let id = |s: &'static str| TaskId::from_static(s);
    let approved = StepName::new("approved").unwrap();
    let value = || bytes::Bytes::from_static(b"{\"by\":\"ann\"}");

    let p = QueueName::from_static("p");
    t.plain("p", "pending").await;
    assert_task_not_found(t.broker.signal(&q, &id("nope"), &approved, value()).await, "q", "nope");
    let big = bytes::Bytes::from(vec![b'x'; asynq_core::steps::MAX_SIGNAL_LEN + 1]);
    let refused = t.broker.signal(&p, &id("pending"), &approved, big).await;
    assert!(matches!(refused, Err(asynq_core::Error::TooLarge { what: "signal value", .. })), "{refused:?}");
    assert_eq!(t.broker.signal_value(&p, &id("pending"), &approved).await.unwrap(), None);
    assert!(!t.broker.signal(&p, &id("pending"), &approved, value()).await.unwrap());
    assert_eq!(t.broker.signal_value(&p, &id("pending"), &approved).await.unwrap(), Some(value()));
    assert_eq!(t.task("p", "pending").await.state, TaskState::Pending);
    assert_eq!(t.broker.signal_value(&q, &id("nope"), &approved).await.unwrap(), None);

    let waiting = t.activate("q", "waiting").await;
    let parked = Parked::new(ParkReason::Signal(approved.clone()), t.now() + secs(3600));
    t.broker.park(&waiting, &parked, None).await.unwrap();
    let info = t.task("q", "waiting").await;
    assert_eq!((info.state, info.parked), (TaskState::Scheduled, Some(parked)));
    let other = StepName::new("other").unwrap();
    assert!(!t.broker.signal(&q, &id("waiting"), &other, value()).await.unwrap(), "not the signal it waits for");
    assert_eq!(t.task("q", "waiting").await.state, TaskState::Scheduled);
    assert!(t.broker.signal(&q, &id("waiting"), &approved, value()).await.unwrap());
    let info = t.task("q", "waiting").await;
    assert_eq!((info.state, info.parked), (TaskState::Pending, None));
    assert_eq!(t.dequeue_ids(&["q"], 10).await, ["waiting"]);
    assert!(!t.broker.signal(&q, &id("waiting"), &approved, value()).await.unwrap(), "a running task wakes no more");

    let early = t.activate("q", "early").await;
    assert!(!t.broker.signal(&q, &id("early"), &approved, value()).await.unwrap());
    let parked = Parked::new(ParkReason::Signal(approved.clone()), t.now() + secs(3600));
    t.broker.park(&early, &parked, None).await.unwrap();
    assert_eq!(t.task("q", "early").await.state, TaskState::Scheduled);
    assert_eq!(t.broker.forward_ready(std::slice::from_ref(&q)).await.unwrap().moved, 1, "due at once");
    assert_eq!(t.broker.signal_value(&q, &id("early"), &approved).await.unwrap(), Some(value()));
}

/// A task trimmed from its archive takes its records with it; one still archived keeps them.
pub async fn case_step_records_go_when_the_archive_trims_their_task<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Steps,
{
    let limits = asynq_core::ArchiveLimits::new(3, std::time::Duration::from_secs(3600)).unwrap();
    let t = Fixture::with_archive_limits(factory, limits).await;
    let q = QueueName::from_static("q");
    for name in ["a", "b", "c"] {
        let message = t.activate("q", name).await;
        let id = TaskId::new(name).unwrap();
        t.broker.record_step(&q, &id, &record(&t, "s", "1")).await.unwrap();
        t.finish(&message, asynq_core::broker::Outcome::Archive { error: "x".into() }).await;
        t.advance(secs(1));
    }
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["b", "c"], "the archive keeps 2");
    assert_eq!(t.broker.step_records(&q, &TaskId::from_static("a")).await.unwrap(), vec![], "trimmed: gone");
    assert_eq!(t.broker.step_records(&q, &TaskId::from_static("b")).await.unwrap().len(), 1, "archived: kept");
}

/// A grouped task an operator ran, whose handler parks it, resumes as pending when due rather
/// than go back into its group to be aggregated: the group keeps only its other tasks, and the
/// task keeps its group in its message and its records.
pub async fn case_a_parked_grouped_task_resumes_as_pending_not_in_its_group<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) where
    F::Broker: Steps,
{
    let t = Fixture::new(factory).await;
    let (q, a) = (QueueName::from_static("q"), TaskId::from_static("a"));
    t.grouped("q", "g", "a").await;
    t.grouped("q", "g", "b").await;
    t.broker.run_task(&q, &a).await.unwrap();
    let message = t.take("q", "a").await.message;
    let sleep = record(&t, "sleep#1", "0");
    t.broker.park(&message, &Parked::new(ParkReason::Sleep, t.now() + secs(30)), Some(&sleep)).await.unwrap();
    assert_eq!(t.groups(&q).await, [("g".to_owned(), 1)]);

    t.advance(secs(30));
    assert_eq!(t.broker.forward_ready(std::slice::from_ref(&q)).await.unwrap().moved, 1);
    let info = t.task("q", "a").await;
    assert_eq!((info.state, info.group.as_ref().map(|g| g.as_str())), (TaskState::Pending, Some("g")));
    assert_eq!(t.groups(&q).await, [("g".to_owned(), 1)], "the group keeps only b");
    assert_eq!(t.all_ids("q", TaskState::Aggregating).await, ["b"]);
    assert_eq!(t.counts("q").await.aggregating, 1);
    t.take("q", "a").await;
    assert_eq!(t.broker.step_records(&q, &a).await.unwrap(), vec![sleep]);
}
