//! Waiting for a task's outcome while a server runs it, on the memory broker and tokio's paused
//! time: the wait ends the moment the task completes (with its result), is archived (with its
//! error) or is deleted, goes on through retries, and times out cleanly.

use asynq_client::{Error, Task, TaskOptions, TaskOutcome, TaskState, Tracker};
use asynq_server::{Config, HandlerError, Server};
use asynq_tests::{Harness, Recorder, secs};
use std::sync::Arc;
use std::time::Duration;

/// A server on `h` serving "default", whose handler sleeps `work` (tokio time), then writes the
/// task's payload as its result, then fails with the payload when it starts with "fail:" (once
/// for "fail:once", every time otherwise).
fn start(h: &Harness, work: Duration) -> (Server, Recorder) {
    let rec = Recorder::default();
    let config = Config { retry_delay: Arc::new(|_, _, _| secs(2)), ..h.config("default", 2) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(rec.handler(h.clock.clone(), move |ctx, task| async move {
            tokio::time::sleep(work).await;
            ctx.result_writer().write(task.payload().clone()).await?;
            let payload = String::from_utf8_lossy(task.payload()).into_owned();
            match payload.as_str() {
                "fail:once" if ctx.retry_count() == 0 => Err(HandlerError::new("first attempt failed")),
                "fail:skip" => Err(HandlerError::skip_retry("bad input")),
                _ => Ok(()),
            }
        }))
        .unwrap();
    (server, rec)
}

#[tokio::test(start_paused = true)]
async fn a_wait_ends_when_the_task_completes_with_its_result() {
    let h = Harness::new();
    let (mut server, _) = start(&h, secs(3));
    let tracker = Tracker::new(h.broker.clone());
    let info = h.client.enqueue(&Task::new("report", "42"), TaskOptions::new().retention(secs(600))).await.unwrap();

    let started = tokio::time::Instant::now();
    let outcome = tracker.wait(&info.queue, &info.id, secs(60)).await.unwrap();
    assert_eq!(started.elapsed(), secs(3), "the wait ends when the handler does, not at a poll");
    assert_eq!(outcome.state(), Some(TaskState::Completed));
    assert_eq!(outcome.result().map(|r| &r[..]), Some(&b"42"[..]));
    let completed = outcome.info().unwrap();
    assert_eq!((completed.id.as_str(), completed.retention), (info.id.as_str(), Some(secs(600))));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_wait_reports_the_error_of_an_archived_task() {
    let h = Harness::new();
    let (mut server, rec) = start(&h, secs(1));
    let tracker = Tracker::new(h.broker.clone());
    let info = h.client.enqueue(&Task::new("report", "fail:skip"), TaskOptions::new()).await.unwrap();

    let outcome = tracker.wait(&info.queue, &info.id, secs(60)).await.unwrap();
    assert_eq!(outcome.state(), Some(TaskState::Archived));
    assert_eq!(outcome.error(), Some("bad input: skip retry for the task"));
    assert_eq!(rec.len(), 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_task_that_succeeds_without_retention_is_reported_deleted() {
    let h = Harness::new();
    let (mut server, _) = start(&h, secs(1));
    let tracker = Tracker::new(h.broker.clone());
    let info = h.client.enqueue(&Task::new("report", "42"), TaskOptions::new()).await.unwrap();

    let started = tokio::time::Instant::now();
    assert_eq!(tracker.wait(&info.queue, &info.id, secs(60)).await.unwrap(), TaskOutcome::Deleted);
    assert_eq!(started.elapsed(), secs(1));
    // Once gone, nothing tells it from a task that never was: a later wait says it is not
    // there, at once, and why that may be.
    let later = tracker.wait(&info.queue, &info.id, secs(60)).await;
    let Err(asynq_client::Error::TaskNotFound { .. }) = &later else { panic!("{later:?}") };
    assert!(later.unwrap_err().to_string().contains("retention"));
    assert_eq!(started.elapsed(), secs(1));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_wait_goes_on_through_a_retry_to_the_final_outcome() {
    let h = Harness::new();
    let (mut server, rec) = start(&h, secs(1));
    let tracker = Tracker::new(h.broker.clone());
    let info =
        h.client.enqueue(&Task::new("report", "fail:once"), TaskOptions::new().retention(secs(60))).await.unwrap();

    let outcome = tracker.wait(&info.queue, &info.id, secs(60)).await.unwrap();
    assert_eq!(outcome.state(), Some(TaskState::Completed));
    let completed = outcome.info().unwrap();
    assert_eq!((completed.retried, completed.last_error.as_deref()), (1, Some("first attempt failed")));
    assert_eq!(rec.len(), 2);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_wait_times_out_cleanly_and_the_task_runs_on() {
    let h = Harness::new();
    let (mut server, _) = start(&h, secs(30));
    let tracker = Tracker::new(h.broker.clone());
    let info = h.client.enqueue(&Task::new("report", "42"), TaskOptions::new().retention(secs(600))).await.unwrap();

    let started = tokio::time::Instant::now();
    let timed_out = tracker.wait(&info.queue, &info.id, secs(10)).await;
    assert_eq!(started.elapsed(), secs(10));
    match timed_out {
        Err(Error::WaitTimeout { queue, id, timeout }) => {
            assert_eq!((queue, id, timeout), (info.queue.clone(), info.id.clone(), secs(10)))
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(h.queue("default").await.active, 1, "the task runs on");

    let outcome = tracker.wait(&info.queue, &info.id, secs(60)).await.unwrap();
    assert_eq!(started.elapsed(), secs(30));
    assert_eq!(outcome.state(), Some(TaskState::Completed));
    server.shutdown().await;
}
