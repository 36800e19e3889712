//! Queue priorities as observed from the order tasks run in: weighted random in proportion to
//! the weights, or strictly highest first.

use asynq_client::{Task, TaskOptions};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Recorder, secs};
use std::collections::BTreeMap;

const PER_QUEUE: usize = 1_000;
const SAMPLE: usize = 900;

async fn first_runs_by_queue(strict: bool) -> BTreeMap<String, usize> {
    let h = Harness::new();
    for queue in ["critical", "default", "low"] {
        for _ in 0..PER_QUEUE {
            h.client.enqueue(&Task::new("job", ""), TaskOptions::new().queue(queue)).await.unwrap();
        }
    }
    let rec = Recorder::default();
    let config = Config {
        concurrency: 1,
        queues: [("critical".to_owned(), 6), ("default".to_owned(), 3), ("low".to_owned(), 1)].into(),
        strict_priority: strict,
        // One task per fetch, so that each run is one weighted draw (see `Config::prefetch`).
        prefetch: Some(0),
        ..h.config("unused", 1)
    };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(60), "the sample has run", || async { rec.len() >= SAMPLE }).await;
    server.shutdown().await;

    let mut counts = BTreeMap::new();
    for call in rec.calls().into_iter().take(SAMPLE) {
        *counts.entry(call.queue).or_default() += 1;
    }
    counts
}

#[tokio::test(start_paused = true)]
async fn weighted_priority_serves_queues_in_proportion_to_their_weights() {
    let counts = first_runs_by_queue(false).await;
    // While every queue has tasks, each is chosen first with probability weight / 10.
    for (queue, weight) in [("critical", 0.6), ("default", 0.3), ("low", 0.1)] {
        let share = counts.get(queue).copied().unwrap_or(0) as f64 / SAMPLE as f64;
        assert!((share - weight).abs() < 0.06, "{queue}: {share:.3} of the runs, expected {weight}; {counts:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn strict_priority_drains_the_highest_queue_first() {
    let counts = first_runs_by_queue(true).await;
    assert_eq!(counts.get("critical"), Some(&SAMPLE), "{counts:?}");
}
