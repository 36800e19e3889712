//! Scheduler records: entries written, rewritten, cleared and expired; enqueue history listed
//! newest first, paged, capped and cleared; fire marks and their TTL.
//!
//! As for servers, Go asynq judges a scheduler alive by the score of its key in
//! `asynq:schedulers` (the broker's `now + ttl` in Unix seconds), and our fire marks hold their
//! expiry by the broker's clock, so expiry follows the simulated clock on Redis too.

use super::BrokerFactory;
use super::fixture::{Fixture, at, millis, secs};
use asynq_core::broker::{MAX_SCHEDULER_HISTORY, Page, SchedulerEnqueueEvent, SchedulerEntry, SchedulerState};
use bytes::Bytes;
use std::time::Duration;

/// The entries TTL the cases use (Go's: twice the 10-second scheduler heartbeat).
const TTL: Duration = Duration::from_secs(20);

/// An entry `id` that last fired a minute ago (or never, when `fired` is false).
fn entry(id: &str, fired: bool) -> SchedulerEntry {
    SchedulerEntry {
        id: id.to_owned(),
        spec: format!("@every 60s # {id}"),
        task_type: format!("report:{id}"),
        // Not UTF-8: payloads are bytes.
        task_payload: Bytes::from_static(&[0xff, 0x00, 0x7b]),
        options: vec![r#"Queue("critical")"#.to_owned(), "MaxRetry(3)".to_owned(), "Timeout(1m30s)".to_owned()],
        next: Some(at(60) + millis(250)),
        prev: fired.then(|| at(0) + millis(250)),
    }
}

/// An event of task `task_id` enqueued at `offset` seconds and 125 ms.
fn event(task_id: &str, offset: i64) -> SchedulerEnqueueEvent {
    SchedulerEnqueueEvent { task_id: task_id.to_owned(), enqueued_at: at(offset) + millis(125) }
}

/// The history of `entry_id`, one page.
async fn history<B: SchedulerState>(broker: &B, entry_id: &str, size: usize, number: usize) -> Vec<String> {
    let page = Page { size, number };
    let events = broker.scheduler_history(entry_id, page).await.expect("scheduler history");
    events.into_iter().map(|e| e.task_id).collect()
}

/// Written entries are listed field for field: schedulers by ID, each one's entries in the order
/// written; a never-fired entry has no previous time.
pub async fn case_scheduler_entries_are_listed_as_written<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    assert!(t.broker.scheduler_entries().await.unwrap().is_empty());
    let b = [entry("b-second", true), entry("b-first", false)];
    let a = [entry("a-only", false)];

    t.broker.write_scheduler_entries("host:2:sched-b", &b, TTL).await.unwrap();
    t.broker.write_scheduler_entries("host:1:sched-a", &a, TTL).await.unwrap();

    let [b_second, b_first] = b;
    let [a_only] = a;
    assert_eq!(t.broker.scheduler_entries().await.unwrap(), [a_only, b_second, b_first]);
}

/// Writing a scheduler again replaces its whole entry list; writing none lists none.
pub async fn case_scheduler_entries_rewrite_replaces_them<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    t.broker.write_scheduler_entries("s", &[entry("e1", false), entry("e2", false)], TTL).await.unwrap();
    t.advance(secs(10));

    let fired = entry("e2", true);
    t.broker.write_scheduler_entries("s", std::slice::from_ref(&fired), TTL).await.unwrap();
    assert_eq!(t.broker.scheduler_entries().await.unwrap(), [fired]);

    t.broker.write_scheduler_entries("s", &[], TTL).await.unwrap();
    assert!(t.broker.scheduler_entries().await.unwrap().is_empty());
}

/// Clearing a scheduler removes its entries at once; clearing an unknown one is fine.
pub async fn case_cleared_scheduler_entries_are_not_listed<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    t.broker.write_scheduler_entries("a", &[entry("a1", false)], TTL).await.unwrap();
    t.broker.write_scheduler_entries("b", &[entry("b1", false)], TTL).await.unwrap();

    t.broker.clear_scheduler_entries("a").await.unwrap();
    t.broker.clear_scheduler_entries("never-written").await.unwrap();

    assert_eq!(t.broker.scheduler_entries().await.unwrap(), [entry("b1", false)]);
}

