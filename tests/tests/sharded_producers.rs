//! Tasks of a sharded queue go to its shards from every producer over a broker that keeps sharded
//! queues, with no call of the producer's own: a `Client::new` places them in turn or by key
//! (one over a broker that shows no capability, as Go's producers, sends them to the plain queue
//! of the logical name), and fails with the broker's error, writing nothing, when it cannot read
//! the declarations; a scheduler places each fire by its task ID (replicas send one fire to one
//! shard, where its ID conflicts), and a `FlowProducer::new` places one run's tasks on the shard
//! its workflow ID picks, a task with a given ID or shard key on the shard that picks, refuses a
//! blank shard key writing nothing, and releases a dependent on another shard when its parent
//! settles. On the memory broker in tokio's paused time, and on Redis.

use asynq_client::{Client, FlowProducer, Inspector, Task, TaskOptions};
use asynq_core::broker::{Capabilities, ShardedQueues};
use asynq_core::shard::ShardedQueue;
use asynq_core::workflow::Flow;
use asynq_core::{Error, QueueName};
use asynq_scheduler::{Scheduler, SchedulerConfig};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, PlainProducer, Recorder, RedisServer, redis_broker, secs, wait_for};
use std::collections::BTreeSet;
use std::sync::Arc;

fn shards_of<B: Capabilities + Clone>(broker: &B) -> Arc<dyn ShardedQueues> {
    Arc::new(broker.clone()).as_sharded_queues().unwrap()
}

async fn declare<B: Capabilities + Clone>(broker: &B) -> ShardedQueue {
    shards_of(broker).declare_sharded_queue(&QueueName::from_static("orders"), 4).await.unwrap()
}

/// The pending tasks of the queue named `queue` itself (0 for a queue never made).
async fn own_pending(inspector: &Inspector, queue: &str) -> usize {
    match inspector.own_queue_info(queue).await {
        Ok(info) => info.pending,
        Err(Error::QueueNotFound { .. }) => 0,
        Err(e) => panic!("{e}"),
    }
}

/// Enqueues 8 tasks to `orders` through `client` with no key and 3 with one, checking that they
/// went to its shards in turn and to the key's shard; and that none went to its plain queue.
async fn places_in_turn_and_by_key(client: &Client, orders: &ShardedQueue, inspector: &Inspector) {
    for n in 0..8 {
        let info =
            client.enqueue(&Task::new("t", format!("rr {n}")), TaskOptions::new().queue("orders")).await.unwrap();
        assert_eq!(info.queue, orders.shards()[n % 4], "in turn");
    }
    for n in 0..3 {
        let keyed = TaskOptions::new().queue("orders").shard_key("customer-7");
        let info = client.enqueue(&Task::new("t", format!("key {n}")), keyed).await.unwrap();
        assert_eq!(&info.queue, orders.shard_for_key(b"customer-7"), "by key");
    }
    assert_eq!(inspector.queue_info("orders").await.unwrap().pending, 11);
    assert_eq!(own_pending(inspector, "orders").await, 0, "nothing in the plain queue of the logical name");
}

