//! Cancelling a running task, on the memory broker and tokio's paused time: the handler's
//! context sees the cancellation, and the attempt fails with "context canceled", so the task goes
//! to retry, or to the archive when it has no retries left, as in Go asynq. A request made before
//! a server could hear it is kept, and honoured once, by the server that takes the task.

use asynq_client::{CancelOutcome, Task, TaskOptions, TaskState, Tracker};
use asynq_core::QueueName;
use asynq_core::broker::{Cancel, Inspect};
use asynq_server::{Server, TaskContext};
use asynq_tests::{Harness, Recorder, secs};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The IDs of the tasks whose work saw its context cancelled.
#[derive(Debug, Clone, Default)]
struct Observed(Arc<Mutex<BTreeSet<String>>>);

impl Observed {
    /// Starts work for the attempt `ctx` that notes when the attempt is cancelled, as work a
    /// handler spawns should.
    fn watch(&self, ctx: &TaskContext) {
        let (seen, ctx) = (self.0.clone(), ctx.clone());
        tokio::spawn(async move {
            ctx.cancelled().await;
            seen.lock().unwrap().insert(ctx.task_id().to_owned());
        });
    }

    fn saw(&self, id: &str) -> bool {
        self.0.lock().unwrap().contains(id)
    }
}

/// A server on `h` whose handler watches its context and works for an hour; and a tracker.
fn start(h: &Harness, observed: &Observed) -> (Server, Recorder, Tracker) {
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    let observed = observed.clone();
    server
        .start(rec.handler(h.clock.clone(), move |ctx, _| {
            observed.watch(&ctx);
            async move {
                tokio::time::sleep(secs(3600)).await;
                Ok(())
            }
        }))
        .unwrap();
    (server, rec, Tracker::new(h.broker.clone()))
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_task_sees_its_context_cancelled_and_goes_to_retry() {
    let h = Harness::new();
    let observed = Observed::default();
    let (mut server, rec, tracker) = start(&h, &observed);
    let cancelled = h.client.enqueue(&Task::new("long", "a"), TaskOptions::new()).await.unwrap();
    let other = h.client.enqueue(&Task::new("long", "b"), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "both tasks run", || async { rec.len() == 2 }).await;

    tracker.cancel(&cancelled.id).await.unwrap();
    h.eventually(secs(5), "the task goes to retry", || async { h.queue("default").await.retry == 1 }).await;
    assert!(observed.saw(&cancelled.id), "the handler's context was cancelled");
    let retry = h.broker.task_info(&QueueName::from_static("default"), &cancelled.id).await.unwrap();
    assert_eq!((retry.state, retry.retried), (TaskState::Retry, 1));
    assert_eq!(retry.last_error.as_deref(), Some("context canceled"));

    // The other task runs on, untouched.
    assert!(!observed.saw(&other.id));
    assert_eq!(
        h.broker.task_info(&QueueName::from_static("default"), &other.id).await.unwrap().state,
        TaskState::Active
    );
    assert_eq!(server.running_tasks(), 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_task_without_retries_left_is_archived_and_a_waiter_hears_it() {
    let h = Harness::new();
    let observed = Observed::default();
    let (mut server, rec, tracker) = start(&h, &observed);
    let info = h.client.enqueue(&Task::new("long", "a"), TaskOptions::new().max_retry(0)).await.unwrap();
    h.eventually(secs(5), "the task runs", || async { rec.len() == 1 }).await;

    let waiter = tokio::spawn({
        let (tracker, queue, id) = (tracker.clone(), info.queue.clone(), info.id.clone());
        async move { tracker.wait(&queue, &id, secs(60)).await }
    });
    tracker.cancel(&info.id).await.unwrap();
    let outcome = waiter.await.unwrap().unwrap();
    assert_eq!(outcome.state(), Some(TaskState::Archived));
    assert_eq!(outcome.error(), Some("context canceled"));
    assert!(observed.saw(&info.id));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_cancellation_for_a_task_not_running_here_changes_nothing() {
    let h = Harness::new();
    let observed = Observed::default();
    let (mut server, rec, tracker) = start(&h, &observed);
    let running = h.client.enqueue(&Task::new("long", "a"), TaskOptions::new()).await.unwrap();
    let scheduled = h.client.enqueue(&Task::new("long", "b"), TaskOptions::new().process_in(secs(600))).await.unwrap();
    h.eventually(secs(5), "the task runs", || async { rec.len() == 1 }).await;

    assert_eq!(
        tracker.cancel(&scheduled.id).await.unwrap(),
        CancelOutcome::NotRunning { queue: QueueName::from_static("default"), state: TaskState::Scheduled }
    );
    assert_eq!(tracker.cancel("no-such-task").await.unwrap(), CancelOutcome::UnknownTask);
    // An ID that breaks the rules is refused, and nothing is kept or published for it.
    let refused = tracker.cancel("").await.unwrap_err();
    assert!(matches!(refused, asynq_client::Error::InvalidArgument { field: "task ID", .. }), "{refused:?}");
    assert_eq!(h.broker.kept_cancellations().await.unwrap().len(), 2);
    tokio::time::sleep(secs(1)).await;
    assert!(!observed.saw(&running.id));
    assert_eq!(
        h.broker.task_info(&QueueName::from_static("default"), &running.id).await.unwrap().state,
        TaskState::Active
    );
    assert_eq!(
        h.broker.task_info(&QueueName::from_static("default"), &scheduled.id).await.unwrap().state,
        TaskState::Scheduled
    );
    server.shutdown().await;
}

/// The hole a publish-only cancel leaves: a request made while no server listens (here, before
/// the server starts) used to be dropped, and the task ran on. Now it is kept: the server reads it
/// when it subscribes, before it runs any handler, and cancels the task; the request is then
/// settled, so the retry runs.
#[tokio::test(start_paused = true)]
async fn a_cancellation_made_before_the_server_started_is_honoured_once() {
    let h = Harness::new();
    let info = h.client.enqueue(&Task::new("long", "a"), TaskOptions::new()).await.unwrap();
    let tracker = Tracker::new(h.broker.clone());
    assert_eq!(
        tracker.cancel(&info.id).await.unwrap(),
        CancelOutcome::NotRunning { queue: QueueName::from_static("default"), state: TaskState::Pending }
    );

    let observed = Observed::default();
    let (mut server, rec, _) = start(&h, &observed);
    h.eventually(secs(5), "the task goes to retry", || async { h.queue("default").await.retry == 1 }).await;
    let retry = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(retry.last_error.as_deref(), Some("context canceled"));
    assert!(h.broker.kept_cancellations().await.unwrap().is_empty(), "the request was settled");

    // The retry runs, uncancelled.
    h.eventually(secs(120), "the retry runs", || async { rec.len() == 2 }).await;
    tokio::time::sleep(secs(1)).await;
    let running = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!((running.state, running.retried), (TaskState::Active, 1));
    server.shutdown().await;
}

/// A request for a task the server takes later (it was scheduled) is honoured when it is taken,
/// within the time requests are kept.
#[tokio::test(start_paused = true)]
async fn a_task_taken_after_its_cancellation_is_cancelled() {
    let h = Harness::new();
    let observed = Observed::default();
    let (mut server, _rec, tracker) = start(&h, &observed);
    let later = h.client.enqueue(&Task::new("long", "a"), TaskOptions::new().process_in(secs(10))).await.unwrap();
    tracker.cancel(&later.id).await.unwrap();
    h.eventually(secs(30), "the task runs and goes to retry", || async { h.queue("default").await.retry == 1 }).await;
    let retry = h.broker.task_info(&QueueName::from_static("default"), &later.id).await.unwrap();
    assert_eq!(retry.last_error.as_deref(), Some("context canceled"));
    server.shutdown().await;
}
