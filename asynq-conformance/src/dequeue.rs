//! Handing tasks to workers: first in first out, at most `max`, queues in the given order,
//! paused queues skipped, a 30-second lease in whole seconds, and the stored message unchanged.

use super::BrokerFactory;
use super::fixture::{Fixture, at, millis, names, retry, secs};
use asynq_core::broker::WorkerBroker;
use asynq_core::broker::{ExpiredLease, Forward, Inspect, LeaseStage, Recover};
use asynq_core::{QueueInfo, QueueName, Task, TaskInfo, TaskOptions, TaskState};
use bytes::Bytes;

/// Pending tasks come out in the order they went in, also when enqueues and dequeues interleave.
pub async fn case_dequeue_is_first_in_first_out<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    for id in ["a", "b", "c", "d"] {
        t.plain("q", id).await;
    }
    assert_eq!(t.dequeue_ids(&["q"], 2).await, ["a", "b"]);
    t.plain("q", "e").await;
    assert_eq!(t.dequeue_ids(&["q"], 10).await, ["c", "d", "e"]);
}

/// A dequeue takes at most `max` tasks (none for zero) and leaves the rest pending.
pub async fn case_dequeue_respects_max<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    for id in ["a", "b", "c", "d", "e"] {
        t.plain("q", id).await;
    }

    assert!(t.dequeue(&["q"], 0).await.is_empty());
    assert_eq!(t.dequeue_ids(&["q"], 2).await, ["a", "b"]);
    let info = t.info("q").await;
    assert_eq!((info.pending, info.active), (3, 2));
    assert_eq!(t.dequeue_ids(&["q"], 2).await, ["c", "d"]);
    assert_eq!(t.dequeue_ids(&["q"], 10).await, ["e"]);
    assert!(t.dequeue(&["q"], 10).await.is_empty());
    let info = t.info("q").await;
    assert_eq!((info.pending, info.active, info.size), (0, 5, 5));
}

/// The first queue is drained before the next is tried; unknown queues are passed over.
pub async fn case_dequeue_drains_queues_in_the_given_order<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    for id in ["h1", "h2"] {
        t.plain("high", id).await;
    }
    for id in ["l1", "l2", "l3"] {
        t.plain("low", id).await;
    }

    assert_eq!(t.dequeue_ids(&["high", "low"], 3).await, ["h1", "h2", "l1"]);
    assert_eq!(t.dequeue_ids(&["low", "high"], 1).await, ["l2"]);
    t.plain("high", "h3").await;
    assert_eq!(t.dequeue_ids(&["missing", "high", "low"], 5).await, ["h3", "l3"]);
}

/// A paused queue gives no task and keeps its tasks pending; once unpaused it gives them again.
pub async fn case_dequeue_skips_a_paused_queue<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    t.plain("paused", "p1").await;
    t.plain("paused", "p2").await;
    t.plain("open", "o1").await;
    t.store.pause_queue(&QueueName::from_static("paused")).await.unwrap();

    assert_eq!(t.dequeue_ids(&["paused", "open"], 5).await, ["o1"]);
    assert!(t.dequeue(&["paused"], 5).await.is_empty());
    let info = t.info("paused").await;
    assert_eq!((info.paused, info.pending, info.active), (true, 2, 0));

    t.store.unpause_queue(&QueueName::from_static("paused")).await.unwrap();
    assert_eq!(t.dequeue_ids(&["paused", "open"], 5).await, ["p1", "p2"]);
}

/// A dequeued task is active with a lease until now + 30 s, truncated to whole seconds; the
/// stored lease is the one returned.
pub async fn case_dequeue_leases_for_thirty_whole_seconds<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let msg = t.plain("q", "a").await;
    t.advance(millis(700));

    let taken = t.take("q", "a").await;

    assert_eq!(taken.lease_expiry, at(30));
    assert_eq!(t.task("q", "a").await, TaskInfo::new(&msg, TaskState::Active, None, None));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.active, want.size) = (1, 1);
    assert_eq!(t.counts("q").await, want);
    let queues = names(&["q"]);
    assert!(t.broker.list_lease_expired(&queues, at(30) - millis(1)).await.unwrap().is_empty());
    let expired = ExpiredLease { message: msg, stage: LeaseStage::Taken, stalls: 0 };
    assert_eq!(t.broker.list_lease_expired(&queues, at(30)).await.unwrap(), [expired]);
}

/// The message a worker gets is the message enqueued, field for field: binary payload, headers,
/// retry, timeout, deadline, retention; also after a trip through the scheduled set.
pub async fn case_dequeued_message_equals_the_enqueued_one<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let full = Task::new("email:welcome", Bytes::from_static(b"\x00\xff{\"user\":42}"))
        .with_header("trace-id", "abc123")
        .with_header("lang", "en");
    let options = TaskOptions::new().queue("q").max_retry(7).timeout(secs(20)).deadline(at(3_600)).retention(secs(600));
    let full = t.enqueue("full", &full, options).await.unwrap();
    let bare = t.enqueue("bare", &Task::new("bare", ""), TaskOptions::new().queue("q").deadline(at(60))).await.unwrap();
    let later = TaskOptions::new().queue("q").max_retry(0).process_in(secs(10));
    let later = t.enqueue("later", &Task::new("later", "x").with_header("k", "v"), later).await.unwrap();

    assert_eq!(t.take("q", "full").await.message, full);
    assert_eq!(t.take("q", "bare").await.message, bare);
    t.advance(secs(10));
    t.broker.forward_ready(&names(&["q"])).await.unwrap();
    assert_eq!(t.take("q", "later").await.message, later);
}

/// Nothing to take gives an empty vector: a fresh broker, no queues, an unknown queue, and a
/// queue holding only scheduled, aggregating, retry and active tasks.
pub async fn case_dequeue_returns_nothing_when_nothing_is_pending<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    assert!(t.dequeue(&["q"], 10).await.is_empty());
    assert!(t.dequeue(&[], 10).await.is_empty());

    t.enqueue("s", &Task::new("t", "s"), TaskOptions::new().queue("q").process_in(secs(60))).await.unwrap();
    t.enqueue("g", &Task::new("t", "g"), TaskOptions::new().queue("q").group("g")).await.unwrap();
    t.run("q", "r", retry(at(60), "boom", true)).await;
    t.activate("q", "a").await;

    assert!(t.dequeue(&["q", "unknown"], 10).await.is_empty());
    let info = t.info("q").await;
    assert_eq!((info.pending, info.size), (0, 4));
}
