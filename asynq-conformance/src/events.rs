//! Task event logs (`EventLog`): off until a queue asks for one; then every change to a task is
//! logged in order, with the task's ID and type, the error of a failed attempt and the report
//! of a progress event; reads resume after the last event read and tell a reader that fell
//! behind the cap that it missed events.

use super::BrokerFactory;
use super::fixture::{Fixture, at, retry, secs};
use asynq_core::broker::EventLog;
use asynq_core::broker::{Dequeue, Enqueue, Manage, Outcome};
use asynq_core::events::{EventCap, EventKind, EventPage, EventPosition, QueueEvent};
use asynq_core::{Progress, QueueName, TaskId, TaskSet, TaskState};

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

async fn read_all<B: EventLog>(broker: &B, queue: &str) -> Vec<QueueEvent> {
    broker.read_events(&q(queue), EventPosition::Oldest, 1_000).await.unwrap().events
}

fn kinds(events: &[QueueEvent]) -> Vec<(EventKind, &str)> {
    events.iter().map(|event| (event.kind, event.task_id.as_str())).collect()
}

/// A queue keeps no log until asked: its changes leave no events, reads find none, and no cap
/// is listed; turning the log off drops it.
pub async fn case_events_are_kept_only_for_a_queue_that_asks<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: EventLog,
{
    let t = Fixture::new(factory).await;
    let a = t.activate("q", "a").await;
    t.finish(&a, Outcome::Done).await;
    assert_eq!(read_all(&t.broker, "q").await, []);
    assert_eq!(t.broker.event_caps().await.unwrap(), []);

    let cap = EventCap::new(500).unwrap();
    t.broker.set_event_cap(&q("q"), Some(cap)).await.unwrap();
    t.broker.set_event_cap(&q("other"), Some(EventCap::DEFAULT)).await.unwrap();
    assert_eq!(t.broker.event_caps().await.unwrap(), [(q("other"), EventCap::DEFAULT), (q("q"), cap)]);
    t.plain("q", "b").await;
    t.plain("elsewhere", "c").await;
    assert_eq!(kinds(&read_all(&t.broker, "q").await), [(EventKind::Enqueued, "b")]);
    assert_eq!(read_all(&t.broker, "elsewhere").await, []);

    t.broker.set_event_cap(&q("q"), None).await.unwrap();
    assert_eq!(t.broker.event_caps().await.unwrap(), [(q("other"), EventCap::DEFAULT)]);
    t.plain("q", "d").await;
    assert_eq!(read_all(&t.broker, "q").await, [], "a log turned off is dropped");
}

/// Each change is logged as it happens, in order, with the task's ID and type (an event's time
/// is the backend's: its clock, or the Redis server's): enqueued (pending and scheduled), started, progress (with its report),
/// retried and archived (with the attempt's error), succeeded, requeued, and an operator's
/// archive and delete (one by one and in bulk).
pub async fn case_events_follow_each_task_through_its_life<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: EventLog,
{
    let t = Fixture::new(factory).await;
    t.broker.set_event_cap(&q("q"), Some(EventCap::DEFAULT)).await.unwrap();
    let a = t.activate("q", "a").await;
    let report = Progress::new(0.5, "halfway", t.now()).unwrap();
    t.broker.write_progress(&q("q"), &TaskId::new("a").unwrap(), &report).await.unwrap();
    t.finish(&a, retry(at(100), "boom", true)).await;
    t.broker.archive_task(&q("q"), &TaskId::new("a").unwrap()).await.unwrap();
    let b = t.activate("q", "b").await;
    t.finish(&b, Outcome::Requeue).await;
    let b = t.take("q", "b").await.message;
    t.finish(&b, Outcome::Done).await;
    let c = t.activate("q", "c").await;
    t.finish(&c, Outcome::Archive { error: "gave up".into() }).await;
    let d = t.activate("q", "d").await;
    t.finish(&d, Outcome::Complete).await;
    t.plain("q", "e").await;
    t.broker.delete_task(&q("q"), &TaskId::new("e").unwrap()).await.unwrap();
    t.plain("q", "f").await;
    assert_eq!(t.broker.delete_all(&q("q"), &TaskSet::State(TaskState::Pending)).await.unwrap(), 1);

    let events = read_all(&t.broker, "q").await;
    use EventKind::{Archived, Deleted, Enqueued, Requeued, Retried, Started, Succeeded};
    assert_eq!(
        kinds(&events),
        [
            (Enqueued, "a"),
            (Started, "a"),
            (EventKind::Progress, "a"),
            (Retried, "a"),
            (Archived, "a"),
            (Enqueued, "b"),
            (Started, "b"),
            (Requeued, "b"),
            (Started, "b"),
            (Succeeded, "b"),
            (Enqueued, "c"),
            (Started, "c"),
            (Archived, "c"),
            (Enqueued, "d"),
            (Started, "d"),
            (Succeeded, "d"),
            (Enqueued, "e"),
            (Deleted, "e"),
            (Enqueued, "f"),
            (Deleted, "f"),
        ]
    );
    assert!(events.windows(2).all(|pair| pair[0].id < pair[1].id), "IDs grow");
    assert!(events.iter().all(|event| event.task_type == "t"), "{events:?}");
    let errors: Vec<Option<&str>> = events.iter().map(|event| event.error.as_deref()).collect();
    assert_eq!((errors[3], errors[4], errors[12]), (Some("boom"), None, Some("gave up")));
    let progress = events[2].progress.as_ref().expect("a progress event carries its report");
    assert_eq!((progress.fraction(), progress.message()), (0.5, "halfway"));
    assert!(events.iter().enumerate().all(|(i, event)| (i == 2) == event.progress.is_some()));
    assert_eq!(t.task("q", "d").await.state, TaskState::Completed);
}

