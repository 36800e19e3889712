//! Waiting for a task's outcome through a real redis-server: the wait is told by our server's
//! finish scripts (no polling), batches included, marks only the tasks someone waits for, and
//! still sees a task that a Go server finished (which never publishes) by looking once a second.

use asynq_client::{Client, Task, TaskOptions, TaskOutcome, TaskState, Tracker};
use asynq_core::broker::{Dequeue, Outcome};
use asynq_core::{Clock, QueueName, SystemClock};
use asynq_redis::{RedisBroker, WAIT_POLL_INTERVAL};
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisServer, RespValue};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the handler works on each task.
const WORK: Duration = Duration::from_millis(200);

fn config() -> Config {
    Config { concurrency: 2, task_check_interval: Duration::from_millis(20), ..Config::default() }
}

/// Whether task `id` of `queue` carries the waiters mark.
fn marked(redis: &RedisServer, queue: &str, id: &str) -> bool {
    let reply = redis.command(&["HEXISTS", &format!("asynq:{{{queue}}}:t:{id}"), "waiters"]).unwrap();
    reply == RespValue::Integer(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_is_told_when_our_server_finishes_the_task() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let (client, tracker) = (Client::new(broker.clone()), Tracker::new(broker.clone()));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    let mut server = Server::new(broker.clone(), config()).unwrap();
    server
        .start(rec.handler(clock, |ctx, task| async move {
            tokio::time::sleep(WORK).await;
            ctx.result_writer().write(task.payload().clone()).await?;
            Ok(())
        }))
        .unwrap();

    let unwatched = client.enqueue(&Task::new("report", "unwatched"), TaskOptions::new()).await.unwrap();
    let retained = TaskOptions::new().retention(Duration::from_secs(600));
    let watched = client.enqueue(&Task::new("report", "42"), retained).await.unwrap();
    let started = Instant::now();
    let outcome = tracker.wait(&watched.queue, &watched.id, Duration::from_secs(10)).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(outcome.state(), Some(TaskState::Completed));
    assert_eq!(outcome.result().map(|r| &r[..]), Some(&b"42"[..]));
    // Polling would have answered after a whole interval at the earliest.
    assert!(waited < WAIT_POLL_INTERVAL - Duration::from_millis(200), "the wait took {waited:?}");
    assert!(marked(&redis, &watched.queue, &watched.id), "the completed task keeps its mark until deleted");

    // A task nobody waits for is never marked, so finishing it publishes nothing.
    // It ran beside the watched one: gone by now (not found) or going while this waits (deleted).
    let done = tracker.wait(&unwatched.queue, &unwatched.id, Duration::from_secs(10)).await;
    assert!(matches!(done, Ok(TaskOutcome::Deleted) | Err(asynq_client::Error::TaskNotFound { .. })), "{done:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_marks_only_its_task_and_nothing_that_is_gone() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let (client, tracker) = (Client::new(broker.clone()), Tracker::new(broker.clone()));
    let waited_for = client.enqueue(&Task::new("t", "a"), TaskOptions::new()).await.unwrap();
    let other = client.enqueue(&Task::new("t", "b"), TaskOptions::new()).await.unwrap();

    let timed_out = tracker.wait(&waited_for.queue, &waited_for.id, Duration::from_millis(100)).await;
    assert!(matches!(timed_out, Err(asynq_client::Error::WaitTimeout { .. })), "{timed_out:?}");
    assert!(marked(&redis, &waited_for.queue, &waited_for.id));
    assert!(!marked(&redis, &other.queue, &other.id));

    // A wait for a task that does not exist says so and writes nothing (a hash would block its ID).
    let ghost = tracker.wait("default", "ghost", Duration::from_secs(1)).await;
    assert!(matches!(ghost, Err(asynq_client::Error::TaskNotFound { .. })), "{ghost:?}");
    assert_eq!(redis.command(&["EXISTS", "asynq:{default}:t:ghost"]).unwrap(), RespValue::Integer(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_sees_a_task_that_a_go_server_finished_by_looking_again() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let (client, tracker) = (Client::new(broker.clone()), Tracker::new(broker.clone()));
    let info = client.enqueue(&Task::new("t", "a"), TaskOptions::new()).await.unwrap();
    let taken = broker.dequeue(&[QueueName::from_static("default")], 1).await.unwrap();
    assert_eq!(taken[0].message.id, info.id);

    let waiter = tokio::spawn({
        let (tracker, queue, id) = (tracker.clone(), info.queue.clone(), info.id.clone());
        async move { tracker.wait(&queue, &id, Duration::from_secs(10)).await }
    });
    // The wait marks the task before it looks at it; give it up to 5 s to get there.
    for _ in 0..500 {
        if marked(&redis, &info.queue, &info.id) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(marked(&redis, &info.queue, &info.id), "the wait has marked the task");

    // What Go asynq's `done` script does (spec 5.8), which publishes nothing.
    let finished = Instant::now();
    let task_key = format!("asynq:{{default}}:t:{}", info.id);
    for command in [
        vec!["LREM", "asynq:{default}:active", "0", &info.id],
        vec!["ZREM", "asynq:{default}:lease", &info.id],
        vec!["DEL", &task_key],
    ] {
        assert_eq!(redis.command(&command).unwrap(), RespValue::Integer(1), "{command:?}");
    }
    let outcome = tokio::time::timeout(WAIT_POLL_INTERVAL * 2, waiter).await.expect("no answer").unwrap().unwrap();
    assert_eq!(outcome, TaskOutcome::Deleted);
    let waited = finished.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "answered after {waited:?}: by a poll, a whole interval after the last"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_are_told_when_a_batch_settles_their_tasks() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let (client, tracker) = (Client::new(broker.clone()), Tracker::new(broker.clone()));
    for n in 0..6 {
        client.enqueue(&Task::new("t", format!("{n}")), TaskOptions::new()).await.unwrap();
    }
    let taken = broker.dequeue(&[QueueName::from_static("default")], 6).await.unwrap();
    assert_eq!(taken.len(), 6);
    // Before anyone waits, the queue carries no `waiting` mark: a batch then reads no task's mark.
    assert_eq!(redis.command(&["EXISTS", "asynq:{default}:waiting"]).unwrap(), RespValue::Integer(0));

    // Waits on every other task.
    let watched: Vec<_> = taken.iter().step_by(2).map(|t| t.message.id.clone()).collect();
    let waits: Vec<_> = watched
        .iter()
        .map(|id| {
            let (tracker, id) = (tracker.clone(), id.clone());
            tokio::spawn(async move { tracker.wait("default", &id, Duration::from_secs(10)).await })
        })
        .collect();
    for _ in 0..500 {
        if watched.iter().all(|id| marked(&redis, "default", id)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(watched.iter().all(|id| marked(&redis, "default", id)), "every wait has marked its task");
    let RespValue::Integer(ttl) = redis.command(&["TTL", "asynq:{default}:waiting"]).unwrap() else {
        panic!("TTL answers an integer")
    };
    assert!(ttl > 0, "the queue's mark expires unless renewed: TTL {ttl}");

    let finished = Instant::now();
    let outcomes = broker.finish_batch(taken.into_iter().map(|t| (t.message, Outcome::Done)).collect()).await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    for wait in waits {
        assert_eq!(wait.await.unwrap().unwrap(), TaskOutcome::Deleted);
    }
    let waited = finished.elapsed();
    // Polling would have answered after a whole interval at the earliest.
    assert!(waited < WAIT_POLL_INTERVAL - Duration::from_millis(200), "the waits took {waited:?}");
}
