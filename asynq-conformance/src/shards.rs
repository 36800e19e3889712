//! Sharded queues: a declaration is kept, read back alike by one logical name and in the list
//! of all, answered again when repeated with its count, and its shards are ordinary registered
//! queues named by the rules of `asynq_core::shard`; a declaration that breaks a rule or takes a
//! name in use is refused with a typed error and writes nothing. A reshard makes the next
//! generation, the previous one kept draining until it is dropped, after the grace and once its
//! shards are empty; a reshard that breaks a rule is refused and writes nothing. A task placed
//! on a dropped generation's shard is kept in a stray queue, removed once it ran.

use super::BrokerFactory;
use super::fixture::Fixture;
use asynq_core::broker::{Inspect, Outcome, ShardedQueues};
use asynq_core::shard::{DRAIN_GRACE, RetiredTotals, ShardedQueue, is_shard_of, logical_of, logical_queue_info};
use asynq_core::{Broker, Error, QueueName};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The broker's sharded queues, which the memory and Redis brokers have.
fn sharded<B: Broker + Clone>(t: &Fixture<B>) -> Arc<dyn ShardedQueues> {
    Arc::new(t.broker.clone()).as_sharded_queues().expect("the broker keeps sharded queues")
}

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// A declaration is kept and read back; its shards are registered queues with the names the
/// rules allow, distinct, one per index; declaring it again with its count answers the same.
pub async fn case_sharded_queue_declaration_is_kept<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let shards = sharded(&t);
    let orders = shards.declare_sharded_queue(&q("orders"), 4).await.unwrap();
    assert_eq!((orders.logical().as_str(), orders.count(), orders.generation()), ("orders", 4, 1));
    // The rules of the core type hold whatever names the broker chose (a Cluster salts them).
    let checked = ShardedQueue::new(q("orders"), orders.shards().to_vec(), orders.generation()).unwrap();
    assert_eq!(checked, orders);
    assert!(orders.shards().iter().all(|shard| is_shard_of(shard, &q("orders"))));
    assert_eq!(orders.shards().iter().collect::<BTreeSet<_>>().len(), 4, "distinct shards");

    assert_eq!(shards.declare_sharded_queue(&q("orders"), 4).await.unwrap(), orders, "declared again");
    assert_eq!(shards.sharded_queue(&q("orders")).await.unwrap(), Some(orders.clone()));
    assert_eq!(shards.sharded_queue(&q("other")).await.unwrap(), None);
    let single = shards.declare_sharded_queue(&q("audit"), 1).await.unwrap();
    assert_eq!(shards.sharded_queues().await.unwrap(), vec![single, orders.clone()], "by logical name");

    let registered: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();
    for shard in orders.shards() {
        assert!(registered.contains(shard), "shard {shard} is a registered queue");
        assert_eq!(t.counts(shard).await.size, 0);
    }
    assert!(!registered.contains(&q("orders")), "the logical name is no queue of its own");
}

/// A count out of range, a logical name holding the separator, a name that is a queue already
/// or that existing queues' names would be taken for as shards, and a second count for a
/// declared queue are refused with typed errors, and nothing is written.
pub async fn case_sharded_queue_refusals_write_nothing<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let shards = sharded(&t);
    t.plain("plain", "a").await;
    t.plain("legacy~0", "b").await;
    let orders = shards.declare_sharded_queue(&q("orders"), 2).await.unwrap();
    let queues_before: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();

    for (name, count) in [("fresh", 0), ("fresh", asynq_core::shard::MAX_SHARDS + 1), ("a~b", 2)] {
        let refused = shards.declare_sharded_queue(&q(name), count).await;
        assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "{name} x{count}: {refused:?}");
    }
    for (name, count) in [("plain", 2), ("legacy", 2), ("orders", 3)] {
        match shards.declare_sharded_queue(&q(name), count).await {
            Err(Error::QueueNameConflict { queue, .. }) => assert_eq!(queue, name),
            other => panic!("{name} x{count}: expected QueueNameConflict, got {other:?}"),
        }
    }

    assert_eq!(shards.sharded_queues().await.unwrap(), vec![orders], "no declaration written");
    let queues_after: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();
    assert_eq!(queues_after, queues_before, "no queue registered");
    assert_eq!(t.counts("plain").await.size, 1);
}

