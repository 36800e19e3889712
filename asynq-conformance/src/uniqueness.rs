//! Uniqueness locks: a unique task refuses others with the same queue, type and payload while it
//! holds the lock; the lock is kept after an ID conflict and through retries, released on
//! success, and runs out with its TTL.

use super::fixture::{Fixture, archive, assert_duplicate, assert_id_conflict, at, names, retry, secs};
use super::{BrokerFactory, Capability, lacking};
use asynq_core::broker::{Forward, Outcome};
use asynq_core::{StoredTask, Task, TaskOptions};

/// Unique for `ttl_secs` in queue `"q"`.
fn unique(ttl_secs: u64) -> TaskOptions {
    TaskOptions::new().queue("q").unique(secs(ttl_secs))
}

/// While a unique task holds the lock, another unique task with the same queue, type and
/// payload is refused with DuplicateTask, whatever its placement, and nothing is written. A
/// different payload, type or queue, or a task that is not unique, is not a duplicate.
pub async fn case_duplicate_task_writes_nothing<F: BrokerFactory<Broker: asynq_core::broker::Enqueue>>(factory: &F) {
    let t = Fixture::producer(factory).await;
    let task = Task::new("email", "to:ann");
    t.produce("a", &task, unique(60)).await.unwrap();
    let before = t.snapshot("q").await;

    assert_duplicate(t.produce("b", &task, unique(60)).await, "q", "email");
    assert_duplicate(t.produce("c", &task, unique(60).process_in(secs(5))).await, "q", "email");
    assert_duplicate(t.produce("d", &task, unique(3_600).group("g")).await, "q", "email");

    assert_eq!(t.snapshot("q").await, before);
    t.produce("e", &Task::new("email", "to:bob"), unique(60)).await.unwrap();
    t.produce("f", &Task::new("sms", "to:ann"), unique(60)).await.unwrap();
    t.produce("g", &task, unique(60).queue("other")).await.unwrap();
    t.produce("h", &task, TaskOptions::new().queue("q")).await.unwrap();
    assert_eq!(t.all_ids("q", asynq_core::TaskState::Pending).await, ["a", "e", "f", "h"]);
}

/// A unique enqueue refused for an ID conflict keeps the lock it took first (Go quirk), so the
/// same task under a fresh ID is then a duplicate.
pub async fn case_unique_lock_is_kept_after_an_id_conflict<F: BrokerFactory<Broker: asynq_core::broker::Enqueue>>(
    factory: &F,
) {
    let t = Fixture::producer(factory).await;
    t.produce_plain("q", "a").await;
    let before = t.snapshot("q").await;
    let task = Task::new("email", "p");

    assert_id_conflict(t.produce("a", &task, unique(60)).await, "q", "a");

    assert_duplicate(t.produce("b", &task, unique(60)).await, "q", "email");
    assert_eq!(t.snapshot("q").await, before);
}

/// Scheduled and grouped unique tasks take the lock too.
pub async fn case_scheduled_and_grouped_unique_tasks_hold_the_lock<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let report = Task::new("report", "daily");
    t.enqueue("s", &report, unique(60).process_in(secs(3_600))).await.unwrap();
    let digest = Task::new("digest", "weekly");
    t.enqueue("g", &digest, unique(60).group("g")).await.unwrap();

    assert_duplicate(t.enqueue("s2", &report, unique(60)).await, "q", "report");
    assert_duplicate(t.enqueue("g2", &digest, unique(60)).await, "q", "digest");
    assert_duplicate(t.enqueue("g3", &digest, unique(60).group("g")).await, "q", "digest");

    t.advance(secs(3_600));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);
    assert_duplicate(t.enqueue("s3", &report, unique(60)).await, "q", "report");
}

/// Success (Done or Complete) releases the task's lock: the same unique task can be enqueued
/// again at once.
pub async fn case_unique_lock_released_on_success<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    for (i, outcome) in [Outcome::Done, Outcome::Complete].into_iter().enumerate() {
        let task = Task::new("email", format!("to:{i}"));
        let first = format!("first-{i}");
        t.enqueue(&first, &task, unique(3_600).retention(secs(60))).await.unwrap();
        let msg = t.take("q", &first).await.message;
        t.finish(&msg, outcome).await;

        let again = format!("again-{i}");
        t.enqueue(&again, &task, unique(3_600)).await.unwrap();
        t.take("q", &again).await;
    }
}

