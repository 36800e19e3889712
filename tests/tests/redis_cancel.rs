//! Cancelling a running task through a real redis-server: a request on `asynq:cancel` (what Go's
//! `Inspector.CancelProcessing` publishes) reaches our server's running task, the server
//! subscribes again after Redis restarts, and a request of ours made before the server listened
//! is kept in `asynq:cancel_requests` and honoured.

use asynq_client::{Client, Task, TaskOptions, TaskState, Tracker};
use asynq_core::broker::Inspect;
use asynq_core::{Clock, QueueName, SystemClock, TaskId};
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server, TaskContext};
use asynq_tests::{Recorder, RedisServer, RespValue, wait_for};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How many connections listen on `asynq:cancel`.
fn cancel_subscribers(redis: &RedisServer) -> i64 {
    match redis.command(&["PUBSUB", "NUMSUB", "asynq:cancel"]) {
        Ok(RespValue::Array(reply)) if reply.len() == 2 => match reply[1] {
            RespValue::Integer(n) => n,
            _ => panic!("PUBSUB NUMSUB replied {reply:?}"),
        },
        other => panic!("PUBSUB NUMSUB replied {other:?}"),
    }
}

/// A server over `broker` whose handler works for a minute and notes, in `cancelled`, when its
/// context is cancelled.
fn start(broker: &RedisBroker, cancelled: &Arc<AtomicBool>) -> (Server, Recorder) {
    let config = Config { concurrency: 2, task_check_interval: Duration::from_millis(20), ..Config::default() };
    let mut server = Server::new(broker.clone(), config).unwrap();
    let rec = Recorder::default();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let cancelled = cancelled.clone();
    server
        .start(rec.handler(clock, move |ctx: TaskContext, _| {
            let cancelled = cancelled.clone();
            let watched = ctx.clone();
            tokio::spawn(async move {
                watched.cancelled().await;
                cancelled.store(true, Ordering::SeqCst);
            });
            async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(())
            }
        }))
        .unwrap();
    (server, rec)
}

/// Enqueues a task and waits until the server runs it; returns its ID.
async fn run_one(client: &Client, rec: &Recorder) -> String {
    let info = client.enqueue(&Task::new("long", ""), TaskOptions::new()).await.unwrap();
    wait_for("the task runs", || async { rec.len() == 1 }).await;
    info.id.into_string()
}

/// Waits until task `id` is back in retry, and checks it was cancelled.
async fn assert_cancelled_to_retry(broker: &RedisBroker, cancelled: &AtomicBool, id: &str) {
    wait_for("the cancelled task goes to retry", || async {
        broker.task_info(&QueueName::from_static("default"), &TaskId::new(id).unwrap()).await.unwrap().state
            == TaskState::Retry
    })
    .await;
    let retry = broker.task_info(&QueueName::from_static("default"), &TaskId::new(id).unwrap()).await.unwrap();
    assert_eq!((retry.retried, retry.last_error.as_deref()), (1, Some("context canceled")));
    assert!(cancelled.load(Ordering::SeqCst), "the handler's context was cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_on_asynq_cancel_reaches_the_running_task() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let (mut server, rec) = start(&broker, &cancelled);
    let id = run_one(&Client::new(broker.clone()), &rec).await;
    wait_for("the server subscribes", || async { cancel_subscribers(&redis) == 1 }).await;

    // What Go's inspector sends.
    assert_eq!(redis.command(&["PUBLISH", "asynq:cancel", &id]).unwrap(), RespValue::Integer(1));
    assert_cancelled_to_retry(&broker, &cancelled, &id).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_subscribes_again_after_redis_restarts() {
    let mut redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let (mut server, rec) = start(&broker, &cancelled);
    wait_for("the server subscribes", || async { cancel_subscribers(&redis) == 1 }).await;

    redis.restart();
    wait_for("the server subscribes again", || async { cancel_subscribers(&redis) == 1 }).await;
    let id = run_one(&Client::new(broker.clone()), &rec).await;
    Tracker::new(broker.clone()).cancel(&id).await.unwrap();
    assert_cancelled_to_retry(&broker, &cancelled, &id).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_made_before_the_server_subscribed_is_honoured() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let info = client.enqueue(&Task::new("long", ""), TaskOptions::new()).await.unwrap();
    // Nobody listens: Go's PUBLISH alone would be dropped.
    assert_eq!(cancel_subscribers(&redis), 0);
    Tracker::new(broker.clone()).cancel(&info.id).await.unwrap();
    assert_eq!(redis.command(&["ZCARD", "asynq:cancel_requests"]).unwrap(), RespValue::Integer(1));

    let cancelled = Arc::new(AtomicBool::new(false));
    let (mut server, _rec) = start(&broker, &cancelled);
    assert_cancelled_to_retry(&broker, &cancelled, &info.id).await;
    wait_for("the request is settled", || async {
        redis.command(&["ZCARD", "asynq:cancel_requests"]).unwrap() == RespValue::Integer(0)
    })
    .await;
    server.shutdown().await;
}

/// What a Go server sees of our request: the same `PUBLISH asynq:cancel <id>` as Go's inspector
/// sends, heard by a plain subscriber.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_server_hears_our_request_on_asynq_cancel() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let mut go_server = redis.connect().unwrap();
    go_server.set_timeout(Duration::from_secs(5)).unwrap();
    let subscribed = go_server.command(&["SUBSCRIBE", "asynq:cancel"]).unwrap();
    assert_eq!(subscribed.as_array().map(<[RespValue]>::len), Some(3), "{subscribed:?}");
    Tracker::new(broker.clone()).cancel("some-task").await.unwrap();
    let message = go_server.read_reply().unwrap();
    let parts: Vec<&str> = message.as_array().unwrap().iter().filter_map(RespValue::as_str).collect();
    assert_eq!(parts, ["message", "asynq:cancel", "some-task"]);
}