/// A reader resumes after the last event it read and gets only what came after; `Latest`
/// starts after the newest event; a reader that fell behind by more than the cap is told it
/// missed events, and the log keeps exactly the cap's newest.
pub async fn case_event_reads_resume_and_report_what_was_trimmed<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: EventLog,
{
    let t = Fixture::new(factory).await;
    let queue = q("q");
    t.broker.set_event_cap(&queue, Some(EventCap::new(100).unwrap())).await.unwrap();
    let none = t.broker.read_events(&queue, EventPosition::Latest, 10).await.unwrap();
    assert_eq!((none.events.len(), none.missed), (0, false));

    for i in 0..3 {
        t.plain("q", &format!("a{i}")).await;
    }
    let first: EventPage = t.broker.read_events(&queue, EventPosition::Oldest, 2).await.unwrap();
    assert_eq!(kinds(&first.events), [(EventKind::Enqueued, "a0"), (EventKind::Enqueued, "a1")]);
    assert!(!first.missed);
    let latest = t.broker.read_events(&queue, EventPosition::Latest, 10).await.unwrap();
    assert!(latest.events.is_empty());
    t.advance(secs(1));
    t.plain("q", "b").await;
    let rest = t.broker.read_events(&queue, first.next, 10).await.unwrap();
    assert_eq!(kinds(&rest.events), [(EventKind::Enqueued, "a2"), (EventKind::Enqueued, "b")]);
    let fresh = t.broker.read_events(&queue, latest.next, 10).await.unwrap();
    assert_eq!(kinds(&fresh.events), [(EventKind::Enqueued, "b")]);
    let idle = t.broker.read_events(&queue, rest.next, 10).await.unwrap();
    assert_eq!((idle.events.len(), idle.next, idle.missed), (0, rest.next, false));

    // 400 events more: the reader parked after `a0` fell far behind a cap of 100.
    let batch: Vec<_> = (0..400)
        .map(|i| {
            let task = asynq_core::Task::new("t", format!("c{i}"));
            let options = asynq_core::TaskOptions::new().queue("q").task_id(format!("c{i}"));
            asynq_core::resolve_enqueue(&task, &options, t.now(), || unreachable!()).unwrap()
        })
        .collect();
    assert!(t.broker.enqueue_batch(batch).await.iter().all(Result::is_ok));
    let behind = t.broker.read_events(&queue, first.next, 1_000).await.unwrap();
    assert!(behind.missed, "the events after a1 were trimmed");
    let kept = read_all(&t.broker, "q").await;
    assert_eq!(kept.len(), 100, "the log keeps exactly its cap");
    assert_eq!(kept.last().map(|event| event.task_id.as_str()), Some("c399"));
    assert_eq!(behind.events, kept);
    let caught_up = t.broker.read_events(&queue, behind.next, 10).await.unwrap();
    assert_eq!((caught_up.events.len(), caught_up.missed), (0, false));
}

