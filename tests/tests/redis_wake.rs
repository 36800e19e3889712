//! Push wake-ups through a real redis-server: where an idle server's mark comes from. The
//! conformance suite checks that waits wake; this checks the marks that make them wake.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Dequeue;
use asynq_redis::RedisBroker;
use asynq_tests::{RedisServer, RespValue};
use std::time::Duration;

const MARK: &str = "asynq:{default}:idle_workers";

fn marked(redis: &RedisServer) -> bool {
    redis.command(&["EXISTS", MARK]).unwrap() == RespValue::Integer(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fetch_marks_the_queue_idle_once_this_broker_has_waited_on_it() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let queues = vec![QueueName::default()];
    let task = Task::new("t", "");
    let enqueue = || client.enqueue(&task, TaskOptions::new());

    // A broker that never waited on the queue leaves no mark when its fetch comes up short.
    enqueue().await.unwrap();
    assert_eq!(broker.dequeue(&queues, 5).await.unwrap().len(), 1);
    assert!(!marked(&redis));

    // Waiting marks the queue; the producer that wakes the wait clears the mark.
    let waiter = tokio::spawn({
        let (broker, queues) = (broker.clone(), queues.clone());
        async move { broker.wait_for_tasks(&queues).await }
    });
    for _ in 0..500 {
        if marked(&redis) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(marked(&redis), "the wait has marked the queue");
    enqueue().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("the enqueue woke the wait").unwrap();
    assert!(!marked(&redis));

    // Now the fetch that comes up short sets the mark itself, with its expiry.
    assert_eq!(broker.dequeue(&queues, 5).await.unwrap().len(), 1);
    assert!(marked(&redis), "a short fetch marks the queue");
    let RespValue::Integer(ttl) = redis.command(&["TTL", MARK]).unwrap() else { panic!("TTL answers an integer") };
    assert!(ttl > 0, "the mark expires: TTL {ttl}");

    // A fetch that gets all it asked for leaves none.
    redis.command(&["DEL", MARK]).unwrap();
    enqueue().await.unwrap();
    enqueue().await.unwrap();
    assert_eq!(broker.dequeue(&queues, 2).await.unwrap().len(), 2);
    assert!(!marked(&redis));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_enqueue_that_makes_the_queue_non_empty_clears_the_mark() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let task = Task::new("t", "");
    let enqueue = || client.enqueue(&task, TaskOptions::new());
    // The wake-ups published so far.
    let wake_ups = || redis.command_calls("publish");

    // A server found the queue empty and waits: the first task clears the mark and wakes it.
    redis.command(&["SET", MARK, "1"]).unwrap();
    enqueue().await.unwrap();
    assert!(!marked(&redis));
    assert_eq!(wake_ups(), 1);

    // No server waits on a queue with tasks pending: those that join them leave any mark alone.
    redis.command(&["SET", MARK, "1"]).unwrap();
    enqueue().await.unwrap();
    enqueue().await.unwrap();
    assert!(marked(&redis), "the backlog's enqueues left the mark");
    assert_eq!(wake_ups(), 1, "and published nothing");

    // Once the queue is drained, the next task wakes the waiting servers again.
    let queues = vec![QueueName::default()];
    assert_eq!(broker.dequeue(&queues, 10).await.unwrap().len(), 3);
    enqueue().await.unwrap();
    assert!(!marked(&redis));
    assert_eq!(wake_ups(), 2);
}
