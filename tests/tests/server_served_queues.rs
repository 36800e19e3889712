//! A server's heartbeat lists the queues it serves now, as the Inspector reads it back: a sharded
//! queue's shards (and its plain queue), the queues its patterns matched, each with the weight it
//! is drawn with; a declaration made while it runs shows on a later beat. On the memory broker with
//! tokio's paused time, and on a redis-server.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::broker::{Capabilities, Enqueue, OperatorBroker, WorkerBroker};
use asynq_core::{Clock, QueueName};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Recorder, RedisServer, redis_broker, secs};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The queues the one live server lists, once it lists `want`; panics after `limit` of tokio time.
async fn wait_for_listed(inspector: &Inspector, want: &BTreeMap<String, u32>, limit: Duration) {
    let give_up = tokio::time::Instant::now() + limit;
    loop {
        let servers = inspector.servers().await.unwrap();
        let listed = servers.first().map(|s| s.server.queues.clone()).unwrap_or_default();
        if &listed == want {
            assert_eq!(servers.len(), 1, "one server");
            return;
        }
        assert!(tokio::time::Instant::now() < give_up, "the server lists {listed:?}, not {want:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn listed(entries: &[(&str, u32)]) -> BTreeMap<String, u32> {
    entries.iter().map(|(q, p)| ((*q).to_owned(), *p)).collect()
}

fn config(clock: Arc<dyn Clock>) -> Config {
    Config {
        heartbeat_interval: Duration::from_millis(200),
        ..Config::builder()
            .concurrency(1)
            .queue("plain", 1)
            .queue_pattern("tenant:*", 1)
            .sharded_queue("orders", 1)
            .queue_refresh_interval(Duration::from_millis(100))
            .clock(clock)
            .build()
            .unwrap()
    }
}

/// Runs the scenario on `broker`: patterns and an undeclared sharded queue, then a tenant queue
/// and a declaration of 2 shards appear while the server runs.
async fn served_queues_are_listed<B>(broker: B, clock: Arc<dyn Clock>)
where
    B: WorkerBroker + OperatorBroker + Enqueue + Capabilities + Clone,
{
    let inspector = Inspector::new(broker.clone());
    let mut server = Server::new(broker.clone(), config(clock.clone())).unwrap();
    let rec = Recorder::default();
    server.start(rec.handler(clock.clone(), |_, _| async { Ok(()) })).unwrap();
    // Nothing matches the pattern yet, and the sharded queue is served as its plain queue.
    wait_for_listed(&inspector, &listed(&[("plain", 1), ("orders", 1)]), secs(5)).await;

    let client = Client::new(broker.clone()).with_clock(clock.clone());
    client.enqueue(&Task::new("job", "t"), TaskOptions::new().queue("tenant:a")).await.unwrap();
    let shards = Arc::new(broker).as_sharded_queues().unwrap();
    shards.declare_sharded_queue(&QueueName::from_static("orders"), 2).await.unwrap();
    // The logical queue's priority split in 3 parts (its plain queue and 2 shards), the others
    // scaled by 3 to match.
    let want = listed(&[("plain", 3), ("tenant:a", 3), ("orders", 1), ("orders~0", 1), ("orders~1", 1)]);
    wait_for_listed(&inspector, &want, secs(5)).await;
    server.shutdown().await;
    assert!(inspector.servers().await.unwrap().is_empty(), "the record is gone after shutdown");
}

#[tokio::test(start_paused = true)]
async fn the_memory_heartbeat_lists_the_queues_served_now() {
    let h = Harness::new();
    served_queues_are_listed(h.broker.clone(), h.clock.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_heartbeat_lists_the_queues_served_now() {
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(asynq_core::SystemClock);
    let broker = redis_broker(&redis.url(), clock.clone()).await;
    served_queues_are_listed(broker, clock).await;
}

/// A server whose beats are an hour apart lists the shards its first queue refresh found at
/// once: the record is written again when the served set changes, not at the next beat.
#[tokio::test(start_paused = true)]
async fn a_change_of_the_served_queues_is_listed_before_the_next_beat() {
    let h = Harness::new();
    let shards = Arc::new(h.broker.clone()).as_sharded_queues().unwrap();
    shards.declare_sharded_queue(&QueueName::from_static("orders"), 2).await.unwrap();
    let config = Config { heartbeat_interval: Duration::from_secs(3600), ..config(h.clock.clone()) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let rec = Recorder::default();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    let inspector = Inspector::new(h.broker.clone());
    let want = listed(&[("plain", 3), ("orders", 1), ("orders~0", 1), ("orders~1", 1)]);
    wait_for_listed(&inspector, &want, secs(1)).await;
    server.shutdown().await;
}
