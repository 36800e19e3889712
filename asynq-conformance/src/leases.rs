//! Leases on active tasks: the heartbeater's extension, which touches only tasks still active
//! in the given queue, and the recoverer's query for leases that ran out by a cutoff.

use super::BrokerFactory;
use super::fixture::{Fixture, at, millis, names, secs};
use asynq_core::broker::{Dequeue, Recover};
use asynq_core::{TaskMessage, TaskState};
use std::time::SystemTime;

/// `extend_leases` moves the lease of each listed active task of the queue to now + 30 s (whole
/// seconds) and returns it; pending, unknown and other queues' IDs are ignored.
pub async fn case_extend_leases_moves_only_active_ids<F: BrokerFactory>(factory: &F) {
    let t = Fixture::new(factory).await;
    let a = t.activate("q", "a").await;
    let b = t.activate("q", "b").await;
    let o = t.activate("other", "o").await;
    t.plain("q", "p").await;
    t.advance(millis(10_600));

    let ids = names(&["a", "p", "gone", "o"]);
    assert_eq!(t.broker.extend_leases("q", &ids).await.unwrap(), at(40));
    assert_eq!(t.broker.extend_leases("unknown", &ids).await.unwrap(), at(40));

    let broker = &t.broker;
    let expired =
        |cutoff: SystemTime| async move { broker.list_lease_expired(&names(&["q", "other"]), cutoff).await.unwrap() };
    assert_eq!(expired(at(39)).await, [b.clone(), o.clone()]);
    assert_eq!(expired(at(40)).await, [b, a, o]);
    let info = t.info("q").await;
    assert_eq!((info.active, info.pending), (2, 1));
    assert_eq!(t.task("q", "p").await.state, TaskState::Pending);
}

/// `list_lease_expired` returns exactly the active tasks whose lease is at or before the cutoff
/// (in whole seconds), queue by queue in the given order and by lease within a queue, and moves
/// nothing.
pub async fn case_list_lease_expired_returns_exactly_the_expired<F: BrokerFactory>(factory: &F) {
    let t = Fixture::new(factory).await;
    let a = t.activate("q", "a").await;
    t.advance(secs(10));
    let b = t.activate("q", "b").await;
    t.advance(secs(10));
    let c = t.activate("other", "c").await;
    t.plain("q", "pending").await;

    let broker = &t.broker;
    let expired = |queues: &'static [&'static str], cutoff: SystemTime| async move {
        broker.list_lease_expired(&names(queues), cutoff).await.unwrap()
    };
    let none: [TaskMessage; 0] = [];
    assert_eq!(expired(&["q", "other"], at(30) - millis(1)).await, none);
    assert_eq!(expired(&["q", "other"], at(30)).await, std::slice::from_ref(&a));
    assert_eq!(expired(&["q", "other"], at(40) + millis(500)).await, [a.clone(), b.clone()]);
    assert_eq!(expired(&["q", "other"], at(50)).await, [a.clone(), b.clone(), c.clone()]);
    assert_eq!(expired(&["other", "q"], at(50)).await, [c, a, b]);
    assert_eq!(expired(&["unknown"], at(1_000)).await, none);
    assert_eq!(expired(&[], at(1_000)).await, none);
    assert_eq!(t.info("q").await.active, 2);
}
