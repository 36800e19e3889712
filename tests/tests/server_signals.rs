//! Signals through a server: a wait parks its task without holding a worker until the signal
//! or the timeout; a signal sent before the wait is kept and returned at once; a timeout is an
//! outcome the handler sees; a signal to no task is a typed error.

use asynq_client::{Task, TaskOptions, TaskState};
use asynq_core::broker::Inspect;
use asynq_core::steps::ParkReason;
use asynq_core::{Error, QueueName};
use asynq_server::{HandlerError, Server, SignalWait, TaskContext, handler_fn};
use asynq_tests::{Harness, secs};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Approval {
    by: String,
}

/// What the handlers saw and ran, by name.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<BTreeMap<String, Vec<String>>>>);

impl Log {
    fn push(&self, key: &str, what: impl Into<String>) {
        self.0.lock().unwrap().entry(key.to_owned()).or_default().push(what.into());
    }

    fn get(&self, key: &str) -> Vec<String> {
        self.0.lock().unwrap().get(key).cloned().unwrap_or_default()
    }
}

/// A handler that reserves, waits up to `timeout` for "approved", and ships when approved; a
/// task of type "other" just runs.
fn order_handler(log: &Log, timeout: std::time::Duration) -> impl asynq_server::Handler {
    let log = log.clone();
    handler_fn(move |ctx: TaskContext, task: asynq_core::Task| {
        let log = log.clone();
        async move {
            log.push("attempts", task.type_name());
            if task.type_name() == "other" {
                return Ok(());
            }
            let l = log.clone();
            ctx.step("reserve", || async move {
                l.push("ran", "reserve");
                Ok::<_, HandlerError>(())
            })
            .await?;
            match ctx.wait_for_signal::<Approval>("approved", timeout).await? {
                SignalWait::Received(approval) => log.push("outcome", format!("approved by {}", approval.by)),
                SignalWait::TimedOut => {
                    log.push("outcome", "timed out");
                    return Ok(());
                }
            }
            let l = log.clone();
            ctx.step("ship", || async move {
                l.push("ran", "ship");
                Ok::<_, HandlerError>(())
            })
            .await?;
            Ok(())
        }
    })
}

#[tokio::test(start_paused = true)]
async fn a_signal_after_the_wait_wakes_the_parked_task() {
    let h = Harness::new();
    let client = h.client.clone().with_steps(Arc::new(h.broker.clone()));
    let log = Log::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(order_handler(&log, secs(3600))).unwrap();
    let order = client.enqueue(&Task::new("order", ""), TaskOptions::new().retention(secs(600))).await.unwrap();
    h.eventually(secs(5), "the order parks", || async { h.queue("default").await.scheduled == 1 }).await;
    let info = h.broker.task_info(&QueueName::from_static("default"), &order.id).await.unwrap();
    let parked = info.parked.expect("parked");
    assert!(matches!(&parked.reason, ParkReason::Signal(name) if name.as_str() == "approved"), "{parked:?}");
    assert_eq!(parked.to_string(), "waiting for signal \"approved\"");
    assert_eq!(info.retried, 0);

    // The worker is free meanwhile.
    client.enqueue(&Task::new("other", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "the other task runs", || async { log.get("attempts").contains(&"other".to_owned()) }).await;

    let woke = client.signal("default", &order.id, "approved", &Approval { by: "ann".into() }).await.unwrap();
    assert!(woke, "the signal woke the waiting task");
    h.eventually(secs(5), "the order completes", || async { h.queue("default").await.completed == 1 }).await;
    assert_eq!(log.get("outcome"), ["approved by ann"]);
    assert_eq!(log.get("ran"), ["reserve", "ship"], "each step ran once");
    assert_eq!(log.get("attempts"), ["order", "other", "order"]);
    let info = h.broker.task_info(&QueueName::from_static("default"), &order.id).await.unwrap();
    assert_eq!((info.state, info.retried), (TaskState::Completed, 0));
    let names: Vec<&str> = info.steps.iter().map(|s| s.name().as_str()).collect();
    for name in ["reserve", "wait:approved", "signal:approved", "ship"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_signal_before_the_wait_is_kept_and_returned_at_once() {
    let h = Harness::new();
    let client = h.client.clone().with_steps(Arc::new(h.broker.clone()));
    let log = Log::default();
    let order = client.enqueue(&Task::new("order", ""), TaskOptions::new()).await.unwrap();
    let woke = client.signal("default", &order.id, "approved", &Approval { by: "bob".into() }).await.unwrap();
    assert!(!woke, "nothing waited yet");
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(order_handler(&log, secs(3600))).unwrap();
    h.eventually(secs(5), "the order is done", || async { h.queue("default").await.processed == 1 }).await;
    assert_eq!(log.get("outcome"), ["approved by bob"]);
    assert_eq!(log.get("attempts"), ["order"], "it never parked");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_times_out_is_an_outcome_the_handler_sees() {
    let h = Harness::new();
    let log = Log::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(order_handler(&log, secs(30))).unwrap();
    let started = h.now();
    h.client.enqueue(&Task::new("order", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(60), "the order is done", || async { h.queue("default").await.processed == 1 }).await;
    assert!(h.now() >= started + secs(30), "not before the timeout");
    assert_eq!(log.get("outcome"), ["timed out"]);
    assert_eq!(log.get("ran"), ["reserve"]);
    assert_eq!(log.get("attempts"), ["order", "order"]);
    assert_eq!(h.queue("default").await.failed, 0);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_signal_to_no_task_or_without_the_capability_is_a_typed_error() {
    let h = Harness::new();
    let client = h.client.clone().with_steps(Arc::new(h.broker.clone()));
    let approval = Approval { by: "x".into() };
    h.client.enqueue(&Task::new("t", ""), TaskOptions::new().task_id("known")).await.unwrap();
    let missing = client.signal("default", "nope", "approved", &approval).await;
    assert!(matches!(missing, Err(Error::TaskNotFound { .. })), "{missing:?}");
    let unsupported = h.client.signal("default", "known", "approved", &approval).await;
    assert!(matches!(unsupported, Err(Error::Unsupported { .. })), "{unsupported:?}");
    let bad = client.signal("default", "known", "", &approval).await;
    assert!(matches!(bad, Err(Error::InvalidArgument { .. })), "{bad:?}");
}
