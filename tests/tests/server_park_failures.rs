//! A park the broker fails to write: the task retries uncharged after the retry delay, not at
//! the park's end, so a signal sent meanwhile is seen at once and a sleep is not slept twice
//! over. On the memory broker behind a decorator that fails parks, in tokio's paused time.

use asynq_client::{Task, TaskOptions};
use asynq_server::{Config, HandlerError, Server, SignalWait, TaskContext, handler_fn};
use asynq_tests::{FlakyBroker, Harness, secs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The retry delay of these servers: far shorter than the parks.
const RETRY_DELAY: Duration = Duration::from_secs(5);

fn config(h: &Harness) -> Config {
    let config = Config::builder().retry_delay(|_, _, _| RETRY_DELAY).build().unwrap();
    Config { retry_delay: config.retry_delay, ..h.config("default", 1) }
}

/// What the handler saw, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, what: impl Into<String>) {
        self.0.lock().unwrap().push(what.into());
    }

    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_whose_park_failed_sees_a_signal_sent_meanwhile_after_the_retry_delay() {
    let h = Harness::new();
    let flaky = FlakyBroker::new(h.broker.clone());
    let client = h.client.clone().with_steps(Arc::new(h.broker.clone()));
    let seen = Seen::default();
    let log = seen.clone();
    let handler = handler_fn(move |ctx: TaskContext, _task: asynq_core::Task| {
        let log = log.clone();
        async move {
            log.push("attempt");
            match ctx.wait_for_signal::<String>("approved", secs(3600)).await? {
                SignalWait::Received(by) => log.push(format!("approved by {by}")),
                SignalWait::TimedOut => log.push("timed out"),
            }
            Ok::<_, HandlerError>(())
        }
    });
    flaky.fail_parks(true);
    let mut server = Server::new(flaky.clone(), config(&h)).unwrap();
    server.start(handler).unwrap();
    let started = tokio::time::Instant::now();
    let order = client.enqueue(&Task::new("order", ""), TaskOptions::new().retention(secs(600))).await.unwrap();
    h.eventually(secs(5), "the first attempt waits and fails to park", || async {
        seen.all() == ["attempt"] && h.queue("default").await.retry == 1
    })
    .await;
    flaky.fail_parks(false);
    let woke = client.signal("default", &order.id, "approved", &"ann".to_owned()).await.unwrap();
    assert!(!woke, "the task is not parked, so the signal is kept, not waking it");

    h.eventually(secs(60), "the order completes", || async { h.queue("default").await.completed == 1 }).await;
    assert_eq!(seen.all(), ["attempt", "attempt", "approved by ann"]);
    assert!(started.elapsed() < RETRY_DELAY * 2, "retried after the retry delay: {:?}", started.elapsed());
    let info = h.queue("default").await;
    assert_eq!((info.failed, info.retry), (0, 0), "the failed park charged nothing");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_sleep_whose_park_failed_is_slept_once_after_the_retry_delay() {
    let h = Harness::new();
    let flaky = FlakyBroker::new(h.broker.clone());
    let seen = Seen::default();
    let log = seen.clone();
    let handler = handler_fn(move |ctx: TaskContext, _task: asynq_core::Task| {
        let log = log.clone();
        async move {
            log.push("attempt");
            ctx.sleep(secs(300)).await?;
            log.push("woke");
            Ok::<_, HandlerError>(())
        }
    });
    flaky.fail_parks(true);
    let mut server = Server::new(flaky.clone(), config(&h)).unwrap();
    server.start(handler).unwrap();
    let started = tokio::time::Instant::now();
    h.client.enqueue(&Task::new("nap", ""), TaskOptions::new().retention(secs(600))).await.unwrap();
    h.eventually(secs(5), "the first attempt fails to park", || async { h.queue("default").await.retry == 1 }).await;
    flaky.fail_parks(false);

    h.eventually(secs(400), "the task completes", || async { h.queue("default").await.completed == 1 }).await;
    assert_eq!(seen.all(), ["attempt", "attempt", "attempt", "woke"], "failed park, park, wake");
    let took = started.elapsed();
    assert!(took < secs(300) + RETRY_DELAY * 2, "one sleep after the retry delay, not two: {took:?}");
    server.shutdown().await;
}
