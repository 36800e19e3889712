//! Archive limits other than Go's: a broker configured with them trims every archive to them,
//! whichever path archives (a failure out of retries, an operator's archive of one task or of a
//! whole state), says beforehand what a bulk archive would drop (`Manage::archive_outlook`) and
//! afterwards what its trim dropped (`Manage::archive_reporting`,
//! `Manage::archive_task_reporting`).

use super::BrokerFactory;
use super::fixture::{Fixture, archive, assert_queue_not_found, at};
use asynq_core::broker::Manage;
use asynq_core::{ArchiveLimits, ArchiveReport, QueueName, TaskId, TaskSet, TaskState};
use std::time::Duration;

/// Keeps at most 3 tasks, each for less than an hour.
fn small() -> ArchiveLimits {
    ArchiveLimits::new(4, Duration::from_secs(3600)).expect("valid limits")
}

fn q() -> QueueName {
    QueueName::from_static("q")
}

/// Failures out of retries, an operator's archive of one task and of a whole state all trim to
/// the configured limits: by age first (archived an hour ago or earlier), then the oldest over
/// the size.
pub async fn case_configured_archive_limits_trim_by_size_and_age<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::with_archive_limits(factory, small()).await;
    assert_eq!(t.broker.archive_limits(), small());
    for (second, id) in [(0, "a"), (1, "b"), (2, "c")] {
        t.set(at(second));
        t.run("q", id, archive("x")).await;
    }
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["a", "b", "c"]);
    t.set(at(3));
    t.run("q", "d", archive("x")).await;
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["b", "c", "d"], "the oldest goes over the size");

    // An hour after c: b and c are past the age limit.
    t.set(at(2 + 3600));
    t.plain("q", "e").await;
    t.broker.archive_task(&q(), &TaskId::from_static("e")).await.expect("archive e");
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["d", "e"], "archived an hour ago or earlier go");

    t.set(at(3 + 3600));
    for id in ["f", "g"] {
        t.plain("q", id).await;
    }
    let archived = t.broker.archive_all(&q(), &TaskSet::State(TaskState::Pending)).await.expect("archive all");
    assert_eq!(archived, 2);
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["e", "f", "g"]);
    assert_eq!(t.info("q").await.archived, 3);
}

/// The outlook counts the tasks past the age limit and those over the size limit that a bulk
/// archive would drop, and the bulk archive's report counts the same, as its trim did them.
pub async fn case_the_archive_outlook_counts_what_a_bulk_archive_drops<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let limits = ArchiveLimits::new(5, Duration::from_secs(3600)).expect("valid limits");
    let t = Fixture::with_archive_limits(factory, limits).await;
    assert_queue_not_found(t.broker.archive_outlook(&q(), 1).await, "q");
    for id in ["old1", "old2"] {
        t.run("q", id, archive("x")).await;
    }
    let outlook = t.broker.archive_outlook(&q(), 2).await.expect("outlook");
    assert_eq!((outlook.archived, outlook.expired, outlook.over_size, outlook.dropped()), (2, 0, 0, 0));

    t.set(at(3600));
    let ids: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
    for id in &ids {
        t.plain("q", id).await;
    }
    let outlook = t.broker.archive_outlook(&q(), 6).await.expect("outlook");
    assert_eq!(outlook.limits, limits);
    // Both old ones are an hour old; 6 more leave 6 for the 4 kept: 2 over.
    assert_eq!((outlook.archived, outlook.adding, outlook.expired, outlook.over_size), (2, 6, 2, 2));
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["old1", "old2"], "an outlook writes nothing");

    let report = t.broker.archive_reporting(&q(), &TaskSet::State(TaskState::Pending), &|_| {}).await.expect("archive");
    assert_eq!(report, ArchiveReport::new(6, 2, 2));
    assert_eq!(report.trimmed(), outlook.dropped());
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["p2", "p3", "p4", "p5"]);
}

/// Archiving one task reports what its trim dropped.
pub async fn case_a_bulk_archive_reports_what_its_trim_dropped<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::with_archive_limits(factory, small()).await;
    for id in ["a", "b", "c", "d"] {
        t.plain("q", id).await;
    }
    let report = t.broker.archive_reporting(&q(), &TaskSet::State(TaskState::Pending), &|_| {}).await.expect("archive");
    assert_eq!(report, ArchiveReport::new(4, 0, 1), "4 tasks for 3 places");
    t.set(at(1));
    t.plain("q", "e").await;
    let report = t.broker.archive_task_reporting(&q(), &TaskId::from_static("e")).await.expect("archive e");
    assert_eq!(report, ArchiveReport::new(1, 0, 1));
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["c", "d", "e"]);
    let nothing = t.broker.archive_reporting(&q(), &TaskSet::State(TaskState::Pending), &|_| {}).await;
    assert_eq!(nothing.expect("archive nothing"), ArchiveReport::new(0, 0, 0));
}
