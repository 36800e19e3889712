//! Two of our servers with different concurrency (so different dequeue batch sizes) share one
//! Redis queue: every task runs exactly once, none is lost.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::broker::Inspect;
use asynq_core::{Clock, QueueName, SystemClock};
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisServer};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const TASKS: usize = 3_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_with_different_batch_sizes_run_every_task_once() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let batch: Vec<_> = (0..TASKS).map(|i| (Task::new("job", i.to_string()), TaskOptions::new())).collect();
    for chunk in batch.chunks(500) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    let mut servers = Vec::new();
    for concurrency in [3, 50] {
        // Each server has its own connection, as separate processes would.
        let own = RedisBroker::connect(&redis.url()).await.unwrap();
        let config = Config { concurrency, task_check_interval: Duration::from_millis(20), ..Config::default() };
        let mut server = Server::new(own, config).unwrap();
        server.start(rec.handler(clock.clone(), |_, _| async { Ok(()) })).unwrap();
        servers.push(server);
    }
    for _ in 0..1_000 {
        if broker.queue_info(&QueueName::from_static("default")).await.unwrap().processed_total as usize >= TASKS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for server in &mut servers {
        server.shutdown().await;
    }

    let mut runs = BTreeMap::<String, usize>::new();
    for call in rec.calls() {
        *runs.entry(call.id).or_default() += 1;
    }
    assert_eq!(runs.len(), TASKS, "every task ran");
    assert!(runs.values().all(|&n| n == 1), "no task ran twice");
    let info = broker.queue_info(&QueueName::from_static("default")).await.unwrap();
    assert_eq!((info.size, info.processed_total, info.failed_total), (0, TASKS as u64, 0));
}
