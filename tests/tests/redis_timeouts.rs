//! A Redis that stops answering: calls fail after the response timeout with a transient error
//! that says the command may still have run, and work goes on once Redis answers again.

use asynq_client::{Client, Error, Task, TaskOptions};
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
    let text = error.to_string();
    assert!(text.contains("response timeout") && text.contains("may still have run"), "{text}");
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(4), "{waited:?}");

    assert!(redis.command(&["CLIENT", "UNPAUSE"]).unwrap().is_ok());
    // The first attempt did reach Redis and ran once the pause ended: retrying with the same
    // task ID is safe, and reports the conflict instead of enqueueing a copy.
    let retried = client.enqueue(&Task::new("paused", ""), TaskOptions::new().task_id("paused")).await;
    assert!(matches!(retried, Err(Error::TaskIdConflict { .. })), "{retried:?}");
}
