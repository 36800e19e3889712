//! Rate limits and per-type concurrency limits, observed from when handlers start: a limited
//! queue starts no more tasks a second than its bucket allows and none of them fails; a limited
//! type never runs more tasks at once than its limit while other types keep running.
//!
//! Time is tokio's paused time; a processor that polled a rate-limited queue in a loop would
//! never let it advance, so these tests finishing shows the processor sleeps instead.

use asynq_client::{Task, TaskOptions};
use asynq_core::Error;
use asynq_core::rate_limit::RateLimit;
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Recorder, secs};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const TASKS: usize = 50;

#[tokio::test(start_paused = true)]
async fn a_rate_limited_queue_starts_no_more_tasks_a_second_than_its_limit() {
    let h = Harness::new();
    for _ in 0..TASKS {
        h.client.enqueue(&Task::new("job", ""), TaskOptions::new().queue("limited")).await.unwrap();
    }
    let (per_second, burst) = (5.0, 5);
    let config = Config {
        rate_limits: [("limited".to_owned(), RateLimit::new(per_second, burst).unwrap())].into(),
        ..h.config("limited", 20)
    };
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let begin = h.now();
    server
        .start(rec.handler(h.clock.clone(), |_, _| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(())
        }))
        .unwrap();
    h.eventually(secs(30), "every task has run", || async { h.queue("limited").await.processed == TASKS as u64 }).await;
    server.shutdown().await;

    let starts: Vec<Duration> = rec.calls().iter().map(|c| c.at.duration_since(begin).unwrap()).collect();
    assert_eq!(starts.len(), TASKS, "each task ran once");
    // A full bucket starts `burst` at once; the other 45 take 9 s at 5 a second.
    let last = starts.iter().max().unwrap();
    assert!((Duration::from_secs(8)..Duration::from_secs(11)).contains(last), "the last task started at {last:?}");
    for window_start in &starts {
        let in_window = starts.iter().filter(|s| (*window_start..*window_start + secs(1)).contains(*s)).count();
        assert!(in_window <= 5 + burst as usize, "{in_window} tasks started in the second from {window_start:?}");
    }
    let info = h.queue("limited").await;
    assert_eq!((info.failed, info.retry, info.archived), (0, 0, 0), "no task over the limit failed: {info:?}");
}

/// The most that ran at once of one kind, kept by a handler.
#[derive(Debug, Default)]
struct Peak {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl Peak {
    async fn around(&self, work: Duration) {
        let running = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(running, Ordering::SeqCst);
        tokio::time::sleep(work).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
    }

    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

#[tokio::test(start_paused = true)]
async fn a_type_limit_caps_that_type_while_others_keep_running() {
    let h = Harness::new();
    for i in 0..20 {
        h.client.enqueue(&Task::new("video:encode", ""), TaskOptions::new()).await.unwrap();
        if i < 10 {
            h.client.enqueue(&Task::new("email:send", ""), TaskOptions::new()).await.unwrap();
        }
    }
    let config = Config { type_concurrency: [("video:encode".to_owned(), 2)].into(), ..h.config("default", 10) };
    let (video, email) = (Arc::new(Peak::default()), Arc::new(Peak::default()));
    let (v, e) = (video.clone(), email.clone());
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(rec.handler(h.clock.clone(), move |_, task| {
            let peak = if task.type_name() == "video:encode" { v.clone() } else { e.clone() };
            async move {
                peak.around(secs(2)).await;
                Ok(())
            }
        }))
        .unwrap();
    h.eventually(secs(300), "every task has run", || async { h.queue("default").await.processed == 30 }).await;
    server.shutdown().await;

    assert_eq!(video.max(), 2, "video:encode ran at most 2 at once, and did reach 2");
    assert!(email.max() >= 5, "email:send kept running beside it, at most {} at once", email.max());
    let calls = rec.calls();
    assert_eq!(calls.len(), 30, "each task ran once");
    assert!(calls.iter().all(|c| c.retry_count == 0), "deferring a task does not use a retry");
    let info = h.queue("default").await;
    assert_eq!((info.failed, info.archived), (0, 0), "deferring is not a failure: {info:?}");
}

#[tokio::test]
async fn limits_that_cannot_apply_are_refused() {
    let h = Harness::new();
    let limit = RateLimit::new(1.0, 1).unwrap();
    let unknown_queue = Config { rate_limits: [("elsewhere".to_owned(), limit)].into(), ..h.config("default", 1) };
    let zero_type_limit = Config { type_concurrency: [("video".to_owned(), 0)].into(), ..h.config("default", 1) };
    let empty_type = Config { type_concurrency: [(String::new(), 1)].into(), ..h.config("default", 1) };
    for config in [unknown_queue, zero_type_limit, empty_type] {
        let result = Server::new(h.broker.clone(), config);
        assert!(matches!(result, Err(Error::InvalidArgument { .. })), "{:?}", result.err());
    }
}
