//! Shared concurrency slots (`ConcurrencySlots`): at most the limit of holders at once, by the
//! caller's clock; a hold ends when it is released or expires, and lasts while it is renewed;
//! every clone of a broker sees the same holders.

use super::BrokerFactory;
use super::fixture::{Fixture, secs};
use asynq_core::TaskId;
use asynq_core::broker::ConcurrencySlots;
use asynq_core::slots::SharedLimit;

fn id(id: &str) -> TaskId {
    TaskId::new(id).unwrap()
}

/// Up to the limit of holders get a slot, the next is refused until one releases; a holder
/// asking again keeps its slot; other keys count apart.
pub async fn case_slots_admit_up_to_the_limit<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: ConcurrencySlots,
{
    let t = Fixture::new(factory).await;
    let limit = SharedLimit::new("type:resize", 2).unwrap();
    let (now, expiry) = (t.now(), t.now() + secs(30));
    assert!(t.broker.take_slot(&limit, &id("a"), now, expiry).await.unwrap());
    assert!(t.broker.take_slot(&limit, &id("b"), now, expiry).await.unwrap());
    assert!(!t.broker.take_slot(&limit, &id("c"), now, expiry).await.unwrap(), "both slots are held");
    assert!(t.broker.take_slot(&limit, &id("a"), now, expiry).await.unwrap(), "a holder keeps its slot");
    let other = SharedLimit::new("tenant:42", 1).unwrap();
    assert!(t.broker.take_slot(&other, &id("c"), now, expiry).await.unwrap(), "another key counts apart");

    let clone = t.broker.clone();
    clone.release_slot(limit.key(), &id("a")).await.unwrap();
    assert!(t.broker.take_slot(&limit, &id("c"), now, expiry).await.unwrap(), "a released slot is free");
    let holders: Vec<String> =
        t.broker.slot_holders(limit.key(), now).await.unwrap().into_iter().map(|(id, _)| id.into_string()).collect();
    assert_eq!(holders.len(), 2);
    assert!(holders.contains(&"b".to_owned()) && holders.contains(&"c".to_owned()), "{holders:?}");
    clone.release_slot(limit.key(), &id("nobody")).await.expect("releasing no slot is no error");
}

/// A hold nobody renews expires by the caller's clock, and its slot comes back; a renewed hold
/// lasts; a hold that is gone is not renewed into being.
pub async fn case_a_slot_comes_back_when_its_hold_expires<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: ConcurrencySlots,
{
    let t = Fixture::new(factory).await;
    let limit = SharedLimit::new("type:resize", 2).unwrap();
    let start = t.now();
    assert!(t.broker.take_slot(&limit, &id("alive"), start, start + secs(30)).await.unwrap());
    assert!(t.broker.take_slot(&limit, &id("dead"), start, start + secs(30)).await.unwrap());
    t.advance(secs(20));
    t.broker.extend_slots(limit.key(), &[id("alive"), id("never-held")], t.now() + secs(30)).await.unwrap();
    assert!(!t.broker.take_slot(&limit, &id("new"), t.now(), t.now() + secs(30)).await.unwrap());

    t.advance(secs(11));
    let holders = t.broker.slot_holders(limit.key(), t.now()).await.unwrap();
    assert_eq!(holders, vec![(id("alive"), start + secs(50))], "the dead holder's hold expired");
    assert!(t.broker.take_slot(&limit, &id("new"), t.now(), t.now() + secs(30)).await.unwrap());
    assert!(!t.broker.take_slot(&limit, &id("never-held"), t.now(), t.now() + secs(30)).await.unwrap());
}

/// Long enough for a broker to deliver a release over loopback many times over.
const DELIVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a wait that should not end is watched.
const QUIET: std::time::Duration = std::time::Duration::from_millis(300);

/// A wait for a slot returns at once while one is free (expired holds not counted), and
/// otherwise once a holder of its key gives a slot back, through any clone of the broker; a
/// release of another key, or of a slot nobody held, does not end it.
pub async fn case_a_released_slot_wakes_a_waiter<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: ConcurrencySlots,
{
    let t = Fixture::new(factory).await;
    let limit = SharedLimit::new("type:resize", 2).unwrap();
    let now = t.now();
    within(DELIVERY, t.broker.wait_for_slot(&limit, now), "a free slot is waited for at once").await.unwrap();
    assert!(t.broker.take_slot(&limit, &id("a"), now, now + secs(30)).await.unwrap());
    assert!(t.broker.take_slot(&limit, &id("b"), now, now + secs(10)).await.unwrap());
    let other = SharedLimit::new("tenant:42", 1).unwrap();
    assert!(t.broker.take_slot(&other, &id("c"), now, now + secs(30)).await.unwrap());

    let (broker, waited) = (t.broker.clone(), limit.clone());
    let mut waiter = tokio::spawn(async move { broker.wait_for_slot(&waited, now).await });
    assert!(tokio::time::timeout(QUIET, &mut waiter).await.is_err(), "woke although every slot is held");
    t.broker.release_slot(other.key(), &id("c")).await.unwrap();
    t.broker.release_slot(limit.key(), &id("nobody")).await.unwrap();
    assert!(
        tokio::time::timeout(QUIET, &mut waiter).await.is_err(),
        "woke although only another key's slot, or no slot, was given back"
    );
    let clone = t.broker.clone();
    clone.release_slot(limit.key(), &id("a")).await.unwrap();
    within(DELIVERY, waiter, "no wake-up after a release").await.unwrap().unwrap();

    assert!(t.broker.take_slot(&limit, &id("d"), now, now + secs(30)).await.unwrap());
    let later = now + secs(11);
    within(DELIVERY, t.broker.wait_for_slot(&limit, later), "a slot whose hold expired is free at once").await.unwrap();
}

/// What `future` gives, which it must give within `limit`.
async fn within<T>(limit: std::time::Duration, future: impl std::future::Future<Output = T>, what: &str) -> T {
    tokio::time::timeout(limit, future).await.unwrap_or_else(|_| panic!("{what}: not within {limit:?}"))
}
