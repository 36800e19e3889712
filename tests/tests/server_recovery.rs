//! Leases, crash recovery and shutdown: a dead worker's task is recovered (charged a failure
//! only if a handler started it), a long task keeps its lease through heartbeats, shutdown
//! requeues what it cannot finish, and stop stops fetching.

use asynq_client::{Task, TaskOptions, TaskState};
use asynq_core::broker::{Dequeue, Inspect};
use asynq_core::{FREE_STALLS, LEASE_DURATION, LEASE_EXPIRED_MESSAGE, QueueName};
use asynq_server::{Config, Server};
use asynq_tests::{FlakyBroker, Harness, Recorder, secs, start_and_die};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

#[tokio::test(start_paused = true)]
async fn a_started_task_whose_worker_died_runs_again_uncharged_the_first_time() {
    let h = Harness::new();
    let info = h.client.enqueue(&Task::new("job", ""), TaskOptions::new().max_retry(0)).await.unwrap();
    start_and_die(&h.broker, "default", 0).await;

    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(180), "the task runs again", || async { h.queue("default").await.processed_total == 1 }).await;
    assert_eq!(
        rec.calls().iter().map(|c| (c.id.clone(), c.retry_count)).collect::<Vec<_>>(),
        [(info.id.into_string(), 0)]
    );
    let q = h.queue("default").await;
    assert_eq!((q.failed_total, q.archived, q.size), (0, 0, 0));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_task_of_a_dead_worker_is_recovered_and_run_again() {
    let h = Harness::new();
    let info = h.client.enqueue(&Task::new("job", ""), TaskOptions::new().max_retry(3)).await.unwrap();
    // It already stalled as often as is forgiven: this lease expiry is a failed attempt.
    let taken = start_and_die(&h.broker, "default", FREE_STALLS).await;
    let taken = [taken];
    assert_eq!(taken[0].lease_expiry, h.now() + LEASE_DURATION);

    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();

    h.eventually(secs(180), "the task is recovered to retry", || async { h.queue("default").await.retry == 1 }).await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!((t.retried, t.last_error.as_deref()), (1, Some(LEASE_EXPIRED_MESSAGE)));
    // Recovery waits for the lease plus a grace period of another lease duration.
    assert!(t.last_failed_at.unwrap() >= taken[0].lease_expiry + LEASE_DURATION);

    h.eventually(secs(120), "the task runs again", || async { h.queue("default").await.size == 0 }).await;
    assert_eq!(rec.calls().iter().map(|c| c.retry_count).collect::<Vec<_>>(), [1]);
    let q = h.queue("default").await;
    assert_eq!((q.processed_total, q.failed_total), (2, 1));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_recoverer_archives_a_task_that_is_out_of_retries() {
    let h = Harness::new();
    let info = h.client.enqueue(&Task::new("job", ""), TaskOptions::new().max_retry(0)).await.unwrap();
    start_and_die(&h.broker, "default", FREE_STALLS).await;
    // A server whose processor never sees the task: a worker that died was running it, and it
    // had stalled before.
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(asynq_server::handler_fn(|_ctx, _task| async { Ok(()) })).unwrap();
    tokio::time::sleep(LEASE_DURATION).await;
    assert_eq!(
        h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap().state,
        TaskState::Active,
        "not yet recovered"
    );
    h.eventually(secs(120), "the recoverer archives the task", || async {
        h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap().state == TaskState::Archived
    })
    .await;
    server.shutdown().await;
    let t = h.broker.task_info(&QueueName::from_static("default"), &info.id).await.unwrap();
    assert_eq!((t.state, t.retried, t.last_error.as_deref()), (TaskState::Archived, 0, Some(LEASE_EXPIRED_MESSAGE)));
}

#[tokio::test(start_paused = true)]
async fn a_task_whose_dequeue_reply_was_lost_runs_later_charged_nothing() {
    let h = Harness::new();
    let flaky = FlakyBroker::new(h.broker.clone());
    flaky.lose_next_dequeue_reply();
    let info = h.client.enqueue(&Task::new("job", ""), TaskOptions::new().max_retry(0)).await.unwrap();
    let rec = Recorder::default();
    let mut server = Server::new(flaky, h.config("default", 1)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();

    // The dequeue ran, but its reply was lost: the task is leased to nobody.
    h.eventually(secs(5), "the task is taken", || async { h.queue("default").await.active == 1 }).await;
    assert!(rec.is_empty());
    // Once its lease expires, the recoverer gives it back; a handler runs it, on its first try.
    h.eventually(secs(180), "the task runs", || async { h.queue("default").await.processed_total == 1 }).await;
    assert_eq!(
        rec.calls().iter().map(|c| (c.id.clone(), c.retry_count)).collect::<Vec<_>>(),
        [(info.id.into_string(), 0)]
    );
    let q = h.queue("default").await;
    assert_eq!((q.failed_total, q.archived, q.size), (0, 0, 0));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn tasks_taken_ahead_by_a_worker_that_died_run_elsewhere_charged_nothing() {
    let h = Harness::new();
    let (flaky, gate, rec) = (FlakyBroker::new(h.broker.clone()), Arc::new(Semaphore::new(0)), Recorder::default());
    let config = Config { prefetch: Some(3), ..h.config("default", 2) };
    let mut doomed = Server::new(flaky.clone(), config).unwrap();
    let held = Arc::clone(&gate);
    doomed
        .start(rec.handler(h.clock.clone(), move |_, task| {
            let gate = Arc::clone(&held);
            async move {
                if task.type_name() == "slow" {
                    let _never = gate.acquire().await;
                }
                Ok(())
            }
        }))
        .unwrap();
    for _ in 0..8 {
        h.client.enqueue(&Task::new("fast", ""), TaskOptions::new()).await.unwrap();
    }
    h.eventually(secs(5), "the fast tasks run", || async { h.queue("default").await.processed_total == 8 }).await;
    for _ in 0..5 {
        h.client.enqueue(&Task::new("slow", ""), TaskOptions::new().max_retry(0)).await.unwrap();
    }
    h.eventually(secs(5), "2 running and 3 taken ahead", || async { h.queue("default").await.active == 5 }).await;

    // The worker dies (max_retry 0 tasks): from now on it writes nothing.
    flaky.go_down();
    let rec_after = Recorder::default();
    let mut survivor = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    survivor.start(rec_after.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(240), "every task is settled", || async {
        let q = h.queue("default").await;
        q.processed_total == 8 + 5 && q.active == 0
    })
    .await;

    // The three it had only taken ahead went back charged nothing, and so did the two it was
    // running (a first stall is forgiven): all five ran on the survivor, on their first try.
    let q = h.queue("default").await;
    assert_eq!((q.archived, q.failed_total), (0, 0));
    assert_eq!(rec.calls().iter().filter(|c| c.type_name == "slow").count(), 2);
    assert_eq!(rec_after.calls().iter().map(|c| c.retry_count).collect::<Vec<_>>(), [0, 0, 0, 0, 0]);
    survivor.shutdown().await;
    flaky.come_back();
    gate.add_permits(2);
    doomed.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn heartbeats_keep_the_lease_of_a_long_running_task() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |_, _| async {
            tokio::time::sleep(Duration::from_secs(5 * 60)).await;
            Ok(())
        }))
        .unwrap();

    h.client.enqueue(&Task::new("long", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(600), "the long task succeeds", || async { h.queue("default").await.processed_total == 1 }).await;
    let q = h.queue("default").await;
    assert_eq!((q.failed_total, q.size), (0, 0), "the task was never recovered");
    assert_eq!(rec.len(), 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_lets_short_tasks_finish_and_requeues_the_rest_at_the_front() {
    let h = Harness::new();
    let rec = Recorder::default();
    let config = Config { shutdown_timeout: secs(8), ..h.config("default", 2) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |_, task| async move {
            let secs = if task.type_name() == "short" { 2 } else { 3600 };
            tokio::time::sleep(Duration::from_secs(secs)).await;
            Ok(())
        }))
        .unwrap();

    let long = h.client.enqueue(&Task::new("long", ""), TaskOptions::new()).await.unwrap();
    h.client.enqueue(&Task::new("short", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "both tasks run", || async { rec.len() == 2 }).await;
    h.client.enqueue(&Task::new("waiting", ""), TaskOptions::new()).await.unwrap();

    let before = tokio::time::Instant::now();
    server.shutdown().await;
    assert!(before.elapsed() <= secs(9), "shutdown waited {:?}", before.elapsed());

    let q = h.queue("default").await;
    assert_eq!((q.processed_total, q.failed_total, q.active, q.pending), (1, 0, 0, 2));
    let t = h.broker.task_info(&QueueName::from_static("default"), &long.id).await.unwrap();
    assert_eq!((t.state, t.retried), (TaskState::Pending, 0));
    // The requeued task is the next one to run, ahead of the one that was waiting.
    let next = h.broker.dequeue(&[QueueName::from_static("default")], 1).await.unwrap();
    assert_eq!(next[0].message.id, long.id);
    assert_eq!(server.status().as_str(), "closed");
}

#[tokio::test(start_paused = true)]
async fn stop_stops_fetching_while_running_tasks_finish() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |_, _| async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Ok(())
        }))
        .unwrap();

    h.client.enqueue(&Task::new("first", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "the first task runs", || async { rec.len() == 1 }).await;
    server.stop();
    assert_eq!(server.status().as_str(), "stopped");
    h.client.enqueue(&Task::new("second", ""), TaskOptions::new()).await.unwrap();
    tokio::time::sleep(secs(30)).await;
    let q = h.queue("default").await;
    assert_eq!((q.processed_total, q.pending), (1, 1));
    assert_eq!(rec.len(), 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_scheduled_task_runs_once_it_is_due() {
    let h = Harness::new();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();

    let due = h.now() + secs(30);
    let info = h.client.enqueue(&Task::new("later", ""), TaskOptions::new().process_at(due)).await.unwrap();
    assert_eq!((info.state, info.next_process_at), (TaskState::Scheduled, Some(due)));
    h.eventually(secs(60), "the task runs", || async { rec.len() == 1 }).await;
    let ran_at = rec.calls()[0].at;
    // Due at 30 s; the forwarder checks every 5 s.
    assert!(ran_at >= due && ran_at <= due + secs(6), "ran {:?} after due", ran_at.duration_since(due));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_server_publishes_itself_and_its_workers_while_running() {
    let h = Harness::new();
    let mut server = Server::new(h.broker.clone(), h.config("default", 3)).unwrap();
    server.start(Recorder::default().handler(h.clock.clone(), |_, _| std::future::pending())).unwrap();
    h.client.enqueue(&Task::new("forever", "p"), TaskOptions::new()).await.unwrap();

    use asynq_core::broker::Inspect;
    h.eventually(secs(15), "a heartbeat reports the worker", || async {
        let servers = h.broker.servers().await.unwrap();
        servers.len() == 1 && servers[0].1.len() == 1
    })
    .await;
    let (info, workers) = h.broker.servers().await.unwrap().remove(0);
    assert_eq!((info.server_id.as_str(), info.concurrency, info.status.as_str()), (server.id(), 3, "active"));
    assert_eq!((workers[0].task_type.as_str(), &workers[0].task_payload[..]), ("forever", &b"p"[..]));
    server.shutdown().await;
    assert!(h.broker.servers().await.unwrap().is_empty(), "shutdown removes the server's records");
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_within_its_bound_while_the_broker_is_frozen_and_loses_nothing() {
    let h = Harness::new();
    let flaky = FlakyBroker::new(h.broker.clone());
    let rec = Recorder::default();
    let config = Config { shutdown_timeout: secs(8), ..h.config("default", 2) };
    let mut server = Server::new(flaky.clone(), config).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |_, _| async {
            tokio::time::sleep(secs(3600)).await;
            Ok(())
        }))
        .unwrap();
    for _ in 0..4 {
        h.client.enqueue(&Task::new("long", ""), TaskOptions::new()).await.unwrap();
    }
    h.eventually(secs(5), "two tasks run", || async { rec.len() == 2 }).await;

    // Every call now waits out a 5 s response timeout and fails, as with a frozen Redis.
    flaky.freeze(secs(5));
    let before = tokio::time::Instant::now();
    server.shutdown().await;
    let took = before.elapsed();
    assert!(took <= secs(8) + asynq_server::SHUTDOWN_MARGIN, "shutdown took {took:?}");

    // Nothing is lost or charged: another server gets the two tasks back once their leases
    // expire (a first stall is forgiven), and runs them with the two that never started.
    let after = Recorder::default();
    let mut survivor = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    survivor.start(after.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(300), "the four tasks run", || async { h.queue("default").await.processed_total == 4 }).await;
    let q = h.queue("default").await;
    assert_eq!((q.failed_total, q.size), (0, 0));
    assert!(after.calls().iter().all(|c| c.retry_count == 0));
    survivor.shutdown().await;
}
