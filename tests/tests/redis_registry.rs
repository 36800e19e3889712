//! A queue that holds tasks is registered (`asynq:queues`), so servers that find queues in the
//! registry, `queue ls` and the stats see it: a queue an operator removed while it was empty
//! comes back with a producer's next task, though that producer registered it before the
//! removal and caches the registration, as Go's client does.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::{Inspect, Manage};
use asynq_redis::RedisBroker;
use asynq_tests::RedisServer;
use std::time::Duration;

/// Whether the registry names `queue`, within `limit`.
async fn registered_within(operator: &RedisBroker, queue: &QueueName, limit: Duration) -> bool {
    let give_up = tokio::time::Instant::now() + limit;
    loop {
        if operator.queues().await.unwrap().contains(queue) {
            return true;
        }
        if tokio::time::Instant::now() >= give_up {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_removed_while_empty_comes_back_with_its_next_task() {
    let redis = RedisServer::start();
    let producer = Client::new(RedisBroker::connect(&redis.url()).await.unwrap());
    let operator = RedisBroker::connect(&redis.url()).await.unwrap();
    let queue = QueueName::from_static("tenant:reg");
    for placement in ["pending", "scheduled", "grouped"] {
        let options = match placement {
            "pending" => TaskOptions::new().queue(queue.as_str()),
            "scheduled" => TaskOptions::new().queue(queue.as_str()).process_in(Duration::from_secs(3600)),
            _ => TaskOptions::new().queue(queue.as_str()).group("g"),
        };
        let info = producer.enqueue(&Task::new("t", placement), options.clone()).await.unwrap();
        assert!(registered_within(&operator, &queue, Duration::from_secs(5)).await);
        // Emptied, then removed by another process.
        operator.delete_task(&queue, &asynq_core::TaskId::new(info.id).unwrap()).await.unwrap();
        operator.delete_queue(&queue, false).await.unwrap();
        assert!(!operator.queues().await.unwrap().contains(&queue), "{placement}: removed");

        producer.enqueue(&Task::new("t", format!("{placement} again")), options).await.unwrap();
        assert!(
            registered_within(&operator, &queue, Duration::from_secs(5)).await,
            "{placement}: the queue holds a task again but is not registered"
        );
        let info = operator.queue_info(&queue).await.unwrap();
        assert_eq!(info.pending + info.scheduled + info.aggregating, 1, "{placement}: {info:?}");
        operator.delete_queue(&queue, true).await.unwrap();
        // The forced removal took the task too: the next round starts from an empty queue.
    }
}
