//! Quieting and stopping a server from an operator's tool, on the memory broker (tokio's paused
//! time) and on a real redis-server: the request is kept for the server's ID, its heartbeat reads
//! it, a quieted server finishes the task it runs and takes no new one (reporting `stopped`, as a
//! Go server stopped by SIGTSTP does), and a stop request shuts the server down gracefully,
//! ending `Server::run`.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{Broker, Clock, Error, ServerStatus, SystemClock};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Recorder, RedisServer, redis_broker, wait_for};
use std::sync::Arc;
use std::time::Duration;

/// A server over `broker` serving `default`, beating every 100 ms so that requests are read
/// soon, whose handler works for `work` on each task.
fn server(
    broker: Arc<dyn Broker>,
    clock: Arc<dyn Clock>,
    rec: &Recorder,
    work: Duration,
) -> (Server, impl asynq_server::Handler) {
    let config = Config {
        concurrency: 2,
        queues: [("default".to_owned(), 1)].into(),
        heartbeat_interval: Duration::from_millis(100),
        task_check_interval: Duration::from_millis(20),
        clock: clock.clone(),
        ..Config::default()
    };
    let server = Server::from_shared(broker, config).unwrap();
    let handler = rec.handler(clock, move |_ctx, _task| async move {
        tokio::time::sleep(work).await;
        Ok(())
    });
    (server, handler)
}

/// The status the server `id` reports in its heartbeat record.
async fn reported_status(inspector: &Inspector, id: &str) -> Option<ServerStatus> {
    let servers = inspector.servers().await.unwrap();
    servers.into_iter().find(|r| r.server.server_id == id).map(|r| r.server.status)
}

/// A quieted server finishes the task it runs, takes none of those enqueued after the quiet,
/// and reports itself `stopped`; its `Server::run` goes on.
async fn quieted_server_finishes_and_takes_nothing_new(broker: Arc<dyn Broker>, clock: Arc<dyn Clock>) {
    let (client, inspector) = (Client::from_shared(broker.clone()), Inspector::from_shared(broker.clone()));
    let rec = Recorder::default();
    let (server, handler) = server(broker.clone(), clock, &rec, Duration::from_secs(1));
    let id = server.id().to_owned();
    let run = tokio::spawn(server.run(handler));
    let first = client.enqueue(&Task::new("work", "first"), TaskOptions::new()).await.unwrap();
    wait_for("the first task runs", || async { rec.len() == 1 }).await;
    wait_for("the server reports itself active", || async {
        reported_status(&inspector, &id).await == Some(ServerStatus::Active)
    })
    .await;

    inspector.quiet_server(&id).await.unwrap();
    wait_for("the server reports itself stopped", || async {
        reported_status(&inspector, &id).await == Some(ServerStatus::Stopped)
    })
    .await;
    let later = client.enqueue(&Task::new("work", "later"), TaskOptions::new()).await.unwrap();
    wait_for("the running task finishes", || async {
        inspector.queue_info("default").await.unwrap().processed_total == 1
    })
    .await;
    // A fetching server would take it at once: it has had a free slot all along.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(rec.calls().iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [first.id.as_str()]);
    let queue = inspector.queue_info("default").await.unwrap();
    assert_eq!((queue.pending, queue.active), (1, 0), "the later task waits");
    assert_eq!(inspector.task_info("default", &later.id).await.unwrap().state, asynq_core::TaskState::Pending);
    assert!(!run.is_finished(), "a quiet server keeps running");
    assert_eq!(reported_status(&inspector, &id).await, Some(ServerStatus::Stopped));

    // A stop after the quiet ends it.
    inspector.stop_server(&id).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), run).await.expect("run ends").unwrap().unwrap();
    assert_eq!(reported_status(&inspector, &id).await, None, "its record is gone");
}

/// A stop request ends `Server::run` gracefully: the running task finishes first, the server's
/// record goes, and nothing is lost.
async fn stop_request_ends_run(broker: Arc<dyn Broker>, clock: Arc<dyn Clock>) {
    let (client, inspector) = (Client::from_shared(broker.clone()), Inspector::from_shared(broker.clone()));
    let rec = Recorder::default();
    let (server, handler) = server(broker.clone(), clock, &rec, Duration::from_secs(1));
    let id = server.id().to_owned();
    let run = tokio::spawn(server.run(handler));
    client.enqueue(&Task::new("work", "running"), TaskOptions::new()).await.unwrap();
    wait_for("the task runs", || async { rec.len() == 1 }).await;
    wait_for("the server is listed", || async { reported_status(&inspector, &id).await.is_some() }).await;

    inspector.stop_server(&id).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), run).await.expect("run ends").unwrap().unwrap();
    let queue = inspector.queue_info("default").await.unwrap();
    assert_eq!((queue.processed_total, queue.pending, queue.active), (1, 0, 0), "the running task finished");
    assert_eq!(reported_status(&inspector, &id).await, None, "the server's record is gone");
    // The server is gone: a request for it now is refused, and writes nothing.
    match inspector.stop_server(&id).await {
        Err(Error::ServerNotFound { id: named }) => assert_eq!(named, id),
        other => panic!("expected ServerNotFound, got {other:?}"),
    }
}

/// A server started with `start` hears a stop request through `Server::stop_requested`, and is
/// quieted meanwhile.
async fn stop_requested_resolves_for_a_started_server(broker: Arc<dyn Broker>, clock: Arc<dyn Clock>) {
    let inspector = Inspector::from_shared(broker.clone());
    let rec = Recorder::default();
    let (mut server, handler) = server(broker.clone(), clock, &rec, Duration::from_secs(1));
    let stop_requested = server.stop_requested();
    server.start(handler).unwrap();
    let id = server.id().to_owned();
    wait_for("the server is listed", || async { reported_status(&inspector, &id).await.is_some() }).await;
    inspector.stop_server(&id).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), stop_requested).await.expect("the request is heard");
    assert_eq!(server.status(), ServerStatus::Stopped, "quieted until shut down");
    server.shutdown().await;
    assert_eq!(server.status(), ServerStatus::Closed);
}

fn memory() -> (Arc<dyn Broker>, Arc<dyn Clock>) {
    let h = Harness::new();
    (Arc::new(h.broker), h.clock)
}

async fn redis(redis: &RedisServer) -> (Arc<dyn Broker>, Arc<dyn Clock>) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    (Arc::new(redis_broker(&redis.url(), clock.clone()).await), clock)
}

#[tokio::test(start_paused = true)]
async fn memory_a_quieted_server_finishes_its_task_and_takes_no_new_one() {
    let (broker, clock) = memory();
    quieted_server_finishes_and_takes_nothing_new(broker, clock).await;
}

#[tokio::test(start_paused = true)]
async fn memory_a_stop_request_ends_run() {
    let (broker, clock) = memory();
    stop_request_ends_run(broker, clock).await;
}

#[tokio::test(start_paused = true)]
async fn memory_stop_requested_resolves_for_a_started_server() {
    let (broker, clock) = memory();
    stop_requested_resolves_for_a_started_server(broker, clock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_quieted_server_finishes_its_task_and_takes_no_new_one() {
    let server = RedisServer::start();
    let (broker, clock) = redis(&server).await;
    quieted_server_finishes_and_takes_nothing_new(broker, clock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_stop_request_ends_run() {
    let server = RedisServer::start();
    let (broker, clock) = redis(&server).await;
    stop_request_ends_run(broker, clock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stop_requested_resolves_for_a_started_server() {
    let server = RedisServer::start();
    let (broker, clock) = redis(&server).await;
    stop_requested_resolves_for_a_started_server(broker, clock).await;
}
