//! Sharded queues on one redis-server, as Redis counts the commands: a client that places tasks
//! on shards reads the declarations once per refresh, whatever the number of enqueues, so an
//! enqueue to an ordinary queue costs no command of its own; and the shards it fills are plain
//! Go-layout queues.

use asynq_client::{Client, SHARD_REFRESH, Task, TaskOptions};
use asynq_core::broker::Capabilities;
use asynq_core::{Clock, QueueName, SimulatedClock};
use asynq_tests::{RedisServer, RespValue, redis_broker};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declarations_are_read_once_per_refresh_not_per_enqueue() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let broker = Arc::new(redis_broker(&redis.url(), shared.clone()).await);
    let shards = broker.clone().as_sharded_queues().unwrap();
    let orders = shards.declare_sharded_queue(&QueueName::from_static("orders"), 4).await.unwrap();
    let client = Client::from_shared(broker.clone()).with_clock(shared).with_sharded_queues(shards);
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