/// Entries not written again are listed up to and including the whole second of write + TTL:
/// written at 0.5 s with a 20-second TTL, they are listed at 20.7 s and gone at 21 s.
pub async fn case_scheduler_entries_expire_after_their_ttl<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    t.set(at(0) + millis(500));
    t.broker.write_scheduler_entries("a", &[entry("a1", false)], TTL).await.unwrap();
    t.set(at(10));
    t.broker.write_scheduler_entries("b", &[entry("b1", false)], TTL).await.unwrap();

    t.set(at(20) + millis(700));
    assert_eq!(t.broker.scheduler_entries().await.unwrap().len(), 2);
    t.set(at(21));
    assert_eq!(t.broker.scheduler_entries().await.unwrap(), [entry("b1", false)]);
    t.set(at(31));
    assert!(t.broker.scheduler_entries().await.unwrap().is_empty());
}

/// Enqueue events are listed newest first, field for field, one page at a time; each entry has
/// its own history.
pub async fn case_enqueue_history_is_newest_first_and_paged<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    for (task_id, offset) in [("t1", 0), ("t3", 120), ("t2", 60)] {
        t.broker.record_scheduler_enqueue("entry", &event(task_id, offset)).await.unwrap();
    }
    t.broker.record_scheduler_enqueue("other", &event("o1", 30)).await.unwrap();

    let all = t.broker.scheduler_history("entry", Page { size: 10, number: 0 }).await.unwrap();
    assert_eq!(all, [event("t3", 120), event("t2", 60), event("t1", 0)]);
    assert_eq!(history(&t.broker, "entry", 2, 0).await, ["t3", "t2"]);
    assert_eq!(history(&t.broker, "entry", 2, 1).await, ["t1"]);
    assert!(history(&t.broker, "entry", 2, 2).await.is_empty());
    assert_eq!(history(&t.broker, "other", 10, 0).await, ["o1"]);
}

/// A history keeps the newest 1000 events: recording more drops the oldest first.
pub async fn case_enqueue_history_keeps_the_newest_1000<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    let total = MAX_SCHEDULER_HISTORY as i64 + 5;
    for n in 0..total {
        t.broker.record_scheduler_enqueue("entry", &event(&format!("t{n}"), n)).await.unwrap();
    }

    let kept = history(&t.broker, "entry", 5_000, 0).await;
    assert_eq!(kept.len(), MAX_SCHEDULER_HISTORY);
    assert_eq!(kept.first().map(String::as_str), Some(format!("t{}", total - 1).as_str()));
    assert_eq!(kept.last().map(String::as_str), Some("t5"));
}

/// A cleared history is empty, and so is the history of an entry that never enqueued.
pub async fn case_cleared_enqueue_history_is_empty<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    assert!(history(&t.broker, "never", 10, 0).await.is_empty());
    t.broker.record_scheduler_enqueue("a", &event("t1", 0)).await.unwrap();
    t.broker.record_scheduler_enqueue("b", &event("t2", 0)).await.unwrap();

    t.broker.clear_scheduler_history("a").await.unwrap();
    t.broker.clear_scheduler_history("never").await.unwrap();

    assert!(history(&t.broker, "a", 10, 0).await.is_empty());
    assert_eq!(history(&t.broker, "b", 10, 0).await, ["t2"]);
}

/// A fire mark holds up to and including the whole second of mark + TTL; marking again
/// restarts the TTL; marks are independent of each other.
pub async fn case_fire_marks_last_for_their_ttl<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: SchedulerState,
{
    let t = Fixture::new(factory).await;
    let ttl = secs(60);
    assert!(!t.broker.fire_enqueued("fire-1").await.unwrap());
    t.set(at(0) + millis(500));
    t.broker.mark_fire_enqueued("fire-1", ttl).await.unwrap();
    assert!(t.broker.fire_enqueued("fire-1").await.unwrap());
    assert!(!t.broker.fire_enqueued("fire-2").await.unwrap());

    t.set(at(60) + millis(900));
    assert!(t.broker.fire_enqueued("fire-1").await.unwrap());
    t.set(at(61));
    assert!(!t.broker.fire_enqueued("fire-1").await.unwrap());

    t.broker.mark_fire_enqueued("fire-1", ttl).await.unwrap();
    t.set(at(121));
    assert!(t.broker.fire_enqueued("fire-1").await.unwrap());
    t.set(at(122));
    assert!(!t.broker.fire_enqueued("fire-1").await.unwrap());
}
