//! Scheduled tasks and retries run on time: the forwarder sleeps until the earliest task falls
//! due, and a task scheduled meanwhile wakes it, so nothing waits for the forwarder's interval.
//! On the memory broker in paused time, where the times are exact, and on a real redis-server
//! with an interval far longer than the wait (the conformance suite checks that Redis carries
//! the notices across connections).

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::{Clock, SystemClock};
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Recorder, RedisServer, secs};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The whole second at or after `t`: a task is stored due at whole seconds, as in Go's layout.
fn whole_second(t: SystemTime) -> SystemTime {
    let since = t.duration_since(UNIX_EPOCH).unwrap();
    UNIX_EPOCH + secs(since.as_secs())
}

#[tokio::test(start_paused = true)]
async fn scheduled_tasks_and_retries_start_within_100_ms_of_their_due_second() {
    let h = Harness::new();
    let rec = Recorder::default();
    let config = Config { retry_delay: Arc::new(|_, _, _| Duration::from_millis(2_300)), ..h.config("default", 2) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let clock: Arc<dyn Clock> = h.clock.clone();
    server
        .start(rec.handler(clock, |ctx, _task| async move {
            if ctx.retry_count() == 0 && ctx.task_id() == "flaky" {
                return Err(asynq_server::HandlerError::new("the first attempt fails"));
            }
            Ok(())
        }))
        .unwrap();
    // Past the forwarder's first look, so it sleeps for its interval with nothing scheduled.
    tokio::time::sleep(Duration::from_millis(700)).await;

    let mut due = Vec::new();
    for (id, delay) in [("in-2s", 2_000), ("in-3.5s", 3_500), ("in-11s", 11_000)] {
        let options = TaskOptions::new().task_id(id).process_in(Duration::from_millis(delay));
        let info = h.client.enqueue(&Task::new("t", id), options).await.unwrap();
        due.push((id, info.next_process_at.expect("a scheduled task has a due time")));
    }
    h.client.enqueue(&Task::new("t", "flaky"), TaskOptions::new().task_id("flaky")).await.unwrap();

    h.eventually(secs(30), "every task ran", || async { rec.len() == 5 }).await;
    server.shutdown().await;
    let calls = rec.calls();
    let failed_at = calls.iter().find(|call| call.id == "flaky").expect("flaky ran").at;
    due.push(("flaky", failed_at + Duration::from_millis(2_300)));
    for (id, due_at) in due {
        let started = calls.iter().rev().find(|call| call.id == id).expect("it ran").at;
        let second = whole_second(due_at);
        let late = started.duration_since(second).unwrap_or_else(|e| panic!("{id} started {:?} early", e.duration()));
        assert!(late <= Duration::from_millis(100), "{id} started {late:?} after its due second");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_scheduled_by_another_client_wakes_a_sleeping_forwarder_on_redis() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let rec = Recorder::default();
    // The forwarder would look only once a minute by itself.
    let config = Config {
        delayed_task_check_interval: secs(60),
        queues: [("default".to_owned(), 1)].into(),
        ..Config::default()
    };
    let mut server = Server::new(broker.clone(), config).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    server.start(rec.handler(clock, |_ctx, _task| async { Ok(()) })).unwrap();

    // Another process's client: its own connection, so a notice would cross Redis.
    let producer = Client::new(RedisBroker::connect(&redis.url()).await.unwrap());
    let options = TaskOptions::new().task_id("soon").process_in(secs(1));
    producer.enqueue(&Task::new("t", "soon"), options).await.unwrap();
    let started = tokio::time::Instant::now();
    while rec.is_empty() && started.elapsed() < secs(15) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await;
    assert_eq!(rec.len(), 1, "the task scheduled 1 s ahead ran long before the forwarder's minute was up");
}
