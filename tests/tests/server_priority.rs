//! Queue priorities as observed from the order tasks run in: weighted random in proportion to
//! the weights, or strictly highest first; and a seeded server's choices, the same every run.

use asynq_client::{Task, TaskOptions};
use asynq_server::{Config, HandlerError, Server};
use asynq_tests::{Call, Harness, Recorder, secs};
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

/// Every run of a server seeded with `seed` whose handler fails each task once: the queue of
/// each run shows the weighted order of its fetches, and the time of each retry the jitter of
/// the default retry delay. The tasks have fixed IDs, so that two runs compare whole.
async fn seeded_runs(seed: u64) -> Vec<Call> {
    const TASKS: usize = 20;
    let h = Harness::new();
    for queue in ["critical", "default", "low"] {
        for i in 0..TASKS {
            let options = TaskOptions::new().queue(queue).task_id(format!("{queue}-{i}")).max_retry(1);
            h.client.enqueue(&Task::new("job", ""), options).await.unwrap();
        }
    }
    let rec = Recorder::default();
    let config = Config {
        queues: [("critical".to_owned(), 6), ("default".to_owned(), 3), ("low".to_owned(), 1)].into(),
        prefetch: Some(0),
        rng_seed: Some(seed),
        ..h.config("unused", 1)
    };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Err(HandlerError::new("fails")) })).unwrap();
    h.eventually(secs(600), "every task has run twice", || async { rec.len() == 6 * TASKS }).await;
    server.shutdown().await;
    rec.calls()
}

#[tokio::test(start_paused = true)]
async fn servers_with_one_seed_choose_queues_and_retry_delays_alike() {
    let first = seeded_runs(7).await;
    assert_eq!(first, seeded_runs(7).await);
    // The retries are spread by the delay's jitter, not all due at one moment.
    let retry_times: std::collections::BTreeSet<_> =
        first.iter().filter(|call| call.retry_count == 1).map(|call| call.at).collect();
    assert!(retry_times.len() > 1, "{first:?}");
    let other = seeded_runs(8).await;
    let order = |calls: &[Call]| calls.iter().map(|call| call.id.clone()).collect::<Vec<_>>();
    assert_ne!(order(&first), order(&other), "another seed chooses otherwise");
}
