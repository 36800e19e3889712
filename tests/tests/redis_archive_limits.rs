//! A bulk archive of a few thousand tasks on Redis, in many steps (`archive_all.lua` takes 250
//! tasks a call and trims after each): the outlook before it predicts what the trims drop, and
//! the report after it sums what each step's trim counted, so an archive far past the size
//! limit says exactly how many tasks it dropped.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{ArchiveLimits, ArchiveReport, SystemClock, TaskSet, TaskState};
use asynq_tests::{RedisServer, redis_broker_with_archive_limits};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_archive_in_many_steps_reports_every_task_its_trims_dropped() {
    let redis = RedisServer::start();
    let limits = ArchiveLimits::new(1_000, Duration::from_secs(86_400)).unwrap();
    let broker = redis_broker_with_archive_limits(&redis.url(), Arc::new(SystemClock), limits).await;
    let client = Client::new(broker.clone());
    let tasks: Vec<_> =
        (0..3_000).map(|n| (Task::new("bulk", format!("{n}")), TaskOptions::new().queue("big"))).collect();
    for chunk in tasks.chunks(500) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    let inspector = Inspector::new(broker);
    assert_eq!(inspector.archive_limits(), limits);
    let pending = TaskSet::State(TaskState::Pending);

    let outlook = inspector.archive_all_outlook("big", &pending).await.unwrap();
    assert_eq!((outlook.archived, outlook.adding, outlook.expired, outlook.over_size), (0, 3_000, 0, 2_001));
    let steps = std::sync::Mutex::new(0);
    let report = inspector.archive_all_reporting("big", &pending, |_| *steps.lock().unwrap() += 1).await.unwrap();
    assert!(*steps.lock().unwrap() >= 12, "3 000 tasks take 12 steps of 250");
    assert_eq!(report, ArchiveReport::new(3_000, 0, 2_001));
    assert_eq!(report.trimmed(), outlook.dropped());
    let info = inspector.queue_info("big").await.unwrap();
    assert_eq!((info.pending, info.archived), (0, 999));
}
