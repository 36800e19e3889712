//! How each way a handler can end moves its task: success, retention and results, failure with
//! retries and backoff, archive after the last retry, skip-retry, revoke, panic, timeout,
//! deadline, an unknown task type, and stored messages whose numbers are at the ends of their
//! types.

use asynq_client::{Error, Task, TaskOptions, TaskState};
use asynq_core::broker::{Enqueue, Inspect};
use asynq_core::time::{MAX_UNIX_SECS, MIN_UNIX_SECS, from_unix_secs};
use asynq_core::{EnqueueRequest, Placement, QueueName, StoredTask, TaskId};
use asynq_server::{Config, HandlerError, ServeMux, Server};
use asynq_tests::{Harness, Recorder, secs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[tokio::test(start_paused = true)]
async fn a_successful_task_is_deleted_and_counted_as_processed() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();

    let info = h.client.enqueue(&Task::new("ok", "payload"), TaskOptions::new()).await.unwrap();
    assert_eq!(info.state, TaskState::Pending);
    h.eventually(secs(5), "the task is processed", || async { h.queue("default").await.processed_total == 1 }).await;

    let q = h.queue("default").await;
    assert_eq!((q.size, q.failed_total, q.processed, q.failed), (0, 0, 1, 0));
    assert!(matches!(
        h.broker.task_info(&QueueName::from_static("default"), &info.id).await,
        Err(Error::TaskNotFound { .. })
    ));
    assert_eq!(rec.calls()[0].retry_count, 0);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_task_with_retention_is_completed_with_its_result_then_expires() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |ctx, _| async move {
            ctx.result_writer().write("42").await?;
            Ok(())
        }))
        .unwrap();

    let started = h.now();
    let info = h.client.enqueue(&Task::new("answer", ""), TaskOptions::new().retention(secs(60))).await.unwrap();
    h.eventually(secs(5), "the task completes", || async { h.queue("default").await.completed == 1 }).await;

    let done = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.result.as_deref(), Some(&b"42"[..]));
    assert!(done.completed_at.is_some_and(|t| t >= started));
    assert_eq!(done.retention, Some(secs(60)));

    // The janitor deletes it once the retention has passed.
    h.eventually(secs(90), "the janitor deletes the expired task", || async {
        h.queue("default").await.completed == 0
    })
    .await;
    assert!(h.now() >= started + secs(60));
    assert_eq!(h.queue("default").await.processed_total, 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_failing_task_is_retried_with_backoff_then_archived_after_its_last_retry() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Err(HandlerError::new("boom")) })).unwrap();

    let info = h.client.enqueue(&Task::new("fail", ""), TaskOptions::new().max_retry(2)).await.unwrap();
    h.eventually(secs(5), "the first failure", || async { h.queue("default").await.retry == 1 }).await;
    let retry = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!((retry.state, retry.retried, retry.last_error.as_deref()), (TaskState::Retry, 1, Some("boom")));
    // The default delay for the first retry is 15 to 44 seconds.
    let failed_at = retry.last_failed_at.unwrap();
    let delay = retry.next_process_at.unwrap().duration_since(failed_at).unwrap();
    assert!((secs(15)..=secs(44)).contains(&delay), "first retry after {delay:?}");

    h.eventually(secs(600), "the task is archived", || async { h.queue("default").await.archived == 1 }).await;
    let archived = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(
        (archived.state, archived.retried, archived.last_error.as_deref()),
        (TaskState::Archived, 2, Some("boom"))
    );
    let retries: Vec<u32> = rec.calls().iter().map(|c| c.retry_count).collect();
    assert_eq!(retries, [0, 1, 2]);
    // Each retry waited at least the minimum delay.
    let calls = rec.calls();
    assert!(calls.windows(2).all(|w| w[1].at.duration_since(w[0].at).unwrap() >= secs(15)));
    let q = h.queue("default").await;
    assert_eq!((q.processed_total, q.failed_total, q.retry), (3, 3, 0));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn skip_retry_archives_at_once() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Err(HandlerError::skip_retry("bad payload")) })).unwrap();

    let info = h.client.enqueue(&Task::new("t", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "the task is archived", || async { h.queue("default").await.archived == 1 }).await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!((t.retried, t.last_error.as_deref()), (0, Some("bad payload: skip retry for the task")));
    assert_eq!(rec.len(), 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_revoked_task_is_deleted_without_counting_a_failure() {
    let h = Harness::new();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(Recorder::default().handler(h.clock.clone(), |_, _| async { Err(HandlerError::revoke()) })).unwrap();

    let info = h.client.enqueue(&Task::new("t", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "the task is gone", || async { h.queue("default").await.size == 0 }).await;
    let q = h.queue("default").await;
    assert_eq!((q.processed_total, q.failed_total), (1, 0));
    assert!(h.broker.task_info(&QueueName::from_static("default"), &info.id).await.is_err());
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_fails_its_task_and_the_server_keeps_going() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |_, task| async move {
            if task.type_name() == "explode" {
                panic!("kaboom");
            }
            Ok(())
        }))
        .unwrap();

    let bad = h.client.enqueue(&Task::new("explode", ""), TaskOptions::new()).await.unwrap();
    h.client.enqueue(&Task::new("fine", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "both tasks ran", || async { rec.len() >= 2 }).await;
    h.eventually(secs(5), "the good task succeeded", || async { h.queue("default").await.processed_total == 2 }).await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &bad.id).await.unwrap();
    assert_eq!(t.state, TaskState::Retry);
    assert_eq!(t.last_error.as_deref(), Some("panic error cause by: kaboom"));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_task_past_its_timeout_is_cancelled_and_retried() {
    let h = Harness::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    let seen = cancelled.clone();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server
        .start(Recorder::default().handler(h.clock.clone(), move |ctx, _| {
            // Work the handler spawned learns of the cancellation through the context.
            let seen = seen.clone();
            tokio::spawn(async move {
                ctx.cancelled().await;
                seen.store(true, Ordering::SeqCst);
            });
            std::future::pending()
        }))
        .unwrap();

    let info = h.client.enqueue(&Task::new("slow", ""), TaskOptions::new().timeout(secs(2))).await.unwrap();
    let start = h.now();
    h.eventually(secs(10), "the task times out", || async { h.queue("default").await.retry == 1 }).await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(t.last_error.as_deref(), Some("context deadline exceeded"));
    let elapsed = t.last_failed_at.unwrap().duration_since(start).unwrap();
    assert!(elapsed >= secs(1) && elapsed <= secs(3), "failed after {elapsed:?}");
    h.eventually(secs(1), "the spawned work sees the cancellation", || async { cancelled.load(Ordering::SeqCst) })
        .await;
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_deadline_earlier_than_the_timeout_wins() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| std::future::pending())).unwrap();

    let deadline = h.now() + secs(3);
    let opts = TaskOptions::new().timeout(secs(60)).deadline(deadline).max_retry(0);
    let info = h.client.enqueue(&Task::new("slow", ""), opts).await.unwrap();
    h.eventually(secs(10), "the task is archived", || async { h.queue("default").await.archived == 1 }).await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(t.last_error.as_deref(), Some("context deadline exceeded"));
    assert!(t.last_failed_at.unwrap() <= deadline + secs(1));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_task_without_a_handler_fails_and_is_retried() {
    let h = Harness::new();
    let mut mux = ServeMux::new();
    mux.handle_fn("email:", |_, _| async { Ok(()) });
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(mux).unwrap();

    h.client.enqueue(&Task::new("email:welcome", ""), TaskOptions::new()).await.unwrap();
    let unknown = h.client.enqueue(&Task::new("image:resize", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "both ran", || async { h.queue("default").await.processed_total == 2 }).await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &unknown.id).await.unwrap();
    assert_eq!(t.last_error.as_deref(), Some("handler not found for task \"image:resize\""));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn errors_that_are_not_failures_retry_without_counting() {
    let h = Harness::new();
    let handled = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = handled.clone();
    let config = Config {
        is_failure: Arc::new(|err| !err.to_string().starts_with("rate limited")),
        error_handler: Some(Arc::new(move |task, err| {
            log.lock().unwrap().push(format!("{}: {err}", task.type_name()))
        })),
        retry_delay: Arc::new(|_, _, _| Duration::from_secs(1)),
        ..h.config("default", 1)
    };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(Recorder::default().handler(h.clock.clone(), |_, _| async { Err(HandlerError::new("rate limited")) }))
        .unwrap();

    let info = h.client.enqueue(&Task::new("api:call", ""), TaskOptions::new().max_retry(1)).await.unwrap();
    h.eventually(secs(5), "the error handler saw the error", || async { !handled.lock().unwrap().is_empty() }).await;
    h.eventually(secs(5), "the task is in retry", || async { h.queue("default").await.retry == 1 }).await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(t.retried, 0);
    assert_eq!(h.queue("default").await.failed_total, 0);
    assert_eq!(handled.lock().unwrap()[0], "api:call: rate limited");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn stored_numbers_at_the_ends_of_their_types_neither_panic_nor_overflow() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 4)).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |_, task| async move {
            match task.type_name() {
                "fail" => Err(HandlerError::new("boom")),
                "hang" => std::future::pending().await,
                _ => Ok(()),
            }
        }))
        .unwrap();

    // Tasks at the ends of what a task holds, as a corrupt Go message is read (and beyond, for
    // the timeout), written past the client's checks. Each once made a worker panic (the
    // deadline overflowed) or a completed task expire at once.
    let (earliest, latest) = (from_unix_secs(MIN_UNIX_SECS), from_unix_secs(MAX_UNIX_SECS));
    let longest = secs(asynq_core::MAX_DURATION.as_secs());
    let message = |id: &str, type_name: &str| StoredTask {
        max_retry: 25,
        ..StoredTask::new(TaskId::new(id).unwrap(), QueueName::default(), type_name)
    };
    let stored = [
        StoredTask { timeout: Some(Duration::MAX), ..message("timeout-max", "ok") },
        StoredTask { timeout: Some(longest), ..message("timeout-longest", "ok") },
        StoredTask { timeout: Some(longest), deadline: Some(latest), ..message("deadline-max", "ok") },
        StoredTask {
            timeout: Some(longest),
            retention: Some(longest),
            completed_at: Some(earliest),
            ..message("retention-max", "ok")
        },
        StoredTask { max_retry: i32::MAX as u32, retried: i32::MAX as u32 - 1, ..message("retried-max", "fail") },
        StoredTask { max_retry: 0, retried: 0, ..message("retry-min", "fail") },
        StoredTask { deadline: Some(earliest), max_retry: 0, ..message("deadline-min", "hang") },
        StoredTask { deadline: Some(from_unix_secs(-1)), max_retry: 0, ..message("deadline-negative", "hang") },
    ];
    for message in stored {
        let request = EnqueueRequest::new(message, Placement::Pending);
        h.broker.enqueue(request).await.unwrap();
    }
    h.eventually(secs(5), "every task settles", || async {
        let q = h.queue("default").await;
        q.processed_total == 8 && q.active == 0
    })
    .await;

    let q = h.queue("default").await;
    assert_eq!((q.completed, q.retry, q.archived, q.failed_total), (1, 1, 3, 4));
    for id in ["timeout-max", "timeout-longest", "deadline-max"] {
        assert!(
            matches!(
                h.broker.task_info(&QueueName::from_static("default"), &TaskId::new(id).unwrap()).await,
                Err(Error::TaskNotFound { .. })
            ),
            "{id} is done"
        );
    }
    // Kept for Go's longest duration: the janitor, which runs every few seconds, leaves it.
    let completed =
        h.broker.task_info(&QueueName::from_static("default"), &TaskId::from_static("retention-max")).await.unwrap();
    assert_eq!((completed.state, completed.retention), (TaskState::Completed, Some(longest)));
    tokio::time::advance(secs(60)).await;
    assert_eq!(
        h.broker
            .task_info(&QueueName::from_static("default"), &TaskId::from_static("retention-max"))
            .await
            .unwrap()
            .state,
        TaskState::Completed
    );
    // The default retry delay saturates; the retry is due at the end of the year 9999.
    let retried =
        h.broker.task_info(&QueueName::from_static("default"), &TaskId::from_static("retried-max")).await.unwrap();
    assert_eq!((retried.state, retried.retried), (TaskState::Retry, i32::MAX as u32));
    assert_eq!(retried.next_process_at, Some(latest));
    // No retries left.
    assert_eq!(
        h.broker.task_info(&QueueName::from_static("default"), &TaskId::from_static("retry-min")).await.unwrap().state,
        TaskState::Archived
    );
    for id in ["deadline-min", "deadline-negative"] {
        let archived = h.broker.task_info(&QueueName::from_static("default"), &TaskId::new(id).unwrap()).await.unwrap();
        assert_eq!(archived.state, TaskState::Archived, "{id}");
        assert_eq!(archived.last_error.as_deref(), Some("context deadline exceeded"), "{id}");
    }
    server.shutdown().await;
}
