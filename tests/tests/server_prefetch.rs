//! Taking tasks ahead (`Config::prefetch`): only while attempts are short, leased and counted
//! like running tasks but not reported as workers, and given back to their queue at once when
//! shutdown begins.

use asynq_client::{Task, TaskOptions};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Recorder, secs};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A server of concurrency 2 that may take 3 tasks ahead; tasks of type `slow` wait on `gate`.
fn server(h: &Harness, gate: &Arc<Semaphore>, rec: &Recorder) -> Server {
    let config = Config { prefetch: Some(3), shutdown_timeout: secs(60), ..h.config("default", 2) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let gate = Arc::clone(gate);
    server
        .start(rec.handler(h.clock.clone(), move |_, task| {
            let gate = Arc::clone(&gate);
            async move {
                if task.type_name() == "slow" {
                    let _permit = gate.acquire().await;
                }
                Ok(())
            }
        }))
        .unwrap();
    server
}

async fn enqueue(h: &Harness, type_name: &str, n: usize) {
    for _ in 0..n {
        h.client.enqueue(&Task::new(type_name, ""), TaskOptions::new()).await.unwrap();
    }
}

/// Runs 8 tasks that finish at once, so that the server has seen its attempts are short.
async fn run_short_tasks(h: &Harness) {
    enqueue(h, "fast", 8).await;
    h.eventually(secs(5), "the fast tasks run", || async { h.queue("default").await.processed_total == 8 }).await;
}

#[tokio::test(start_paused = true)]
async fn short_tasks_are_taken_ahead_and_given_back_at_once_on_shutdown() {
    let (h, gate, rec) = (Harness::new(), Arc::new(Semaphore::new(0)), Recorder::default());
    let mut server = server(&h, &gate, &rec);
    run_short_tasks(&h).await;

    // Attempts have been short: a fetch takes 3 tasks beyond the 2 free slots.
    enqueue(&h, "slow", 10).await;
    h.eventually(secs(5), "2 running and 3 taken ahead", || async {
        let q = h.queue("default").await;
        (q.active, q.pending) == (5, 5)
    })
    .await;
    assert_eq!(server.running_tasks(), 2, "tasks taken ahead are not running");

    // Shutdown gives the 3 back at once, long before its 60 s timeout gives up on the 2.
    let started = tokio::time::Instant::now();
    let shutdown = tokio::spawn(async move { server.shutdown().await });
    h.eventually(secs(5), "the tasks taken ahead are back in pending", || async {
        let q = h.queue("default").await;
        (q.active, q.pending) == (2, 8)
    })
    .await;
    assert!(started.elapsed() < secs(5));
    shutdown.await.unwrap();
    let q = h.queue("default").await;
    assert_eq!((q.active, q.pending, q.processed_total), (0, 10, 8));
    assert_eq!(rec.calls().iter().filter(|c| c.type_name == "slow").count(), 2, "only two slow tasks started");
}

#[tokio::test(start_paused = true)]
async fn long_tasks_are_not_taken_ahead() {
    let h = Harness::new();
    let (gate, rec) = (Arc::new(Semaphore::new(0)), Recorder::default());
    let mut server = server(&h, &gate, &rec);

    // Nothing has shown attempts to be short yet: the server takes only what it runs.
    enqueue(&h, "slow", 6).await;
    h.eventually(secs(5), "two tasks run", || async { h.queue("default").await.active == 2 }).await;
    tokio::time::sleep(secs(2)).await;
    let q = h.queue("default").await;
    assert_eq!((q.active, q.pending), (2, 4));

    // Once the gate opens, every task runs exactly once.
    gate.add_permits(6);
    h.eventually(secs(5), "every task runs", || async { h.queue("default").await.processed_total == 6 }).await;
    assert_eq!(rec.calls().len(), 6);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn tasks_taken_ahead_run_once_each_as_slots_free_up() {
    let (h, gate, rec) = (Harness::new(), Arc::new(Semaphore::new(0)), Recorder::default());
    let mut server = server(&h, &gate, &rec);
    run_short_tasks(&h).await;
    enqueue(&h, "slow", 10).await;
    h.eventually(secs(5), "tasks are taken ahead", || async { h.queue("default").await.active == 5 }).await;

    gate.add_permits(10);
    h.eventually(secs(5), "every task runs", || async { h.queue("default").await.processed_total == 18 }).await;
    let mut slow: Vec<String> = rec.calls().into_iter().filter(|c| c.type_name == "slow").map(|c| c.id).collect();
    slow.sort();
    slow.dedup();
    assert_eq!((slow.len(), rec.calls().len()), (10, 18), "each task ran once");
    server.shutdown().await;
}

/// While tasks taken ahead wait for a worker, a slot that frees up goes to them and no fetch is
/// made for it alone: the server fetches again once half its prefetch in holds is free, so that
/// one broker call takes a batch even at low concurrency.
#[tokio::test(start_paused = true)]
async fn a_freed_slot_goes_to_tasks_taken_ahead_without_a_fetch_of_its_own() {
    let (h, gate, rec) = (Harness::new(), Arc::new(Semaphore::new(0)), Recorder::default());
    // Concurrency 1 and 4 ahead: a fetch waits for 2 free holds while 2 or more wait ahead.
    let config = Config { prefetch: Some(4), shutdown_timeout: secs(60), ..h.config("default", 1) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let handler_gate = Arc::clone(&gate);
    server
        .start(rec.handler(h.clock.clone(), move |_, task| {
            let gate = Arc::clone(&handler_gate);
            async move {
                if task.type_name() == "slow" {
                    gate.acquire().await.unwrap().forget();
                }
                Ok(())
            }
        }))
        .unwrap();
    run_short_tasks(&h).await;
    enqueue(&h, "slow", 10).await;
    h.eventually(secs(5), "1 running and 4 taken ahead", || async {
        let q = h.queue("default").await;
        (q.active, q.pending) == (5, 5)
    })
    .await;

    // One finishes: the first task taken ahead takes its slot, and nothing more is fetched.
    gate.add_permits(1);
    h.eventually(secs(5), "the first slow task is processed", || async {
        h.queue("default").await.processed_total == 9
    })
    .await;
    tokio::time::sleep(secs(2)).await;
    let q = h.queue("default").await;
    assert_eq!((q.active, q.pending), (4, 5), "no fetch for one freed slot while tasks wait ahead");

    // The rest run once each.
    gate.add_permits(9);
    h.eventually(secs(5), "every task runs", || async { h.queue("default").await.processed_total == 18 }).await;
    let mut slow: Vec<String> = rec.calls().into_iter().filter(|c| c.type_name == "slow").map(|c| c.id).collect();
    slow.sort();
    slow.dedup();
    assert_eq!(slow.len(), 10, "each slow task ran once");
    server.shutdown().await;
}