/// A log keeps exactly its cap however small, and a lower cap trims what it holds at once; a
/// read of 0 events returns none yet says where to resume and whether events were missed; a
/// reader is told it may have missed events once its own last event was trimmed (no log keeps a
/// record of which events went, so this holds when nothing after it went too).
pub async fn case_a_log_keeps_exactly_its_cap_and_a_read_of_nothing_reads_nothing<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) where
    F::Broker: EventLog,
{
    let t = Fixture::new(factory).await;
    let queue = q("q");
    t.broker.set_event_cap(&queue, Some(EventCap::new(10).unwrap())).await.unwrap();
    for i in 0..5 {
        t.plain("q", &format!("a{i}")).await;
    }
    let first = t.broker.read_events(&queue, EventPosition::Oldest, 1).await.unwrap();
    assert_eq!(kinds(&first.events), [(EventKind::Enqueued, "a0")]);

    let nothing = t.broker.read_events(&queue, EventPosition::Oldest, 0).await.unwrap();
    assert_eq!((nothing.events.len(), nothing.next, nothing.missed), (0, EventPosition::Oldest, false));
    let nothing = t.broker.read_events(&queue, first.next, 0).await.unwrap();
    assert_eq!((nothing.events.len(), nothing.next, nothing.missed), (0, first.next, false));
    let latest = t.broker.read_events(&queue, EventPosition::Latest, 0).await.unwrap();
    let newest = read_all(&t.broker, "q").await.last().map(|event| event.id).expect("events");
    assert_eq!((latest.events.len(), latest.next), (0, EventPosition::After(newest)));

    // a0 and a1 go: the reader after a0 missed a1; one after a1 missed nothing.
    t.broker.set_event_cap(&queue, Some(EventCap::new(3).unwrap())).await.unwrap();
    assert_eq!(
        kinds(&read_all(&t.broker, "q").await),
        [(EventKind::Enqueued, "a2"), (EventKind::Enqueued, "a3"), (EventKind::Enqueued, "a4")]
    );
    let behind = t.broker.read_events(&queue, first.next, 0).await.unwrap();
    assert_eq!((behind.events.len(), behind.missed), (0, true));
    let second = t.broker.read_events(&queue, first.next, 1).await.unwrap();
    assert!(second.missed);
    assert_eq!(kinds(&second.events), [(EventKind::Enqueued, "a2")]);

    t.plain("q", "a5").await;
    let at_a5 = t.broker.read_events(&queue, second.next, 10).await.unwrap();
    assert!(at_a5.missed, "a2, read last, was trimmed by a5's event");
    assert_eq!(
        kinds(&at_a5.events),
        [(EventKind::Enqueued, "a3"), (EventKind::Enqueued, "a4"), (EventKind::Enqueued, "a5")]
    );
    for i in 6..9 {
        t.plain("q", &format!("a{i}")).await;
    }
    let kept = read_all(&t.broker, "q").await;
    assert_eq!(kinds(&kept), [(EventKind::Enqueued, "a6"), (EventKind::Enqueued, "a7"), (EventKind::Enqueued, "a8")]);
    let caught_up = t.broker.read_events(&queue, at_a5.next, 10).await.unwrap();
    assert!(caught_up.missed, "a5 itself was trimmed");
    assert_eq!(caught_up.events, kept);
    let current = t.broker.read_events(&queue, caught_up.next, 10).await.unwrap();
    assert_eq!((current.events.len(), current.missed), (0, false));
}

/// Durable steps are logged: a recorded step (`step`, naming it), a park (`parked`, naming the
/// signal a wait is for, none for a sleep) and a signal sent (`signalled`, naming it, whether
/// or not it wakes the task); a step refused and a signal to no task log nothing.
pub async fn case_steps_parks_and_signals_are_logged<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: EventLog + asynq_core::broker::Steps,
{
    use asynq_core::broker::Steps;
    use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord};
    let t = Fixture::new(factory).await;
    t.broker.set_event_cap(&q("q"), Some(EventCap::DEFAULT)).await.unwrap();
    let (a, go) = (TaskId::new("a").unwrap(), StepName::new("go").unwrap());
    let step = |name: &str| StepRecord::new(StepName::new(name).unwrap(), "1", t.now()).unwrap();

    let message = t.activate("q", "a").await;
    t.broker.record_step(&q("q"), &a, &step("charge")).await.unwrap();
    let nap = Parked::new(ParkReason::Sleep, t.now() + secs(60));
    t.broker.park(&message, &nap, Some(&step("sleep#1"))).await.unwrap();
    let refused = t.broker.record_step(&q("q"), &a, &step("late")).await;
    assert!(matches!(refused, Err(asynq_core::Error::TaskNotFound { .. })), "{refused:?}");
    assert!(!t.broker.signal(&q("q"), &a, &go, "1".into()).await.unwrap(), "a sleep waits for no signal");
    assert!(t.broker.signal(&q("q"), &TaskId::new("nope").unwrap(), &go, "1".into()).await.is_err());
    t.broker.run_task(&q("q"), &a).await.unwrap();
    let message = t.take("q", "a").await.message;
    let wait = Parked::new(ParkReason::Signal(StepName::new("ok").unwrap()), t.now() + secs(60));
    t.broker.park(&message, &wait, None).await.unwrap();
    assert!(t.broker.signal(&q("q"), &a, &StepName::new("ok").unwrap(), "1".into()).await.unwrap());

    let events = read_all(&t.broker, "q").await;
    let named: Vec<(EventKind, Option<&str>)> = events.iter().map(|e| (e.kind, e.name.as_deref())).collect();
    use EventKind::{Enqueued, Parked as P, Signalled, Started, Step};
    assert_eq!(
        named,
        [
            (Enqueued, None),
            (Started, None),
            (Step, Some("charge")),
            (P, None),
            (Signalled, Some("go")),
            (Started, None),
            (P, Some("ok")),
            (Signalled, Some("ok")),
        ]
    );
    assert!(events.iter().all(|event| event.task_id == "a" && event.task_type == "t"), "{events:?}");
    assert!(events.iter().all(|event| event.error.is_none() && event.progress.is_none()));
}