/// A reshard makes generation 2 with new shard names (registered, distinct from the first
/// generation's, still telling their logical queue) and keeps generation 1 draining since the
/// clock's now, read back alike; asking again for the count answers it. The draining
/// generation is not dropped before the grace, nor while one of its shards holds a task; then
/// it is, its shards' queues removed, and a further reshard makes generation 3.
pub async fn case_sharded_queue_reshard_keeps_the_old_generation_until_drained<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let shards = sharded(&t);
    let first = shards.declare_sharded_queue(&q("orders"), 3).await.unwrap();
    let old_shard = first.shards()[1].as_str();
    t.plain(old_shard, "old").await;
    let second = shards.reshard_queue(&q("orders"), 5).await.unwrap();
    assert_eq!((second.generation(), second.count()), (2, 5));
    let checked = ShardedQueue::new(q("orders"), second.shards().to_vec(), 2).unwrap();
    assert_eq!(checked.shards(), second.shards(), "named by the rules of generation 2");
    assert!(second.shards().iter().all(|s| logical_of(s) == Some("orders") && !first.has_shard(s)), "{second:?}");
    let draining = second.draining().expect("generation 1 drains");
    assert_eq!((draining.generation(), draining.shards(), draining.since()), (1, first.shards(), t.now()));
    assert_eq!(shards.sharded_queue(&q("orders")).await.unwrap(), Some(second.clone()), "read back");
    assert_eq!(shards.sharded_queues().await.unwrap(), vec![second.clone()]);
    assert_eq!(shards.reshard_queue(&q("orders"), 5).await.unwrap(), second, "the same count answers it");
    assert_eq!(shards.declare_sharded_queue(&q("orders"), 5).await.unwrap(), second);
    let registered: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();
    assert!(second.all_shards().all(|shard| registered.contains(shard)), "both generations are queues");

    assert!(!shards.drop_drained_shards(&q("orders")).await.unwrap(), "within the grace");
    t.advance(DRAIN_GRACE);
    assert!(!shards.drop_drained_shards(&q("orders")).await.unwrap(), "a shard holds a task");
    assert_eq!(shards.sharded_queue(&q("orders")).await.unwrap(), Some(second.clone()));
    let taken = t.take(old_shard, "old").await;
    assert!(!shards.drop_drained_shards(&q("orders")).await.unwrap(), "the task is active");
    t.finish(&taken.message, Outcome::Done).await;
    let broker = &t.broker;
    let totals = |declared: ShardedQueue| async move {
        let mut infos = Vec::new();
        for shard in declared.all_shards() {
            infos.push(broker.queue_info(shard).await.unwrap());
        }
        let sum = logical_queue_info(&declared, &infos, &[]);
        (sum.processed_total, sum.failed_total)
    };
    assert_eq!(totals(second.clone()).await, (1, 0));
    assert!(shards.drop_drained_shards(&q("orders")).await.unwrap(), "drained");
    let dropped = second.drained(RetiredTotals { processed: 1, failed: 0 });
    assert_eq!(shards.sharded_queue(&q("orders")).await.unwrap(), Some(dropped.clone()));
    assert_eq!(totals(dropped).await, (1, 0), "the dropped generation's total is kept");
    let registered: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();
    assert!(first.shards().iter().all(|shard| !registered.contains(shard)), "the old shards' queues removed");
    assert!(second.shards().iter().all(|shard| registered.contains(shard)));
    assert!(!shards.drop_drained_shards(&q("orders")).await.unwrap(), "nothing left to drop");

    let third = shards.reshard_queue(&q("orders"), 2).await.unwrap();
    assert_eq!((third.generation(), third.draining().map(|d| d.generation())), (3, Some(2)));
    assert!(third.shards().iter().all(|shard| !second.has_shard(shard)));
}

