//! Cancellation requests: what [`Cancel::cancel`] publishes reaches every live
//! [`Cancel::cancellations`] stream, in order, from the moment it subscribed; each request is
//! kept for [`CANCEL_KEEP`] until a server settles it; and the request says what it found.

use super::BrokerFactory;
use super::fixture::{Fixture, secs};
use super::servers::{server, worker};
use asynq_core::broker::{Cancel, ServerState};
use asynq_core::{CANCEL_KEEP, CancelOutcome, QueueName, TaskId, TaskState};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::time::Duration;

/// Long enough for a broker to deliver a request over loopback many times over.
const DELIVERY: Duration = Duration::from_secs(5);

/// The next request on `stream`, which must come.
async fn next(stream: &mut BoxStream<'static, String>, what: &str) -> String {
    tokio::time::timeout(DELIVERY, stream.next())
        .await
        .unwrap_or_else(|_| panic!("no cancellation request arrived: {what}"))
        .unwrap_or_else(|| panic!("the cancellation stream ended: {what}"))
}

/// Every subscription hears every request published after it subscribed, in order. (One
/// published just before may reach it too, still on its way when it subscribed.)
pub async fn case_cancellations_reach_every_subscriber<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Cancel,
{
    let t = Fixture::new(factory).await;
    let mut early = t.broker.cancellations().await.expect("subscribe");
    t.broker.cancel(&TaskId::from_static("a")).await.unwrap();
    let mut late = t.broker.cancellations().await.expect("subscribe");
    t.broker.cancel(&TaskId::from_static("b")).await.unwrap();
    t.broker.cancel(&TaskId::from_static("c")).await.unwrap();
    assert_eq!(next(&mut early, "first").await, "a");
    assert_eq!(next(&mut early, "second").await, "b");
    assert_eq!(next(&mut early, "third").await, "c");
    let mut first = next(&mut late, "the first after it subscribed").await;
    if first == "a" {
        first = next(&mut late, "the first after it subscribed").await;
    }
    assert_eq!(first, "b");
    assert_eq!(next(&mut late, "the second after it subscribed").await, "c");
}

/// A subscription that is dropped does not disturb the others, and a request nobody hears is
/// not an error.
pub async fn case_a_dropped_subscription_leaves_the_others_listening<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Cancel,
{
    let t = Fixture::new(factory).await;
    t.broker.cancel(&TaskId::from_static("unheard")).await.expect("cancelling with no subscriber succeeds");
    let dropped = t.broker.cancellations().await.expect("subscribe");
    let mut kept = t.broker.cancellations().await.expect("subscribe");
    drop(dropped);
    t.broker.cancel(&TaskId::from_static("a")).await.unwrap();
    assert_eq!(next(&mut kept, "after another subscription was dropped").await, "a");
}

/// A request is kept, unheard, for [`CANCEL_KEEP`] (asking again renews it), for a server that
/// subscribes later; settling it removes it, and only the first settle finds it.
pub async fn case_a_request_is_kept_until_settled_or_expired<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Cancel,
{
    let t = Fixture::new(factory).await;
    let (a, b) = (TaskId::from_static("a"), TaskId::from_static("b"));
    assert!(t.broker.kept_cancellations().await.unwrap().is_empty());
    t.broker.cancel(&a).await.expect("cancelling with no subscriber succeeds");
    t.clock.advance(secs(10));
    t.broker.cancel(&b).await.unwrap();
    let a_expiry = t.now() - secs(10) + CANCEL_KEEP;
    let b_expiry = t.now() + CANCEL_KEEP;
    assert_eq!(t.broker.kept_cancellations().await.unwrap(), [(a.clone(), a_expiry), (b.clone(), b_expiry)]);

    // Asking again renews the request.
    t.clock.advance(secs(5));
    t.broker.cancel(&a).await.unwrap();
    let a_expiry = t.now() + CANCEL_KEEP;
    assert_eq!(t.broker.kept_cancellations().await.unwrap(), [(b.clone(), b_expiry), (a.clone(), a_expiry)]);

    // Settled once: the first settle finds it, the next does not.
    assert!(t.broker.settle_cancellation(&a).await.unwrap(), "a kept request is settled");
    assert!(!t.broker.settle_cancellation(&a).await.unwrap(), "a settled request is gone");
    assert!(!t.broker.settle_cancellation(&TaskId::from_static("never")).await.unwrap());
    assert_eq!(t.broker.kept_cancellations().await.unwrap(), [(b.clone(), b_expiry)]);

    // Expired: no longer listed, and settling it finds nothing.
    t.clock.set(b_expiry);
    assert!(t.broker.kept_cancellations().await.unwrap().is_empty());
    assert!(!t.broker.settle_cancellation(&b).await.unwrap(), "an expired request is not settled");
}

/// A request says what it found: the servers that report running the task, else the queue and
/// state of the task, else that no task has this ID. It is kept in every case.
pub async fn case_a_request_reports_what_it_found<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Cancel,
{
    let t = Fixture::new(factory).await;
    let unknown = TaskId::from_static("unknown");
    assert_eq!(t.broker.cancel(&unknown).await.unwrap(), CancelOutcome::UnknownTask);

    t.activate("default", "taken").await;
    t.plain("default", "pending").await;
    t.activate("critical", "running").await;
    let q = |name: &'static str| QueueName::from_static(name);
    assert_eq!(
        t.broker.cancel(&TaskId::from_static("pending")).await.unwrap(),
        CancelOutcome::NotRunning { queue: q("default"), state: TaskState::Pending }
    );
    // Active, but no heartbeat reports it yet.
    assert_eq!(
        t.broker.cancel(&TaskId::from_static("taken")).await.unwrap(),
        CancelOutcome::NotRunning { queue: q("default"), state: TaskState::Active }
    );

    let (one, two, idle) = (server("one", 1), server("two", 2), server("idle", 3));
    t.broker.write_server_state(&two, &[worker(&two, "running")], secs(10)).await.unwrap();
    t.broker.write_server_state(&one, &[worker(&one, "other"), worker(&one, "running")], secs(10)).await.unwrap();
    t.broker.write_server_state(&idle, &[], secs(10)).await.unwrap();
    assert_eq!(
        t.broker.cancel(&TaskId::from_static("running")).await.unwrap(),
        CancelOutcome::Running { servers: vec!["one-1".to_owned(), "two-2".to_owned()] }
    );
    let kept: Vec<String> =
        t.broker.kept_cancellations().await.unwrap().into_iter().map(|(id, _)| id.into_string()).collect();
    // Made at the same time, so they expire together: by ID then.
    assert_eq!(kept, ["pending", "running", "taken", "unknown"]);
}
