//! Cancellation requests: what [`Cancel::cancel`] publishes reaches every live
//! [`Cancel::cancellations`] stream, in order, from the moment it subscribed.

use super::BrokerFactory;
use super::fixture::Fixture;
use asynq_core::TaskId;
use asynq_core::broker::Cancel;
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
pub async fn case_cancellations_reach_every_subscriber<F: BrokerFactory>(factory: &F)
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
pub async fn case_a_dropped_subscription_leaves_the_others_listening<F: BrokerFactory>(factory: &F)
where
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