/// A task placed on a shard of a generation dropped already makes a stray: a registered queue
/// named as the old shard, which a drop leaves alone while it holds a task and removes once the
/// task ran, the declaration left as it was. A stray of another name is never removed.
pub async fn case_a_stray_of_a_dropped_generation_is_removed_once_run<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let shards = sharded(&t);
    let first = shards.declare_sharded_queue(&q("orders"), 2).await.unwrap();
    let second = shards.reshard_queue(&q("orders"), 3).await.unwrap();
    t.advance(DRAIN_GRACE);
    assert!(shards.drop_drained_shards(&q("orders")).await.unwrap(), "generation 1 dropped");
    let dropped = second.drained(RetiredTotals::default());
    assert_eq!(shards.sharded_queue(&q("orders")).await.unwrap(), Some(dropped.clone()));

    // A producer held up past the grace places its task on the dropped shard.
    let stray = first.shards()[1].as_str();
    t.plain(stray, "late").await;
    t.plain("orders~mine", "someone's").await;
    let registered: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();
    assert!(registered.contains(stray) && registered.contains("orders~mine"), "{registered:?}");
    assert!(dropped.is_dropped_shard(stray) && !dropped.is_dropped_shard("orders~mine"));
    assert!(!shards.drop_drained_shards(&q("orders")).await.unwrap(), "the stray holds a task");
    let taken = t.take(stray, "late").await;
    assert!(!shards.drop_drained_shards(&q("orders")).await.unwrap(), "the stray's task is active");
    t.finish(&taken.message, Outcome::Done).await;
    let theirs = t.take("orders~mine", "someone's").await;
    t.finish(&theirs.message, Outcome::Done).await;

    assert!(shards.drop_drained_shards(&q("orders")).await.unwrap(), "the stray is removed");
    assert_eq!(shards.sharded_queue(&q("orders")).await.unwrap(), Some(dropped), "the declaration as it was");
    let registered: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();
    assert!(!registered.contains(stray), "{registered:?}");
    assert!(registered.contains("orders~mine"), "a stray of another name stays: {registered:?}");
    assert!(second.shards().iter().all(|shard| registered.contains(shard)));
    assert!(!shards.drop_drained_shards(&q("orders")).await.unwrap(), "nothing left to drop");
}

/// A reshard with a count out of range or an invalid name, of a name that is no sharded queue,
/// of a queue whose previous generation still drains, or onto names a queue holds already is
/// refused with a typed error, and nothing is written.
pub async fn case_sharded_queue_reshard_refusals_write_nothing<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let shards = sharded(&t);
    t.plain("plain", "a").await;
    let orders = shards.declare_sharded_queue(&q("orders"), 2).await.unwrap();
    shards.declare_sharded_queue(&q("audit"), 2).await.unwrap();
    let audit = shards.reshard_queue(&q("audit"), 3).await.unwrap();
    t.plain("orders~g2~0", "squatter").await;
    let declared_before = shards.sharded_queues().await.unwrap();
    assert_eq!(declared_before, vec![audit.clone(), orders.clone()]);
    let queues_before: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();

    for (name, count) in [("orders", 0), ("orders", asynq_core::shard::MAX_SHARDS + 1), ("a~b", 2)] {
        let refused = shards.reshard_queue(&q(name), count).await;
        assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "{name} x{count}: {refused:?}");
    }
    for (name, count) in [("plain", 2), ("nothing", 2), ("audit", 4)] {
        let refused = shards.reshard_queue(&q(name), count).await;
        assert!(matches!(refused, Err(Error::FailedPrecondition(_))), "{name} x{count}: {refused:?}");
    }
    match shards.reshard_queue(&q("orders"), 3).await {
        Err(Error::QueueNameConflict { queue, .. }) => assert_eq!(queue, "orders"),
        other => panic!("expected QueueNameConflict, got {other:?}"),
    }
    let refused = shards.declare_sharded_queue(&q("orders"), 3).await;
    assert!(matches!(refused, Err(Error::QueueNameConflict { .. })), "a plain declaration never reshards: {refused:?}");

    assert_eq!(shards.sharded_queues().await.unwrap(), declared_before, "no declaration written");
    let queues_after: BTreeSet<QueueName> = t.broker.queues().await.unwrap().into_iter().collect();
    assert_eq!(queues_after, queues_before, "no queue registered");
}
