//! Archive trimming: every archive deletes the tasks archived 90 days ago or earlier, then all
//! but the newest 9 999.
//!
//! The count trim needs 10 000 archived tasks. The case drives them through the traits with up to
//! [`CONCURRENCY`] calls in flight, so that a network backend pipelines them instead of paying
//! 40 000 sequential round trips.

use super::BrokerFactory;
use super::fixture::{DAY, Fixture, archive, assert_task_not_found, at, millis};
use asynq_core::broker::WorkerBroker;
use asynq_core::broker::{Dequeue, Inspect, Outcome};
use asynq_core::{QueueName, StoredTask, Task, TaskId, TaskOptions, TaskState};
use futures::{StreamExt, TryStreamExt, stream};

/// How many broker calls the count-trim case keeps in flight at once.
pub const CONCURRENCY: usize = 64;

/// Go's archive size limit: an archive leaves at most `ARCHIVE_LIMIT - 1` archived tasks.
const ARCHIVE_LIMIT: usize = 10_000;

/// Archiving deletes the tasks archived at or before now − 90 days (compared in whole seconds),
/// records and all; younger ones stay. The trimmed tasks still count as processed and failed.
pub async fn case_archive_trims_tasks_archived_90_days_ago<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    t.set(at(0) + millis(900));
    t.run("q", "old", archive("x")).await;
    t.set(at(90 * DAY - 1) + millis(999));
    t.run("q", "mid", archive("x")).await;
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["old", "mid"], "89 days 23:59:59 old is kept");

    t.set(at(90 * DAY));
    t.run("q", "new", archive("x")).await;

    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["mid", "new"]);
    assert_task_not_found(
        t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("old")).await,
        "q",
        "old",
    );
    let info = t.info("q").await;
    assert_eq!((info.archived, info.size, info.processed_total, info.failed_total), (2, 2, 3, 3));
}

/// Archiving the 10 000th task deletes the lowest-ranked one (all share one archive second, so
/// the lowest ID), record and all, leaving the newest 9 999.
pub async fn case_archive_keeps_the_newest_9999<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let ids: Vec<String> = (0..ARCHIVE_LIMIT).map(|i| format!("t{i:05}")).collect();
    let (last, first_ones) = ids.split_last().expect("ids");

    let fixture = &t;
    stream::iter(&ids)
        .map(|id| async move { fixture.enqueue(id, &Task::new("t", id.clone()), TaskOptions::new().queue("q")).await })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await
        .expect("enqueue");
    let queues = vec![QueueName::from_static("q")];
    let taken: Vec<StoredTask> = stream::iter(0..ARCHIVE_LIMIT.div_ceil(100))
        .map(|_| t.broker.dequeue(&queues, 100))
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await
        .expect("dequeue")
        .into_iter()
        .flatten()
        .map(|d| d.message)
        .collect();
    assert_eq!(taken.len(), ARCHIVE_LIMIT);
    let (last_msg, first_msgs): (Vec<_>, Vec<_>) = taken.iter().partition(|m| &m.id == last);
    // The archive is only trimmed once it would hold 10 000, so the order of these does not
    // matter; the last one, with the highest ID, goes alone.
    stream::iter(first_msgs)
        .map(|m| t.broker.finish(m, archive("gave up")))
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await
        .expect("archive");
    assert_eq!(t.info("q").await.archived, first_ones.len());

    t.finish(last_msg[0], Outcome::Archive { error: "gave up".into() }).await;

    let info = t.info("q").await;
    assert_eq!((info.archived, info.size, info.processed, info.failed), (9_999, 9_999, 10_000, 10_000));
    assert_task_not_found(
        t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("t00000")).await,
        "q",
        "t00000",
    );
    for id in ["t00001", last.as_str()] {
        let task = t.task("q", id).await;
        assert_eq!((task.state, task.last_error.as_deref()), (TaskState::Archived, Some("gave up")));
    }
    assert_eq!(t.list_ids("q", TaskState::Archived, 2, 0).await, ["t00001", "t00002"]);
}
