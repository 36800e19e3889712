//! Values Redis would not take never reach it: a task over Redis's limit on one value (512 MiB)
//! is refused by the broker before it is sent, with a typed error, while a server sharing the
//! broker's connection goes on working; a batch of large tasks is split into calls that stay
//! far under Redis's limit on one command.

use asynq_client::{Client, Error, Task, TaskOptions};
use asynq_core::broker::Inspect;
use asynq_core::{Clock, QueueName, SystemClock};
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisServer, wait_for};
use std::sync::Arc;
use std::time::Duration;

const MIB: usize = 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_over_redis_value_limit_is_refused_and_the_shared_connection_keeps_working() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    // No limit of the client's: only the broker stands between the task and Redis.
    let client = Client::new(broker.clone()).with_max_payload(usize::MAX);
    let rec = Recorder::default();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let config = Config { concurrency: 4, task_check_interval: Duration::from_millis(20), ..Config::default() };
    let mut server = Server::new(broker.clone(), config).unwrap();
    server.start(rec.handler(clock, |_, _| async { Ok(()) })).unwrap();
    for i in 0..10 {
        client.enqueue(&Task::new("small", format!("{i}")), TaskOptions::new()).await.unwrap();
    }

    let huge = Task::new("huge", vec![0u8; 600 * MIB]);
    let refused = client.enqueue(&huge, TaskOptions::new()).await.unwrap_err();
    match &refused {
        Error::TooLarge { what: "task message", size, limit, .. } => {
            assert!(*size > 600 * MIB, "{refused}");
            assert_eq!(*limit, 512 * MIB);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(!refused.is_transient(), "retrying cannot help: {refused}");
    let batch = client.enqueue_batch(&[(huge, TaskOptions::new())]).await;
    assert!(matches!(batch[0], Err(Error::TooLarge { .. })), "{batch:?}");
    drop(batch);

    // The connection every role shares never saw it: the server runs the tasks enqueued before
    // and after, and the queue never held the huge one.
    for i in 10..20 {
        client.enqueue(&Task::new("small", format!("{i}")), TaskOptions::new()).await.unwrap();
    }
    wait_for("the 20 small tasks run", || async {
        broker.queue_info(&QueueName::from_static("default")).await.unwrap().processed_total == 20
    })
    .await;
    assert_eq!(rec.len(), 20);
    assert!(rec.calls().iter().all(|c| c.type_name == "small"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_large_tasks_is_split_and_every_task_stored() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    // 40 tasks of 3 MiB: 120 MiB in all, more than one call carries.
    let batch: Vec<_> = (0..40u8).map(|i| (Task::new("blob", vec![i; 3 * MIB]), TaskOptions::new())).collect();
    let results = client.enqueue_batch(&batch).await;
    assert!(results.iter().all(Result::is_ok), "{:?}", results.iter().find(|r| r.is_err()));
    assert_eq!(broker.queue_info(&QueueName::from_static("default")).await.unwrap().pending, 40);
    // Split by size, each call stays far under Redis's 1 GiB limit on one client's input.
    let count = redis.command_calls("evalsha");
    assert!(count >= 2, "one call would carry 120 MiB: {count} calls");
}
