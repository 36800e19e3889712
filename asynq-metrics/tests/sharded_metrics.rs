//! A sharded queue in the scrape of a standalone exporter: its shards and the plain queue of its
//! logical name each with their own tasks (none counted twice), each series carrying the label
//! `logical_queue`, and the shard count of each declared queue; other queues keep Go's labels.
//! On the memory broker and on Redis.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod support;

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::broker::{Capabilities, ServerState};
use asynq_core::{Broker, QueueName, ServerInfo, ServerStatus, WorkerInfo};
use asynq_memory::MemoryBroker;
use asynq_tests::{PlainProducer, RedisServer, redis_broker};
use prometheus_parse::Scrape;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{Served, find, parse, value};

/// Declares `orders` with 2 shards, places 3 tasks on them and leaves 1 in the plain queue of
/// its name (as a producer that does not place tasks on shards, Go's, does), and 1 in
/// `default`; records one active server serving the shards (and the plain queue) and running one task of shard 0.
async fn fill<B: Broker + Capabilities + ServerState + Clone>(broker: &B) -> Vec<QueueName> {
    let shards = Arc::new(broker.clone()).as_sharded_queues().unwrap();
    let orders = shards.declare_sharded_queue(&QueueName::from_static("orders"), 2).await.unwrap();
    let sharding = Client::new(broker.clone());
    for n in 0..3 {
        sharding.enqueue(&Task::new("ship", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    let plain = Client::new(PlainProducer(broker.clone()));
    plain.enqueue(&Task::new("ship", "go"), TaskOptions::new().queue("orders")).await.unwrap();
    plain.enqueue(&Task::new("email", ""), TaskOptions::new()).await.unwrap();

    let served = std::iter::once("orders").chain(orders.shards().iter().map(QueueName::as_str));
    let server = ServerInfo {
        host: "a".into(),
        pid: 1,
        server_id: "id-a".into(),
        concurrency: 8,
        queues: served.map(|q| (q.to_owned(), 1)).collect::<BTreeMap<_, _>>(),
        strict_priority: false,
        status: ServerStatus::Active,
        started: UNIX_EPOCH + Duration::from_secs(1_795_000_000),
        active_workers: 1,
    };
    let now = SystemTime::now();
    let worker = WorkerInfo {
        host: "a".into(),
        pid: 1,
        server_id: "id-a".into(),
        task_id: "t1".into(),
        task_type: "ship".into(),
        task_payload: "{}".into(),
        queue: orders.shards()[0].to_string(),
        started: now,
        deadline: now + Duration::from_secs(1800),
    };
    broker.write_server_state(&server, &[worker], Duration::from_secs(10)).await.unwrap();
    orders.shards().to_vec()
}

async fn scrape(broker: impl Broker) -> Scrape {
    let served = Served::start(asynq_metrics::queue_exporter(Inspector::new(broker))).await;
    let body = served.get("/metrics").await.body;
    served.stop().await;
    parse(&body)
}

fn assert_one_logical_queue(s: &Scrape, shards: &[QueueName]) {
    assert_eq!(value(s, "asynq_sharded_queue_shards", &[("logical_queue", "orders")]), 2.0);
    let size = |queue: &str| value(s, "asynq_queue_size", &[("queue", queue), ("logical_queue", "orders")]);
    assert_eq!(size("orders"), 1.0, "the plain queue of the logical name counts its own tasks, not the sum");
    let over_shards: f64 = shards.iter().map(|shard| size(shard.as_str())).sum();
    assert_eq!(over_shards, 3.0);
    let summed: f64 = s
        .samples
        .iter()
        .filter(|x| x.metric == "asynq_queue_size" && x.labels.get("logical_queue") == Some("orders"))
        .map(|x| match x.value {
            prometheus_parse::Value::Gauge(v) => v,
            _ => panic!("asynq_queue_size is a gauge"),
        })
        .sum();
    assert_eq!(summed, 4.0, "sum by (logical_queue) gives the logical queue's size, each task once");
    let pending = value(
        s,
        "asynq_tasks_enqueued_total",
        &[("queue", shards[0].as_str()), ("logical_queue", "orders"), ("state", "pending")],
    );
    assert!(pending >= 1.0, "{pending}");
    let servers = |queue: &str| find(s, "asynq_queue_servers", &[("queue", queue), ("logical_queue", "orders")]);
    assert_eq!(servers(shards[1].as_str()), Some(1.0), "a shard served carries its logical queue");
    let running = [("queue", shards[0].as_str()), ("logical_queue", "orders"), ("task_type", "ship")];
    assert_eq!(find(s, "asynq_active_workers", &running), Some(1.0));
    // A queue of no sharded queue keeps Go's labels alone.
    assert_eq!(value(s, "asynq_queue_size", &[("queue", "default")]), 1.0);
    assert_eq!(value(s, "asynq_queue_servers", &[("queue", "default")]), 0.0);
}

#[tokio::test]
async fn on_the_memory_broker_a_sharded_queue_shows_as_one_by_its_logical_queue_label() {
    let broker = MemoryBroker::new();
    let shards = fill(&broker).await;
    assert_one_logical_queue(&scrape(broker).await, &shards);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_sharded_queue_shows_as_one_by_its_logical_queue_label() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(asynq_core::SystemClock)).await;
    let shards = fill(&broker).await;
    let s = scrape(broker).await;
    assert_one_logical_queue(&s, &shards);
    let without_shards = s.samples.iter().filter(|x| x.metric == "asynq_sharded_queue_shards").count();
    assert_eq!(without_shards, 1, "one series per declared sharded queue");
}