/// Retry (failure or not), archive and requeue keep the lock; a task that succeeds after a retry
/// releases it then.
pub async fn case_unique_lock_kept_until_success<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let outcomes = [retry(at(60), "boom", true), retry(at(60), "later", false), archive("gave up"), Outcome::Requeue];
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let task = Task::new("email", format!("to:{i}"));
        let id = format!("t{i}");
        t.enqueue(&id, &task, unique(3_600)).await.unwrap();
        let msg = t.take("q", &id).await.message;
        t.finish(&msg, outcome).await;

        assert_duplicate(t.enqueue(&format!("dup{i}"), &task, unique(3_600)).await, "q", "email");
        if t.info("q").await.pending > 0 {
            t.take("q", &id).await; // the requeued task, out of the next round's way
        }
    }

    t.set(at(60));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 2);
    let msg = t.take("q", "t0").await.message;
    t.finish(&msg, Outcome::Done).await;
    t.enqueue("after", &Task::new("email", "to:0"), unique(3_600)).await.unwrap();
    assert_duplicate(t.enqueue("still", &Task::new("email", "to:1"), unique(3_600)).await, "q", "email");
}

/// The stored message of a unique task carries its lock key (one per type and payload, in a form
/// of the broker's own: Go's key on Redis, checked by `redis_compat`); everything else is the
/// message enqueued. A task that is not unique has none.
pub async fn case_dequeued_unique_task_carries_its_lock_key<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let a = t.enqueue("a", &Task::new("email", "\x01\x02"), unique(60)).await.unwrap();
    let b = t.enqueue("b", &Task::new("email", "\x03"), unique(60)).await.unwrap();
    let c = t.enqueue("c", &Task::new("email", "\x04"), TaskOptions::new().queue("q")).await.unwrap();

    let taken: Vec<StoredTask> = t.dequeue(&["q"], 3).await.into_iter().map(|d| d.message).collect();

    let (key_a, key_b) = (taken[0].unique_key.clone(), taken[1].unique_key.clone());
    assert!(key_a.as_ref().zip(key_b.as_ref()).is_some_and(|(a, b)| !a.is_empty() && a != b), "{key_a:?}, {key_b:?}");
    let with_key = |msg: StoredTask, unique_key: Option<String>| StoredTask { unique_key, ..msg };
    assert_eq!(taken, [with_key(a, key_a), with_key(b, key_b), c]);
}

/// The lock runs out after its TTL (still held at exactly the TTL); for a scheduled task the TTL
/// counts from enqueue and includes the delay.
pub async fn case_unique_lock_expires_after_its_ttl<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    if lacking(factory, "case_unique_lock_expires_after_its_ttl", Capability::ClockDrivenExpiry) {
        return;
    }
    let t = Fixture::new(factory).await;
    let task = Task::new("email", "p");
    t.enqueue("a", &task, unique(60)).await.unwrap();
    t.advance(secs(60));
    assert_duplicate(t.enqueue("b", &task, unique(60)).await, "q", "email");
    t.advance(secs(1));
    t.enqueue("b", &task, unique(60)).await.unwrap();

    let report = Task::new("report", "daily");
    t.enqueue("s", &report, unique(60).process_in(secs(3_600))).await.unwrap();
    t.advance(secs(3_660));
    assert_duplicate(t.enqueue("s2", &report, unique(60)).await, "q", "report");
    t.advance(secs(1));
    t.enqueue("s2", &report, unique(60)).await.unwrap();
}

/// Success releases a lock only if the task still holds it: once its lock ran out and another
/// task took it, the first task's success leaves the new lock alone.
pub async fn case_success_releases_only_a_lock_the_task_still_holds<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    if lacking(factory, "case_success_releases_only_a_lock_the_task_still_holds", Capability::ClockDrivenExpiry) {
        return;
    }
    let t = Fixture::new(factory).await;
    let task = Task::new("email", "p");
    t.enqueue("a", &task, unique(10)).await.unwrap();
    let a = t.take("q", "a").await.message;
    t.advance(secs(11));
    t.enqueue("b", &task, unique(3_600)).await.unwrap();

    t.finish(&a, Outcome::Done).await;

    assert_duplicate(t.enqueue("c", &task, unique(3_600)).await, "q", "email");
}
