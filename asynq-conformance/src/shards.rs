//! Sharded queues: a declaration is kept, read back alike by one logical name and in the list
//! of all, answered again when repeated with its count, and its shards are ordinary registered
//! queues named by the rules of `asynq_core::shard`; a declaration that breaks a rule or takes a
//! name in use is refused with a typed error and writes nothing.

use super::BrokerFactory;
use super::fixture::Fixture;
use asynq_core::broker::{Inspect, ShardedQueues};
use asynq_core::shard::{ShardedQueue, is_shard_of};
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
