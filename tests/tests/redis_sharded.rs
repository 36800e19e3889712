//! Sharded queues on one redis-server, as Redis counts the commands: a client, which places tasks
//! on shards by itself, reads the declarations once per refresh, whatever the number of enqueues,
//! so an enqueue to an ordinary queue costs no command of its own; and the shards it fills are
//! plain Go-layout queues. A reshard on Redis keeps the old generation in the record while a server
//! drains it, and the server drops it (record and queues) after the grace.

use asynq_client::{Client, Inspector, SHARD_REFRESH, Task, TaskOptions};
use asynq_core::broker::Capabilities;
use asynq_core::shard::DRAIN_GRACE;
use asynq_core::{Clock, QueueName, SimulatedClock};
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisServer, RespValue, redis_broker};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// A started server of `concurrency` serving the sharded queue `orders`, refreshing its queues
/// every 50 ms, and the recorder of its handler's runs.
fn serving_orders(broker: &Arc<RedisBroker>, clock: &Arc<dyn Clock>, concurrency: usize) -> (Server, Recorder) {
    let rec = Recorder::default();
    let config = Config::builder()
        .concurrency(concurrency)
        .sharded_queue("orders", 1)
        .queue_refresh_interval(Duration::from_millis(50))
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut server = Server::from_shared(broker.clone(), config).unwrap();
    server.start(rec.handler(clock.clone(), |_, _| async { Ok(()) })).unwrap();
    (server, rec)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declarations_are_read_once_per_refresh_not_per_enqueue() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let broker = Arc::new(redis_broker(&redis.url(), shared.clone()).await);
    let shards = broker.clone().as_sharded_queues().unwrap();
    let orders = shards.declare_sharded_queue(&QueueName::from_static("orders"), 4).await.unwrap();
    let client = Client::from_shared(broker.clone()).with_clock(shared);
    // Every command Redis runs goes to its slow log, which names the keys it read.
    for setting in [["slowlog-log-slower-than", "0"], ["slowlog-max-len", "100000"]] {
        redis.command(&["CONFIG", "SET", setting[0], setting[1]]).unwrap();
    }
    redis.command(&["SLOWLOG", "RESET"]).unwrap();
    let reads = || {
        let log = redis.command(&["SLOWLOG", "GET", "100000"]).unwrap();
        let entries = log.as_array().unwrap_or_default().to_vec();
        let args = |entry: &RespValue| -> Vec<String> {
            let args = entry.as_array().and_then(|fields| fields.get(3)).and_then(RespValue::as_array);
            args.unwrap_or_default().iter().filter_map(|a| a.as_str().map(str::to_owned)).collect()
        };
        entries.iter().filter(|entry| args(entry).iter().any(|a| a == "asynq:sharded_queues")).count()
    };
    let before = reads();

    for n in 0..200 {
        client.enqueue(&Task::new("t", format!("{n}")), TaskOptions::new().queue("plain")).await.unwrap();
        client.enqueue(&Task::new("t", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    assert_eq!(reads() - before, 1, "one read of the declarations for 400 enqueues");
    clock.advance(SHARD_REFRESH);
    client.enqueue(&Task::new("t", "late"), TaskOptions::new().queue("plain")).await.unwrap();
    assert_eq!(reads() - before, 2, "read again once they are a refresh old");

    // Each shard is an ordinary queue in Go's layout: a pending list Go's servers take from.
    for shard in orders.shards() {
        let length = redis.command(&["LLEN", &format!("asynq:{{{shard}}}:pending")]).unwrap();
        assert_eq!(length, RespValue::Integer(50), "{shard}");
    }
    assert_eq!(redis.command(&["LLEN", "asynq:{plain}:pending"]).unwrap(), RespValue::Integer(201));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reshard_drains_the_old_shards_and_the_server_drops_them_after_the_grace() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let broker = Arc::new(redis_broker(&redis.url(), shared.clone()).await);
    let shards = broker.clone().as_sharded_queues().unwrap();
    let first = shards.declare_sharded_queue(&QueueName::from_static("orders"), 3).await.unwrap();
    let client = Client::from_shared(broker.clone()).with_clock(shared.clone());
    let enqueue = |name: String| {
        let client = client.clone();
        async move { client.enqueue(&Task::new("t", name.clone()), TaskOptions::new().queue("orders").task_id(name)).await }
    };
    for n in 0..12 {
        enqueue(format!("before-{n}")).await.unwrap();
    }
    let inspector = Inspector::from_shared(broker.clone());
    let second = inspector.reshard_queue("orders", 5).await.unwrap();
    let record = || redis.command(&["HGET", "asynq:sharded_queues", "orders"]).unwrap();
    let expected = "2\norders~g2~0\norders~g2~1\norders~g2~2\norders~g2~3\norders~g2~4\n\n1 1800000000000\n\
                    orders~0\norders~1\norders~2";
    assert_eq!(record().as_str(), Some(expected));
    clock.advance(SHARD_REFRESH);
    for n in 0..10 {
        assert!(second.shards().contains(&enqueue(format!("after-{n}")).await.unwrap().queue));
    }
    let info = inspector.queue_info("orders").await.unwrap();
    assert_eq!((info.pending, info.draining_shards.as_slice()), (22, first.shards()), "both generations summed");
    let registered = || -> BTreeSet<String> {
        let members = redis.command(&["SMEMBERS", "asynq:queues"]).unwrap();
        members.as_array().unwrap_or_default().iter().filter_map(|m| m.as_str().map(str::to_owned)).collect()
    };
    assert_eq!(registered().len(), 8, "both generations are Go-visible queues: {:?}", registered());

    let (mut server, rec) = serving_orders(&broker, &shared, 4);
    let ran = async {
        while rec.len() < 22 || inspector.queue_info("orders").await.unwrap().size > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), ran).await.expect("every task runs within 10 s");
    // Some refreshes pass, but the grace has not: the old shards stay.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(record().as_str(), Some(expected));
    clock.advance(DRAIN_GRACE);
    // Dropped, with the 12 tasks the old generation processed kept in the record.
    let dropped = async {
        while record().as_str() != Some("2 12 0\norders~g2~0\norders~g2~1\norders~g2~2\norders~g2~3\norders~g2~4") {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), dropped).await.expect("the old generation is dropped");
    server.shutdown().await;
    assert_eq!(inspector.queue_info("orders").await.unwrap().processed_total, 22, "the old generation's kept");

    let queues = registered();
    assert_eq!(queues, second.shards().iter().map(|s| s.to_string()).collect::<BTreeSet<_>>());
    let mut ids: Vec<String> = rec.calls().into_iter().map(|c| c.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((rec.len(), ids.len()), (22, 22), "each task ran once");
}

/// A drop of a drained generation cut short (its server stopped once it had recorded the old
/// shards' totals in the record and removed one of them) is taken up again by the next drop,
/// which counts the removed shard by what was recorded, not by the shards it still finds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drop_cut_short_is_taken_up_again_with_the_totals_it_recorded() {
    use asynq_core::broker::Manage;
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let broker = Arc::new(redis_broker(&redis.url(), shared.clone()).await);
    let shards = broker.clone().as_sharded_queues().unwrap();
    let orders = QueueName::from_static("orders");
    shards.declare_sharded_queue(&orders, 2).await.unwrap();
    // What the first generation did, in Go's total counters.
    for (key, count) in [("{orders~0}:processed", "5"), ("{orders~1}:processed", "7"), ("{orders~1}:failed", "1")] {
        redis.command(&["SET", &format!("asynq:{key}"), count]).unwrap();
    }
    shards.reshard_queue(&orders, 3).await.unwrap();
    clock.advance(DRAIN_GRACE);

    // The drop cut short: the totals recorded on the draining generation's line, one shard gone.
    let record = || redis.command(&["HGET", "asynq:sharded_queues", "orders"]).unwrap().as_str().unwrap().to_owned();
    let (newest, draining) = record().split_once("\n\n").map(|(n, d)| (n.to_owned(), d.to_owned())).unwrap();
    let (head, old_shards) = draining.split_once('\n').unwrap();
    let cut_short = format!("{newest}\n\n{head} 12 1\n{old_shards}");
    redis.command(&["HSET", "asynq:sharded_queues", "orders", &cut_short]).unwrap();
    assert_eq!(
        shards.sharded_queue(&orders).await.unwrap().unwrap().draining().unwrap().totals().map(|t| t.processed),
        Some(12)
    );
    broker.delete_queue(&QueueName::from_static("orders~0"), false).await.unwrap();

    assert!(shards.drop_drained_shards(&orders).await.unwrap(), "the drop is taken up again");
    assert_eq!(record(), "2 12 1\norders~g2~0\norders~g2~1\norders~g2~2", "the totals recorded, not the 7 and 1 left");
    let info = Inspector::from_shared(broker.clone()).queue_info("orders").await.unwrap();
    assert_eq!((info.processed_total, info.failed_total), (12, 1));
}

/// A producer in another process, which registered a shard before its generation was dropped
/// and so does not register it again before it sends, places a task there late: the enqueue
/// registers the queue again (it found the list empty); the logical queue counts its task, not
/// the counters its name kept; a server serves the stray queue, runs the task and removes the
/// queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_placed_late_on_a_dropped_shard_runs_and_its_queue_goes() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let broker = Arc::new(redis_broker(&redis.url(), shared.clone()).await);
    let shards = broker.clone().as_sharded_queues().unwrap();
    let first = shards.declare_sharded_queue(&QueueName::from_static("orders"), 2).await.unwrap();
    let stray = first.shards()[1].to_string();
    let elsewhere = Client::from_shared(Arc::new(redis_broker(&redis.url(), shared.clone()).await));
    elsewhere.enqueue(&Task::new("t", "early"), TaskOptions::new().queue(&stray)).await.unwrap();
    Inspector::from_shared(broker.clone()).reshard_queue("orders", 3).await.unwrap();

    let (mut server, rec) = serving_orders(&broker, &shared, 2);
    let record = || redis.command(&["HGET", "asynq:sharded_queues", "orders"]).unwrap().as_str().map(str::to_owned);
    async fn until(what: &str, done: impl Fn() -> bool) {
        let wait = async {
            while !done() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait).await.unwrap_or_else(|_| panic!("{what} within 10 s"));
    }
    until("the early task runs", || rec.len() == 1).await;
    clock.advance(DRAIN_GRACE);
    let newest = "orders~g2~0\norders~g2~1\norders~g2~2";
    until("generation 1 is dropped", || record().as_deref() == Some(&format!("2 1 0\n{newest}"))).await;

    server.shutdown().await;

    elsewhere.enqueue(&Task::new("t", "late"), TaskOptions::new().queue(&stray)).await.unwrap();
    let registered = || -> BTreeSet<String> {
        let members = redis.command(&["SMEMBERS", "asynq:queues"]).unwrap();
        members.as_array().unwrap_or_default().iter().filter_map(|m| m.as_str().map(str::to_owned)).collect()
    };
    until("the producer registers the dropped shard again", || registered().contains(&stray)).await;
    let info = Inspector::from_shared(broker.clone()).queue_info("orders").await.unwrap();
    assert_eq!((info.pending, info.processed_total), (1, 1), "the stray's task counted, its old counters not");
    assert_eq!(info.draining_shards, [stray.as_str()]);

    let (mut server, rec) = serving_orders(&broker, &shared, 2);
    until("the late task runs", || rec.len() == 1).await;
    until("the stray's queue is removed", || !registered().contains(&stray)).await;
    server.shutdown().await;
    assert_eq!(registered(), newest.split('\n').map(str::to_owned).collect());
    assert_eq!(record().as_deref(), Some(format!("2 1 0\n{newest}").as_str()), "the declaration as it was");
    assert_eq!(rec.calls()[0].queue, stray);
    let info = Inspector::from_shared(broker.clone()).queue_info("orders").await.unwrap();
    assert_eq!((info.size, info.processed_total), (0, 1));
}
