//! Shared concurrency slots (`ConcurrencySlots`): at most the limit of holders at once, by the
//! caller's clock; a hold ends when it is released or expires, and lasts while it is renewed;
//! every clone of a broker sees the same holders.

use super::BrokerFactory;
use super::fixture::{Fixture, secs};
use asynq_core::TaskId;
use asynq_core::slots::{ConcurrencySlots, SharedLimit};

fn id(id: &str) -> TaskId {
    TaskId::new(id).unwrap()
}

/// Up to the limit of holders get a slot, the next is refused until one releases; a holder
/// asking again keeps its slot; other keys count apart.
pub async fn case_slots_admit_up_to_the_limit<F: BrokerFactory>(factory: &F)
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
pub async fn case_a_slot_comes_back_when_its_hold_expires<F: BrokerFactory>(factory: &F)
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