#[tokio::test(start_paused = true)]
async fn a_plain_client_places_on_the_shards_of_a_queue_declared_after_it_was_made() {
    let h = Harness::new();
    let orders = declare(&h.broker).await;
    let inspector = Inspector::new(h.broker.clone());
    // The harness's client, `Client::new(broker)`, was made before the declaration.
    places_in_turn_and_by_key(&h.client, &orders, &inspector).await;

    let go = Client::new(PlainProducer(h.broker.clone())).with_clock(h.clock.clone());
    let info = go.enqueue(&Task::new("t", "go"), TaskOptions::new().queue("orders")).await.unwrap();
    assert_eq!(info.queue, "orders", "a broker that shows no capability: the queue named");
    assert_eq!(own_pending(&inspector, "orders").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_producers_place_on_the_shards_and_fail_writing_nothing_while_redis_is_down() {
    let mut redis = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let clock: Arc<dyn asynq_core::Clock> = Arc::new(asynq_core::SystemClock);
    let broker = redis_broker(&redis.url(), clock).await;
    let orders = declare(&broker).await;
    let inspector = Inspector::new(broker.clone());
    places_in_turn_and_by_key(&Client::new(broker.clone()), &orders, &inspector).await;
    let step = |name: &str| Flow::task(Task::new("step", name.to_owned()), TaskOptions::new().queue("orders"));
    let stored = FlowProducer::new(broker.clone()).enqueue(&Flow::chain([step("a"), step("b")])).await.unwrap();
    let run_shard = orders.shard_for_key(stored.id.as_str().as_bytes());
    assert!(stored.tasks.iter().all(|task| &task.queue == run_shard), "{stored:?}");

    // A new client reads the declarations at its first enqueue: with Redis down that read fails,
    // and so does the enqueue, which sends nothing (no task goes to the plain queue later).
    let (client, producer) = (Client::new(broker.clone()), FlowProducer::new(broker.clone()));
    let before = inspector.queue_info("orders").await.unwrap().size;
    redis.kill();
    let refused = client.enqueue(&Task::new("t", "down"), TaskOptions::new().queue("orders")).await;
    assert!(matches!(refused, Err(Error::Broker(_))), "{refused:?}");
    let refused = producer.enqueue(&step("down")).await;
    assert!(matches!(refused, Err(Error::Broker(_))), "{refused:?}");
    redis.restart();
    wait_for("the client to reach Redis again", || {
        let client = client.clone();
        async move { client.enqueue(&Task::new("t", "up"), TaskOptions::new().queue("orders")).await.is_ok() }
    })
    .await;
    let after = inspector.queue_info("orders").await.unwrap().size;
    assert_eq!(after, before + 1, "the refused enqueues wrote nothing");
    assert_eq!(own_pending(&inspector, "orders").await, 0, "nothing in the plain queue of the logical name");
}

#[tokio::test(start_paused = true)]
async fn a_scheduler_places_each_fire_on_one_shard_across_replicas() {
    let h = Harness::new();
    let orders = declare(&h.broker).await;
    let config = || SchedulerConfig { clock: h.clock.clone(), ..SchedulerConfig::default() };
    let mut replicas =
        [Scheduler::new(h.broker.clone(), config()).unwrap(), Scheduler::new(h.broker.clone(), config()).unwrap()];
    for s in &mut replicas {
        s.register("@every 1s", Task::new("tick", ""), TaskOptions::new().queue("orders")).unwrap();
        s.start().unwrap();
    }
    tokio::time::sleep(secs(20) + secs(1) / 2).await;
    for s in &mut replicas {
        s.shutdown().await;
    }
    let inspector = Inspector::new(h.broker.clone());
    assert_eq!(own_pending(&inspector, "orders").await, 0, "no fire went to the plain queue of the logical name");
    let mut used = BTreeSet::new();
    let mut total = 0;
    for shard in orders.shards() {
        let pending = own_pending(&inspector, shard.as_str()).await;
        total += pending;
        if pending > 0 {
            used.insert(shard.clone());
        }
    }
    assert_eq!(total, 20, "each of the 20 fires once, though two replicas fired each");
    assert!(used.len() > 1, "the fires spread over the shards: {used:?}");
}

#[tokio::test(start_paused = true)]
async fn a_flow_producer_places_a_run_on_one_shard_and_a_given_id_or_shard_key_by_itself() {
    let h = Harness::new();
    let orders = declare(&h.broker).await;
    let producer = FlowProducer::new(h.broker.clone()).with_clock(h.clock.clone());
    let step = |name: &str| Flow::task(Task::new("step", name.to_owned()), TaskOptions::new().queue("orders"));
    let fixed = Flow::task(Task::new("step", "fixed"), TaskOptions::new().queue("orders").task_id("fixed-id"));
    let keyed = Flow::task(Task::new("step", "keyed"), TaskOptions::new().queue("orders").shard_key("customer-7"));
    let other = Flow::task(Task::new("step", "other"), TaskOptions::new().queue("plain"));
    let flow = Flow::chain([step("a"), step("b"), step("c"), fixed, keyed, other]);
    let stored = producer.enqueue(&flow).await.unwrap();

    let run_shard = orders.shard_for_key(stored.id.as_str().as_bytes()).as_str();
    let queues: Vec<&str> = stored.tasks.iter().map(|task| task.queue.as_str()).collect();
    let fixed_shard = orders.shard_for_key(b"fixed-id").as_str();
    let keyed_shard = orders.shard_for_key(b"customer-7").as_str();
    assert_eq!(queues, [run_shard, run_shard, run_shard, fixed_shard, keyed_shard, "plain"]);
    let blank = Flow::task(Task::new("step", "blank"), TaskOptions::new().queue("orders").shard_key(" "));
    let refused = producer.enqueue(&step("z").then(blank)).await;
    assert!(matches!(refused, Err(Error::InvalidArgument { field: "shard key", .. })), "{refused:?}");
    let mut spread = BTreeSet::new();
    for _ in 0..12 {
        let stored = producer.enqueue(&Flow::chain([step("x"), step("y")])).await.unwrap();
        assert_eq!(stored.tasks[0].queue, stored.tasks[1].queue, "one run's tasks share a shard");
        spread.insert(stored.tasks[0].queue.clone());
    }
    assert!(spread.len() > 1, "runs spread over the shards: {spread:?}");
    assert!(spread.iter().all(|queue| orders.has_shard(queue.as_str())));

    // The chain runs in order, its fixed-ID task released across shards.
    let rec = Recorder::default();
    let config = Config::builder()
        .concurrency(4)
        .sharded_queue("orders", 1)
        .queue("plain", 1)
        .clock(h.clock.clone())
        .build()
        .unwrap();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(30), "every task ran", || async { rec.len() == 6 + 24 }).await;
    server.shutdown().await;
    let first_run: Vec<String> = rec
        .calls()
        .iter()
        .filter(|call| stored.tasks.iter().any(|task| task.id.as_str() == call.id))
        .map(|call| call.queue.clone())
        .collect();
    assert_eq!(first_run, queues, "the chain ran in order, across shards");
    let pending = Inspector::new(h.broker.clone()).queue_info("orders").await.unwrap().size;
    assert_eq!(pending, 0, "the refused workflow wrote nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_workflow_placed_on_shards_runs_in_order_across_them() {
    let redis = RedisServer::start();
    let clock: Arc<dyn asynq_core::Clock> = Arc::new(asynq_core::SystemClock);
    let broker = redis_broker(&redis.url(), clock.clone()).await;
    let orders = declare(&broker).await;
    let producer = FlowProducer::new(broker.clone());
    let step = |name: &str, id: &str| {
        Flow::task(Task::new("step", name.to_owned()), TaskOptions::new().queue("orders").task_id(id))
    };
    let plain = |name: &str| Flow::task(Task::new("step", name.to_owned()), TaskOptions::new().queue("orders"));
    // Two given IDs on two shards, around tasks of the run's shard.
    let (first, second) = (
        "id-0",
        (1..100)
            .map(|n| format!("id-{n}"))
            .find(|id| orders.shard_for_key(id.as_bytes()) != orders.shard_for_key(b"id-0"))
            .unwrap(),
    );
    let flow = Flow::chain([step("first", first), plain("middle"), step("second", &second), plain("last")]);
    let stored = producer.enqueue(&flow).await.unwrap();
    assert_ne!(stored.tasks[0].queue, stored.tasks[2].queue, "the chain spans shards");
    assert!(stored.tasks.iter().all(|task| orders.has_shard(task.queue.as_str())));

    let rec = Recorder::default();
    let config = Config {
        task_check_interval: std::time::Duration::from_millis(20),
        ..Config::builder().concurrency(2).sharded_queue("orders", 1).build().unwrap()
    };
    let mut server = Server::new(broker.clone(), config).unwrap();
    server.start(rec.handler(clock.clone(), |_, _| async { Ok(()) })).unwrap();
    wait_for("the chain ran", || {
        let done = rec.len() >= 4;
        async move { done }
    })
    .await;
    server.shutdown().await;
    let ran: Vec<String> = rec.calls().iter().map(|call| call.queue.clone()).collect();
    let placed: Vec<String> = stored.tasks.iter().map(|task| task.queue.to_string()).collect();
    assert_eq!(ran, placed, "the chain ran in order, each task on its shard");
}
