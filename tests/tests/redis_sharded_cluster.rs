//! A sharded queue on a 3-master Redis Cluster: the broker names the shards so that their hash
//! slots (checked against the live cluster) land on every master evenly, and a drain of the
//! logical queue through one server runs every task once, every shard served.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::broker::Capabilities;
use asynq_core::{Clock, QueueName, SystemClock};
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisCluster, redis_broker};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_spread_over_the_masters_and_a_drain_runs_every_task_once() {
    let cluster = RedisCluster::start(3);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let broker = Arc::new(redis_broker(&url, clock.clone()).await);
    let shards = broker.clone().as_sharded_queues().expect("the Redis broker shards queues");
    let orders = shards.declare_sharded_queue(&QueueName::from_static("orders"), 6).await.unwrap();

    // Two shards on each master, by the slots the live cluster computes.
    let inspector = Inspector::from_shared(broker.clone());
    let mut per_master: BTreeMap<u16, usize> = BTreeMap::new();
    for shard in orders.shards() {
        let location = inspector.queue_location(shard).await.unwrap().expect("a Cluster locates queues");
        assert_eq!(location.slot, RedisCluster::key_slot(format!("{{{shard}}}")), "{shard}");
        *per_master.entry(cluster.node_for_slot(location.slot).port()).or_default() += 1;
    }
    assert_eq!(per_master.values().copied().collect::<Vec<_>>(), [2, 2, 2], "{:?}", orders.shards());

    let client = Client::from_shared(broker.clone()).with_sharded_queues(shards);
    let total = 120;
    for n in 0..total {
        let id = format!("task-{n}");
        client.enqueue(&Task::new("ship", id.clone()), TaskOptions::new().queue("orders").task_id(id)).await.unwrap();
    }
    assert_eq!(inspector.queue_info("orders").await.unwrap().pending, total);

    let rec = Recorder::default();
    let config = Config::builder().concurrency(4).sharded_queue("orders", 1).build().unwrap();
    let mut server = Server::from_shared(broker.clone(), config).unwrap();
    server.start(rec.handler(clock, |_, _| async { Ok(()) })).unwrap();
    let drained = async {
        while rec.len() < total || inspector.queue_info("orders").await.unwrap().size > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), drained).await.expect("the logical queue drains within 20 s");
    server.shutdown().await;

    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    let mut served: BTreeMap<String, usize> = BTreeMap::new();
    for call in rec.calls() {
        *ran.entry(call.id).or_default() += 1;
        *served.entry(call.queue).or_default() += 1;
    }
    assert_eq!(ran.len(), total, "every task ran");
    assert!(ran.values().all(|n| *n == 1), "each task ran once");
    assert_eq!(served.len(), 6, "every shard was served: {served:?}");
    let info = inspector.queue_info("orders").await.unwrap();
    assert_eq!((info.size, info.processed_total), (0, total as u64));
}
