//! Task progress through a server: a handler's reports are written at most once a second, the
//! latest one winning, shown while the task runs and kept when it completes; bad reports are
//! refused.

use asynq_client::{Task, TaskEvent, TaskOptions, TaskState};
use asynq_core::broker::Inspect;
use asynq_core::{Error, QueueName, TaskId};
use asynq_server::{ProgressReporter, Server, handler_fn};
use asynq_tests::{Harness, secs};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

async fn progress(h: &Harness, id: &TaskId) -> Option<String> {
    let info = h.broker.task_info(&QueueName::from_static("default"), id).await.unwrap();
    info.progress.map(|p| p.to_string())
}

#[tokio::test(start_paused = true)]
async fn reports_are_written_at_most_once_a_second_and_the_last_is_kept() {
    let h = Harness::new();
    let (go_on, finish) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let handler = handler_fn({
        let (go_on, finish) = (go_on.clone(), finish.clone());
        move |ctx: asynq_server::TaskContext, _task| {
            let (go_on, finish) = (go_on.clone(), finish.clone());
            async move {
                let reporter = ctx.progress();
                let refused = reporter.report(1.5, "too far").unwrap_err();
                assert!(matches!(refused, Error::InvalidArgument { .. }), "{refused}");
                for (fraction, message) in [(0.1, "a"), (0.2, "b"), (0.3, "c")] {
                    reporter.report(fraction, message).unwrap();
                }
                go_on.notified().await;
                reporter.report(0.5, "d").unwrap();
                reporter.report(0.6, "e").unwrap();
                go_on.notified().await;
                reporter.report(1.0, "done").unwrap();
                finish.notified().await;
                Ok(())
            }
        }
    });
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(handler).unwrap();
    let info = h.client.enqueue(&Task::new("work", ""), TaskOptions::new().retention(secs(60))).await.unwrap();

    // The first write goes at once, with the latest report by the time it runs.
    h.eventually(secs(1), "the first report is written", || async { progress(&h, &info.id).await.is_some() }).await;
    assert_eq!(progress(&h, &info.id).await.as_deref(), Some("30% c"));
    // Reports made within a second of a write wait for the second to pass; the latest wins.
    go_on.notify_one();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(progress(&h, &info.id).await.as_deref(), Some("30% c"), "coalesced within the second");
    tokio::time::sleep(ProgressReporter::INTERVAL).await;
    assert_eq!(progress(&h, &info.id).await.as_deref(), Some("60% e"), "the latest report, once the second is up");

    // A report made just before the handler returns is written before the outcome, and kept.
    go_on.notify_one();
    tokio::task::yield_now().await;
    finish.notify_one();
    h.eventually(secs(5), "the task completes", || async { h.queue("default").await.completed == 1 }).await;
    let done = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.progress.map(|p| p.to_string()).as_deref(), Some("100% done"));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_watch_yields_each_new_report_then_the_outcome() {
    let h = Harness::new();
    let step = Arc::new(Notify::new());
    let handler = handler_fn({
        let step = step.clone();
        move |ctx: asynq_server::TaskContext, _task| {
            let step = step.clone();
            async move {
                ctx.progress().report(0.5, "half").unwrap();
                step.notified().await;
                tokio::time::sleep(ProgressReporter::INTERVAL).await;
                ctx.progress().report(0.9, "nearly").unwrap();
                step.notified().await;
                Ok(())
            }
        }
    });
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(handler).unwrap();
    let info = h.client.enqueue(&Task::new("work", ""), TaskOptions::new().retention(secs(60))).await.unwrap();
    let tracker = asynq_client::Tracker::new(h.broker.clone());
    let mut watch = tracker.watch("default", &info.id, secs(60)).unwrap();

    let text = |event: Option<asynq_core::Result<TaskEvent>>| match event {
        Some(Ok(TaskEvent::Progress(progress))) => progress.to_string(),
        Some(Ok(TaskEvent::Finished(outcome))) => format!("finished {:?}", outcome.state()),
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(text(watch.next().await), "50% half");
    step.notify_one();
    assert_eq!(text(watch.next().await), "90% nearly");
    step.notify_one();
    assert_eq!(text(watch.next().await), "finished Some(Completed)");
    assert!(watch.next().await.is_none(), "the watch ends with the outcome");

    // A watch on a task that does not finish in time ends with the timeout.
    let stuck = h.client.enqueue(&Task::new("work", ""), TaskOptions::new().queue("nobody")).await.unwrap();
    let mut watch = tracker.watch("nobody", &stuck.id, secs(3)).unwrap();
    assert!(matches!(watch.next().await, Some(Err(Error::WaitTimeout { .. }))));
    assert!(watch.next().await.is_none());
    assert!(matches!(tracker.watch("default", &info.id, Duration::ZERO), Err(Error::InvalidArgument { .. })));
    server.shutdown().await;
}
