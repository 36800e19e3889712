//! Durable steps through a server: a retry skips the steps its task recorded, names are unique
//! per attempt, results have a size limit, records go when the task goes, and a task with
//! records still runs under a handler that knows nothing of steps.

use asynq_client::{Task, TaskOptions, TaskState};
use asynq_core::StoredTask;
use asynq_core::broker::{Inspect, Manage, Steps};
use asynq_core::steps::MAX_STEP_RESULT_LEN;
use asynq_core::{QueueName, TaskId};
use asynq_server::{AttemptReport, Config, HandlerError, Server, StepError, TaskContext, TaskObserver, handler_fn};
use asynq_tests::{Harness, secs};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many times each step's body ran, by name.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<BTreeMap<String, u32>>>);

impl Runs {
    fn ran(&self, name: &str) {
        *self.0.lock().unwrap().entry(name.to_owned()).or_default() += 1;
    }

    fn get(&self, name: &str) -> u32 {
        self.0.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

/// What an observer is told of an attempt: type, outcome, whether it failed, whether it
/// carried an error.
type Seen = (String, &'static str, bool, bool);

/// What observers were told of each attempt.
#[derive(Clone, Default)]
struct Outcomes(Arc<Mutex<Vec<Seen>>>);

impl TaskObserver for Outcomes {
    fn task_finished(&self, task: &StoredTask, report: &AttemptReport<'_>) {
        let seen = (task.type_name.clone(), report.outcome.as_str(), report.is_failure, report.error.is_some());
        self.0.lock().unwrap().push(seen);
    }
}

fn config(h: &Harness) -> Config {
    Config { retry_delay: Arc::new(|_, _, _| Duration::from_secs(1)), ..h.config("default", 1) }
}

async fn records(h: &Harness, id: &TaskId) -> Vec<String> {
    let records = h.broker.step_records(&QueueName::from_static("default"), id).await.unwrap();
    records.iter().map(|r| format!("{}={}", r.name(), String::from_utf8_lossy(r.result()))).collect()
}

#[tokio::test(start_paused = true)]
async fn a_retry_skips_the_steps_its_task_recorded() {
    let h = Harness::new();
    let runs = Runs::default();
    let handler = handler_fn({
        let runs = runs.clone();
        move |ctx: TaskContext, _task| {
            let runs = runs.clone();
            async move {
                let r = runs.clone();
                let reserved: u32 = ctx
                    .step("reserve", || async move {
                        r.ran("reserve");
                        Ok::<_, HandlerError>(7)
                    })
                    .await?;
                let r = runs.clone();
                let receipt: String = ctx
                    .step("charge", || async move {
                        r.ran("charge");
                        Ok::<_, HandlerError>(format!("r-{reserved}"))
                    })
                    .await?;
                assert_eq!(receipt, "r-7", "a recorded result comes back as it was");
                runs.ran("attempt");
                for i in 0..2 {
                    let r = runs.clone();
                    ctx.step(&format!("ship:{i}"), || async move {
                        r.ran("ship");
                        // The first attempt fails its second shipment once.
                        if i == 1 && r.get("attempt") == 1 {
                            return Err(HandlerError::new("carrier down"));
                        }
                        Ok(())
                    })
                    .await?;
                }
                Ok(())
            }
        }
    });
    let mut server = Server::new(h.broker.clone(), config(&h)).unwrap();
    server.start(handler).unwrap();
    let info = h.client.enqueue(&Task::new("order", ""), TaskOptions::new().retention(secs(60))).await.unwrap();
    h.eventually(secs(60), "the task completes", || async { h.queue("default").await.completed == 1 }).await;

    assert_eq!(runs.get("attempt"), 2, "the task failed once, then succeeded");
    assert_eq!((runs.get("reserve"), runs.get("charge")), (1, 1), "the retry skipped what was recorded");
    assert_eq!(runs.get("ship"), 3, "ship:1 failed, so it is not recorded and ran again; ship:0 ran once");
    let info = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(info.retried, 1);
    assert_eq!(records(&h, &info.id).await, ["charge=\"r-7\"", "reserve=7", "ship:0=null", "ship:1=null"]);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_repeated_name_and_an_oversized_result_are_typed_errors() {
    let h = Harness::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = handler_fn({
        let seen = seen.clone();
        move |ctx: TaskContext, _task| {
            let seen = seen.clone();
            async move {
                let big = ctx.step("big", || async { Ok::<_, HandlerError>("x".repeat(MAX_STEP_RESULT_LEN)) }).await;
                let big = match big {
                    Err(StepError::ResultTooLarge { name, size, limit }) => format!("{name} {size} > {limit}"),
                    other => format!("unexpected {other:?}"),
                };
                seen.lock().unwrap_or_else(|e| e.into_inner()).push(big);
                ctx.step("once", || async { Ok::<_, HandlerError>(1) }).await?;
                let again = ctx.step("once", || async { Ok::<_, HandlerError>(2) }).await;
                assert!(matches!(&again, Err(StepError::DuplicateName { name }) if name == "once"), "{again:?}");
                let bad = ctx.step("", || async { Ok::<_, HandlerError>(3) }).await;
                assert!(matches!(bad, Err(StepError::InvalidName { .. })), "{bad:?}");
                again?;
                Ok(())
            }
        }
    });
    let mut server = Server::new(h.broker.clone(), config(&h)).unwrap();
    server.start(handler).unwrap();
    let info = h.client.enqueue(&Task::new("dup", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(10), "the task is archived", || async { h.queue("default").await.archived == 1 }).await;
    let limit = MAX_STEP_RESULT_LEN;
    assert_eq!(seen.lock().unwrap().clone(), [format!("big {} > {limit}", limit + 2)]);
    let archived = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(archived.retried, 0, "a repeated name is a bug no retry fixes: archived at once");
    let error = archived.last_error.unwrap_or_default();
    assert!(error.contains("already ran in this attempt"), "{error}");
    assert_eq!(records(&h, &info.id).await, ["once=1"], "the oversized result was not recorded");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn records_go_when_a_task_completes_without_retention_or_is_deleted() {
    let h = Harness::new();
    let handler = handler_fn(|ctx: TaskContext, task: asynq_core::Task| async move {
        ctx.step("s", || async { Ok::<_, HandlerError>(1) }).await?;
        if task.type_name() == "fail" {
            return Err(HandlerError::new("boom"));
        }
        Ok(())
    });
    let mut server =
        Server::new(h.broker.clone(), Config { retry_delay: Arc::new(|_, _, _| secs(3600)), ..config(&h) }).unwrap();
    server.start(handler).unwrap();
    let done = h.client.enqueue(&Task::new("ok", ""), TaskOptions::new()).await.unwrap();
    let failed = h.client.enqueue(&Task::new("fail", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(10), "both ran", || async {
        let q = h.queue("default").await;
        q.processed == 2 && q.retry == 1
    })
    .await;
    assert_eq!(records(&h, &done.id).await, Vec::<String>::new(), "done without retention: gone");
    assert_eq!(records(&h, &failed.id).await, ["s=1"], "kept while it waits to retry");
    h.broker.delete_task(&QueueName::from_static("default"), &failed.id).await.unwrap();
    assert_eq!(records(&h, &failed.id).await, Vec::<String>::new(), "deleted: gone");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_task_with_records_still_runs_under_a_plain_handler() {
    let h = Harness::new();
    let handler = handler_fn(|ctx: TaskContext, _task| async move {
        ctx.step("s", || async { Ok::<_, HandlerError>(1) }).await?;
        Err(HandlerError::new("first server fails after its step"))
    });
    let mut server = Server::new(h.broker.clone(), config(&h)).unwrap();
    server.start(handler).unwrap();
    let info = h.client.enqueue(&Task::new("t", ""), TaskOptions::new().retention(secs(60))).await.unwrap();
    h.eventually(secs(10), "it fails once", || async { h.queue("default").await.retry == 1 }).await;
    server.shutdown().await;

    // A server whose handler uses no steps (as a Go server is) runs it as any other task.
    let ran = Arc::new(Mutex::new(0));
    let plain = handler_fn({
        let ran = ran.clone();
        move |_ctx: TaskContext, _task| {
            let ran = ran.clone();
            async move {
                *ran.lock().unwrap() += 1;
                Ok(())
            }
        }
    });
    let mut server = Server::new(h.broker.clone(), config(&h)).unwrap();
    server.start(plain).unwrap();
    h.eventually(secs(30), "it completes", || async { h.queue("default").await.completed == 1 }).await;
    assert_eq!(*ran.lock().unwrap(), 1);
    let info = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!(info.state, TaskState::Completed);
    assert_eq!(records(&h, &info.id).await, ["s=1"], "the records stay with the completed task");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_sleep_frees_the_worker_and_the_task_goes_on_when_due() {
    let h = Harness::new();
    let runs = Runs::default();
    let handler = handler_fn({
        let runs = runs.clone();
        move |ctx: TaskContext, task: asynq_core::Task| {
            let runs = runs.clone();
            async move {
                runs.ran(&format!("{}:attempt", task.type_name()));
                if task.type_name() == "other" {
                    return Ok(());
                }
                let r = runs.clone();
                ctx.step("before", || async move {
                    r.ran("before");
                    Ok::<_, HandlerError>(())
                })
                .await?;
                ctx.sleep(secs(60)).await?;
                // A time already past does not park.
                ctx.sleep_until(std::time::SystemTime::UNIX_EPOCH).await?;
                let r = runs.clone();
                ctx.step("after", || async move {
                    r.ran("after");
                    Ok::<_, HandlerError>(())
                })
                .await?;
                Ok(())
            }
        }
    });
    let outcomes = Outcomes::default();
    let config = Config { task_observers: vec![Arc::new(outcomes.clone())], ..config(&h) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(handler).unwrap();
    let started = h.now();
    let order = h.client.enqueue(&Task::new("order", ""), TaskOptions::new().retention(secs(600))).await.unwrap();
    h.eventually(secs(5), "the order parks", || async { h.queue("default").await.scheduled == 1 }).await;
    let info = h.broker.task_info(&QueueName::from_static("default"), &order.id).await.unwrap();
    assert_eq!(info.state, TaskState::Scheduled);
    assert_eq!(info.retried, 0, "a sleep is charged nothing");
    let parked = info.parked.expect("it shows why it is scheduled");
    assert_eq!(parked.to_string(), "sleeping");
    assert!(parked.until >= started + secs(60) && parked.until <= h.now() + secs(60), "{parked:?}");
    assert_eq!(info.next_process_at, Some(asynq_core::time::whole_secs(parked.until)));

    // The one worker is free: another task runs while the order sleeps.
    h.client.enqueue(&Task::new("other", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "the other task runs", || async { runs.get("other:attempt") == 1 }).await;
    assert_eq!(runs.get("order:attempt"), 1);

    h.eventually(secs(120), "the order completes", || async { h.queue("default").await.completed == 1 }).await;
    assert!(h.now() >= started + secs(60), "it went on only when due");
    assert_eq!((runs.get("order:attempt"), runs.get("before"), runs.get("after")), (2, 1, 1));
    let info = h.broker.task_info(&QueueName::from_static("default"), &order.id).await.unwrap();
    assert_eq!((info.retried, info.parked), (0, None));
    let q = h.queue("default").await;
    assert_eq!((q.processed, q.failed), (2, 0), "the sleep is neither processed nor failed");
    let names: Vec<String> = info.steps.iter().map(|s| s.name().to_string()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for name in ["before", "sleep#1", "sleep#2", "after"] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    let seen = outcomes.0.lock().unwrap().clone();
    let order = |outcome| ("order".to_owned(), outcome, false, false);
    assert_eq!(
        seen,
        [order("parked"), ("other".to_owned(), "success", false, false), order("success")],
        "observers see the sleep as a park: no failure, no error"
    );
    server.shutdown().await;
}
