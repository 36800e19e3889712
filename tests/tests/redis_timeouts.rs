//! A Redis that stops answering: calls fail after the response timeout with a transient error
//! that says the command may have run, and work goes on once Redis answers again.

use asynq_client::{Client, Error, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_redis::{RedisBroker, RedisConfig, RedisTarget};
use asynq_tests::RedisServer;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_redis_does_not_answer_fails_after_the_response_timeout_saying_it_may_have_run() {
    let redis = RedisServer::start();
    let target = RedisTarget::from_url(&redis.url()).unwrap();
    let broker = RedisBroker::connect_with(RedisConfig {
        response_timeout: Duration::from_millis(300),
        ..RedisConfig::new(target)
    })
    .await
    .unwrap();
    let client = Client::new(broker);
    client.enqueue(&Task::new("before", ""), TaskOptions::new()).await.unwrap();

    // Writes wait while Redis is paused; the client gives up after its response timeout.
    assert!(redis.command(&["CLIENT", "PAUSE", "5000", "WRITE"]).unwrap().is_ok());
    let started = Instant::now();
    let result = client.enqueue(&Task::new("paused", ""), TaskOptions::new().task_id("paused")).await;
    let waited = started.elapsed();
    let Err(Error::Broker(error)) = result else { panic!("expected a broker error, got {result:?}") };
    assert!(error.is_transient(), "{error:?}");
    assert_eq!(error.kind(), asynq_core::FailureKind::OutcomeUnknown);
    let text = error.to_string();
    assert!(text.contains("response timeout") && text.contains("the command may have run"), "{text}");
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(4), "{waited:?}");

    assert!(redis.command(&["CLIENT", "UNPAUSE"]).unwrap().is_ok());
    // The first attempt did reach Redis and ran once the pause ended: retrying with the same
    // task ID is safe, and reports the conflict instead of enqueueing a copy.
    let retried = client.enqueue(&Task::new("paused", ""), TaskOptions::new().task_id("paused")).await;
    assert!(matches!(retried, Err(Error::TaskIdConflict { .. })), "{retried:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_dropped_with_a_call_in_flight_says_the_call_may_have_run() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    client.enqueue(&Task::new("before", ""), TaskOptions::new()).await.unwrap();

    // The enqueue is sent and waits behind the pause; then its connection is killed.
    assert!(redis.command(&["CLIENT", "PAUSE", "10000", "WRITE"]).unwrap().is_ok());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.enqueue(&Task::new("in-flight", ""), TaskOptions::new().task_id("in-flight")).await }
    });
    asynq_tests::wait_for("the enqueue to wait behind the pause", || async {
        let clients = redis.command(&["CLIENT", "LIST"]).unwrap();
        clients.as_str().is_some_and(|list| list.contains("cmd=evalsha"))
    })
    .await;
    assert!(redis.command(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]).unwrap().as_int().unwrap() >= 1);
    let result = call.await.unwrap();
    assert!(redis.command(&["CLIENT", "UNPAUSE"]).unwrap().is_ok());

    let Err(error) = result else { panic!("expected the dropped call to fail, got {result:?}") };
    assert_eq!(error.kind(), asynq_core::FailureKind::OutcomeUnknown, "{error:?}");
    assert!(error.to_string().contains("the command may have run"), "{error}");
    // The documented way to retry: the same task ID, which either stores the task or reports
    // that the first attempt did.
    match client.enqueue(&Task::new("in-flight", ""), TaskOptions::new().task_id("in-flight")).await {
        Ok(_) | Err(Error::TaskIdConflict { .. }) => {}
        other => panic!("the retry should store the task or report it stored, got {other:?}"),
    }
    assert_eq!(
        asynq_core::broker::Inspect::queue_info(&broker, &QueueName::from_static("default")).await.unwrap().pending,
        2
    );
}
