//! Operator actions (`Manage`) and the inspector reads that come with them: running, archiving
//! and deleting one task from each state or every task of a state or group, replacing a
//! scheduled task's payload, removing a queue, listing a group, the daily history and the
//! memory estimate.
//!
//! The refusals carry Go asynq's texts (wire-format spec 6.9–6.13). Beyond Go, every delete
//! releases the uniqueness lock its task holds, pending and grouped tasks included.

use super::BrokerFactory;
use super::fixture::{
    DAY, Fixture, archive, assert_duplicate, assert_queue_not_found, assert_task_not_found, at, millis, names, retry,
    secs,
};
use asynq_core::broker::{Dequeue, GroupInfo, Inspect, Manage, OperatorBroker, Outcome, Page};
use asynq_core::{
    Broker, BulkAction, BulkProgress, DailyStats, Error, GroupName, QueueInfo, QueueName, Result, StoredTask, Task,
    TaskId, TaskOptions, TaskSet, TaskState,
};
use bytes::Bytes;
use std::fmt::Debug;
use std::sync::PoisonError;
use std::time::Duration;

/// Long enough for a broker to deliver a wake-up over loopback many times over.
const DELIVERY: Duration = Duration::from_secs(5);

/// Checks that `result` is [`Error::FailedPrecondition`] with a message containing `text`.
#[track_caller]
fn assert_refused<T: Debug>(result: Result<T>, text: &str) {
    match result {
        Err(Error::FailedPrecondition(message)) if message.contains(text) => {}
        other => panic!("expected FailedPrecondition containing {text:?}, got {other:?}"),
    }
}

/// Checks that `result` is [`Error::InvalidArgument`].
#[track_caller]
fn assert_invalid<T: Debug>(result: Result<T>, what: &str) {
    assert!(matches!(result, Err(Error::InvalidArgument { .. })), "{what}: expected InvalidArgument, got {result:?}");
}

/// The sizes of `info` in the order pending, active, scheduled, retry, archived, completed,
/// aggregating, groups.
fn sizes(info: &QueueInfo) -> [usize; 8] {
    [
        info.pending,
        info.active,
        info.scheduled,
        info.retry,
        info.archived,
        info.completed,
        info.aggregating,
        info.groups,
    ]
}

/// `(group, size)` of each group of `queue`.
async fn groups<B: Broker>(broker: &B, queue: &QueueName) -> Vec<(String, usize)> {
    let groups: Vec<GroupInfo> = broker.groups(queue).await.expect("groups");
    groups.into_iter().map(|g| (g.group.into_string(), g.size)).collect()
}

/// Puts one task in each state into queue `"q"`, each named after its state: `"active"`,
/// `"retry"` (due at 600 s, error `"boom"`), `"archived"` (error `"x"`), `"completed"`,
/// `"scheduled"` (due at 120 s), `"aggregating"` (in group `"g"`), `"pending"`. The clock does
/// not move. Returns the active task's message.
async fn one_task_per_state<B: Broker + Clone>(t: &Fixture<B>) -> StoredTask {
    let active = t.activate("q", "active").await;
    t.run("q", "retry", retry(at(600), "boom", true)).await;
    t.run("q", "archived", archive("x")).await;
    t.complete("q", "completed", secs(3_600)).await;
    let later = TaskOptions::new().queue("q").process_in(secs(120));
    t.enqueue("scheduled", &Task::new("t", "scheduled"), later).await.expect("enqueue scheduled");
    let grouped = TaskOptions::new().queue("q").group("g");
    t.enqueue("aggregating", &Task::new("t", "aggregating"), grouped).await.expect("enqueue grouped");
    t.plain("q", "pending").await;
    active
}

/// Unique for an hour in queue `"q"`.
fn unique() -> TaskOptions {
    TaskOptions::new().queue("q").unique(secs(3_600))
}

/// `run_task` makes a scheduled, retry, archived, completed or aggregating task pending, at the
/// far end of the pending list; its old container and an emptied group no longer hold it.
pub async fn case_run_task_makes_a_task_pending_from_every_runnable_state<F: BrokerFactory<Broker: OperatorBroker>>(
    factory: &F,
) where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;

    for id in ["scheduled", "retry", "archived", "completed", "aggregating"] {
        t.broker
            .run_task(&QueueName::from_static("q"), &TaskId::new(id).unwrap())
            .await
            .unwrap_or_else(|e| panic!("run_task({id}): {e}"));
        assert_eq!(s.task("q", id).await.state, TaskState::Pending, "{id}");
    }

    let pending = ["pending", "scheduled", "retry", "archived", "completed", "aggregating"];
    assert_eq!(s.all_ids("q", TaskState::Pending).await, pending);
    assert_eq!(sizes(&s.info("q").await), [6, 1, 0, 0, 0, 0, 0, 0]);
    assert!(groups(&s.broker, &QueueName::from_static("q")).await.is_empty(), "the emptied group is gone");
    assert_eq!(s.dequeue_ids(&["q"], 10).await, pending, "run tasks are dequeued after the ones pending before");
}

/// A task an operator ran has no pending time: the queue's latency reads zero while it is next.
pub async fn case_a_task_run_by_an_operator_has_no_pending_time<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    s.enqueue("s", &Task::new("t", "s"), TaskOptions::new().queue("q").process_in(secs(60))).await.unwrap();
    s.advance(secs(10));
    t.broker.run_task(&QueueName::from_static("q"), &TaskId::from_static("s")).await.unwrap();
    s.advance(secs(5));
    s.plain("q", "b").await;
    s.advance(millis(2_500));
    assert_eq!(s.info("q").await.latency, Duration::ZERO);

    s.take("q", "s").await;
    assert_eq!(s.info("q").await.latency, millis(2_500));
}

/// `run_task` refuses an active task ("task is already running") and a pending one ("task is
/// already in pending state"), and changes nothing.
pub async fn case_run_task_refuses_active_and_pending_tasks<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    let before = s.snapshot("q").await;

    assert_refused(
        t.broker.run_task(&QueueName::from_static("q"), &TaskId::from_static("active")).await,
        "task is already running",
    );
    assert_refused(
        t.broker.run_task(&QueueName::from_static("q"), &TaskId::from_static("pending")).await,
        "task is already in pending state",
    );

    assert_eq!(s.snapshot("q").await, before);
}

/// `archive_task` archives a pending, scheduled, retry, completed or aggregating task at the
/// current time, leaving its message (and so its last error) as it was and the counters alone.
pub async fn case_archive_task_archives_every_state_but_active<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    let counters = s.info("q").await;

    for id in ["pending", "scheduled", "retry", "completed", "aggregating"] {
        s.advance(secs(1));
        t.broker
            .archive_task(&QueueName::from_static("q"), &TaskId::new(id).unwrap())
            .await
            .unwrap_or_else(|e| panic!("archive_task({id}): {e}"));
        assert_eq!(s.task("q", id).await.state, TaskState::Archived, "{id}");
    }

    let archived = ["archived", "pending", "scheduled", "retry", "completed", "aggregating"];
    assert_eq!(s.all_ids("q", TaskState::Archived).await, archived, "by archive time");
    let info = s.info("q").await;
    assert_eq!(sizes(&info), [0, 1, 0, 0, 6, 0, 0, 0]);
    assert_eq!((info.processed_total, info.failed_total), (counters.processed_total, counters.failed_total));
    assert!(groups(&s.broker, &QueueName::from_static("q")).await.is_empty(), "the emptied group is gone");
    assert_eq!(s.task("q", "retry").await.last_error.as_deref(), Some("boom"));
    assert_eq!(s.task("q", "pending").await.last_error, None);
}

/// `archive_task` refuses an active task (cancel it instead) and an archived one, and changes
/// nothing.
pub async fn case_archive_task_refuses_active_and_archived_tasks<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    let before = s.snapshot("q").await;

    let active = "cannot archive task in active state. use CancelProcessing instead.";
    assert_refused(t.broker.archive_task(&QueueName::from_static("q"), &TaskId::from_static("active")).await, active);
    assert_refused(
        t.broker.archive_task(&QueueName::from_static("q"), &TaskId::from_static("archived")).await,
        "task is already archived",
    );

    assert_eq!(s.snapshot("q").await, before);
}

/// `delete_task` deletes a task in any state but active; the counters stay. An active task is
/// refused (cancel it instead) and left running.
pub async fn case_delete_task_deletes_every_state_but_active<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    let counters = s.info("q").await;

    for id in ["pending", "scheduled", "retry", "archived", "completed", "aggregating"] {
        t.broker
            .delete_task(&QueueName::from_static("q"), &TaskId::new(id).unwrap())
            .await
            .unwrap_or_else(|e| panic!("delete_task({id}): {e}"));
        assert_task_not_found(
            t.broker.task_info(&QueueName::from_static("q"), &TaskId::new(id).unwrap()).await,
            "q",
            id,
        );
        assert_task_not_found(
            t.broker.delete_task(&QueueName::from_static("q"), &TaskId::new(id).unwrap()).await,
            "q",
            id,
        );
    }
    let before = s.snapshot("q").await;
    let active = "cannot delete task in active state. use CancelProcessing instead.";
    assert_refused(t.broker.delete_task(&QueueName::from_static("q"), &TaskId::from_static("active")).await, active);

    assert_eq!(s.snapshot("q").await, before);
    let info = s.info("q").await;
    assert_eq!(sizes(&info), [0, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!((info.processed_total, info.failed_total), (counters.processed_total, counters.failed_total));
    assert!(groups(&s.broker, &QueueName::from_static("q")).await.is_empty(), "the emptied group is gone");
}

/// Every single-task action refuses a task the queue does not hold with TaskNotFound.
pub async fn case_single_task_actions_refuse_a_missing_task<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    s.plain("q", "a").await;
    s.plain("other", "x").await;
    let before = s.snapshot("q").await;

    assert_task_not_found(t.broker.run_task(&QueueName::from_static("q"), &TaskId::from_static("x")).await, "q", "x");
    assert_task_not_found(
        t.broker.archive_task(&QueueName::from_static("q"), &TaskId::from_static("x")).await,
        "q",
        "x",
    );
    assert_task_not_found(
        t.broker.delete_task(&QueueName::from_static("q"), &TaskId::from_static("x")).await,
        "q",
        "x",
    );
    assert_task_not_found(
        t.broker
            .update_task_payload(&QueueName::from_static("q"), &TaskId::from_static("x"), Bytes::from_static(b"p"))
            .await,
        "q",
        "x",
    );

    assert_eq!(s.snapshot("q").await, before);
}

/// Every operator action and read refuses a queue that was never enqueued to with
/// QueueNotFound.
pub async fn case_every_action_refuses_an_unknown_queue<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    s.plain("q", "a").await;
    let b = &t.broker;
    let group = TaskSet::Group(GroupName::from_static("g"));

    assert_queue_not_found(b.run_task(&QueueName::from_static("nope"), &TaskId::from_static("a")).await, "nope");
    assert_queue_not_found(b.archive_task(&QueueName::from_static("nope"), &TaskId::from_static("a")).await, "nope");
    assert_queue_not_found(b.delete_task(&QueueName::from_static("nope"), &TaskId::from_static("a")).await, "nope");
    for set in [TaskSet::State(TaskState::Scheduled), group.clone()] {
        assert_queue_not_found(b.run_all(&QueueName::from_static("nope"), &set).await, "nope");
        assert_queue_not_found(b.archive_all(&QueueName::from_static("nope"), &set).await, "nope");
        assert_queue_not_found(b.delete_all(&QueueName::from_static("nope"), &set).await, "nope");
    }
    assert_queue_not_found(
        b.update_task_payload(&QueueName::from_static("nope"), &TaskId::from_static("a"), Bytes::from_static(b"p"))
            .await,
        "nope",
    );
    assert_queue_not_found(b.delete_queue(&QueueName::from_static("nope"), false).await, "nope");
    assert_queue_not_found(b.delete_queue(&QueueName::from_static("nope"), true).await, "nope");
    assert_queue_not_found(
        b.list_group_tasks(&QueueName::from_static("nope"), &GroupName::from_static("g"), Page::default()).await,
        "nope",
    );
    assert_queue_not_found(b.history(&QueueName::from_static("nope"), 7).await, "nope");
    assert_eq!(b.queues().await.unwrap(), ["q"]);
}

/// `run_all` makes every scheduled, retry or archived task pending and returns how many, each
/// set in score order (the lowest is dequeued first); an empty set gives 0.
pub async fn case_run_all_makes_every_task_of_a_state_pending<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    for (id, due) in [("s2", 20), ("s1", 10)] {
        s.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").process_at(at(due))).await.unwrap();
    }
    s.run("q", "r1", retry(at(50), "boom", true)).await;
    s.run("q", "r2", retry(at(40), "boom", true)).await;
    s.run("q", "a1", archive("x")).await;
    s.advance(secs(1));
    s.run("q", "a2", archive("x")).await;

    assert_eq!(t.broker.run_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Scheduled)).await.unwrap(), 2);
    assert_eq!(s.all_ids("q", TaskState::Pending).await, ["s1", "s2"]);
    assert_eq!(t.broker.run_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Retry)).await.unwrap(), 2);
    assert_eq!(t.broker.run_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Archived)).await.unwrap(), 2);
    assert_eq!(t.broker.run_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Archived)).await.unwrap(), 0);

    let pending = ["s1", "s2", "r2", "r1", "a1", "a2"];
    assert_eq!(s.all_ids("q", TaskState::Pending).await, pending);
    for task in s.list("q", TaskState::Pending, 10, 0).await {
        assert_eq!(task.state, TaskState::Pending, "{}", task.id);
    }
    assert_eq!(sizes(&s.info("q").await), [6, 0, 0, 0, 0, 0, 0, 0]);
}

/// `archive_all` archives every pending, scheduled or retry task at the current time and
/// returns how many; the counters stay.
pub async fn case_archive_all_archives_every_task_of_a_state<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    s.run("q", "r1", retry(at(50), "boom", true)).await;
    for id in ["p1", "p2", "p3"] {
        s.plain("q", id).await;
    }
    for (id, due) in [("s1", 10), ("s2", 20)] {
        s.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").process_at(at(due))).await.unwrap();
    }
    let counters = s.info("q").await;

    s.advance(secs(1));
    assert_eq!(t.broker.archive_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Retry)).await.unwrap(), 1);
    s.advance(secs(1));
    assert_eq!(
        t.broker.archive_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Pending)).await.unwrap(),
        3
    );
    s.advance(secs(1));
    assert_eq!(
        t.broker.archive_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Scheduled)).await.unwrap(),
        2
    );
    assert_eq!(
        t.broker.archive_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Pending)).await.unwrap(),
        0
    );

    // By archive time, then by ID.
    assert_eq!(s.all_ids("q", TaskState::Archived).await, ["r1", "p1", "p2", "p3", "s1", "s2"]);
    for task in s.list("q", TaskState::Archived, 10, 0).await {
        assert_eq!(task.state, TaskState::Archived, "{}", task.id);
    }
    let info = s.info("q").await;
    assert_eq!(sizes(&info), [0, 0, 0, 0, 6, 0, 0, 0]);
    assert_eq!((info.processed_total, info.failed_total), (counters.processed_total, counters.failed_total));
}

/// `bulk_action` acts on every task of the set, reports its progress after each step (counting
/// up to the total the set held, the last report all of it), and refuses a set the action does
/// not apply to before acting; `delete_queue_with_progress` reports the tasks a forced removal
/// deletes.
pub async fn case_bulk_action_reports_its_progress<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    let q = QueueName::from_static("q");
    for id in ["p1", "p2", "p3"] {
        s.plain("q", id).await;
    }
    let reports = std::sync::Mutex::new(Vec::new());
    let record = |p: BulkProgress| reports.lock().unwrap_or_else(PoisonError::into_inner).push(p);

    let pending = TaskSet::State(TaskState::Pending);
    assert_eq!(t.broker.bulk_action(&q, BulkAction::Archive, &pending, &record).await.unwrap(), 3);
    let taken = std::mem::take(&mut *reports.lock().unwrap_or_else(PoisonError::into_inner));
    assert_eq!(taken.last(), Some(&BulkProgress::new(3, 3)), "{taken:?}");
    assert!(taken.windows(2).all(|w| w[0].done <= w[1].done), "{taken:?}");
    assert_eq!(s.all_ids("q", TaskState::Archived).await, ["p1", "p2", "p3"]);

    let refused = t.broker.bulk_action(&q, BulkAction::Run, &TaskSet::State(TaskState::Active), &record).await;
    assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "{refused:?}");
    assert!(reports.lock().unwrap_or_else(PoisonError::into_inner).is_empty());

    let archived = TaskSet::State(TaskState::Archived);
    assert_eq!(t.broker.bulk_action(&q, BulkAction::Run, &archived, &record).await.unwrap(), 3);
    assert_eq!(
        std::mem::take(&mut *reports.lock().unwrap_or_else(PoisonError::into_inner)).last(),
        Some(&BulkProgress::new(3, 3))
    );
    assert_eq!(sizes(&s.info("q").await), [3, 0, 0, 0, 0, 0, 0, 0]);

    t.broker.delete_queue_with_progress(&q, true, &record).await.unwrap();
    assert!(!t.broker.queues().await.unwrap().contains(&q));
    let taken = std::mem::take(&mut *reports.lock().unwrap_or_else(PoisonError::into_inner));
    assert!(taken.last().is_some_and(|p| p.done == p.total), "{taken:?}");
}

/// `delete_all` deletes every pending, scheduled, retry, archived or completed task and
/// returns how many; active tasks stay.
pub async fn case_delete_all_deletes_every_task_of_a_state<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    s.plain("q", "pending2").await;

    let deleted = [
        (TaskState::Pending, vec!["pending", "pending2"]),
        (TaskState::Scheduled, vec!["scheduled"]),
        (TaskState::Retry, vec!["retry"]),
        (TaskState::Archived, vec!["archived"]),
        (TaskState::Completed, vec!["completed"]),
    ];
    for (state, ids) in deleted {
        assert_eq!(
            t.broker.delete_all(&QueueName::from_static("q"), &TaskSet::State(state)).await.unwrap(),
            ids.len(),
            "{state}"
        );
        assert_eq!(
            t.broker.delete_all(&QueueName::from_static("q"), &TaskSet::State(state)).await.unwrap(),
            0,
            "{state} again"
        );
        for id in ids {
            assert_task_not_found(
                t.broker.task_info(&QueueName::from_static("q"), &TaskId::new(id).unwrap()).await,
                "q",
                id,
            );
        }
    }

    assert_eq!(sizes(&s.info("q").await), [0, 1, 0, 0, 0, 0, 1, 1]);
    assert_eq!(s.all_ids("q", TaskState::Active).await, ["active"]);
}

/// Bulk actions on a group take every task waiting in it (run: pending oldest first; archive;
/// delete) and return how many; the emptied group leaves `groups`, the other groups stay; an
/// unknown group gives 0.
pub async fn case_bulk_actions_on_a_group_empty_it<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    for (id, group) in [("r2", "run"), ("a1", "arc"), ("r1", "run"), ("d1", "del"), ("r3", "run"), ("d2", "del")] {
        s.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").group(group)).await.unwrap();
        s.advance(secs(1));
    }
    let group = |name: &str| TaskSet::Group(GroupName::new(name).unwrap());

    assert_eq!(t.broker.run_all(&QueueName::from_static("q"), &group("run")).await.unwrap(), 3);
    assert_eq!(s.all_ids("q", TaskState::Pending).await, ["r2", "r1", "r3"]);
    assert_eq!(groups(&s.broker, &QueueName::from_static("q")).await, [("arc".to_owned(), 1), ("del".to_owned(), 2)]);
    assert_eq!(t.broker.archive_all(&QueueName::from_static("q"), &group("arc")).await.unwrap(), 1);
    assert_eq!(s.all_ids("q", TaskState::Archived).await, ["a1"]);
    assert_eq!(groups(&s.broker, &QueueName::from_static("q")).await, [("del".to_owned(), 2)]);
    assert_eq!(t.broker.delete_all(&QueueName::from_static("q"), &group("del")).await.unwrap(), 2);
    assert_task_not_found(
        t.broker.task_info(&QueueName::from_static("q"), &TaskId::from_static("d2")).await,
        "q",
        "d2",
    );
    assert!(groups(&s.broker, &QueueName::from_static("q")).await.is_empty());

    for name in ["run", "arc", "del", "nope"] {
        assert_eq!(t.broker.run_all(&QueueName::from_static("q"), &group(name)).await.unwrap(), 0, "{name}");
        assert_eq!(t.broker.archive_all(&QueueName::from_static("q"), &group(name)).await.unwrap(), 0, "{name}");
        assert_eq!(t.broker.delete_all(&QueueName::from_static("q"), &group(name)).await.unwrap(), 0, "{name}");
    }
    assert_eq!(sizes(&s.info("q").await), [3, 0, 0, 0, 1, 0, 0, 0]);
}

/// Bulk actions refuse, with InvalidArgument and before touching anything, the sets they do not
/// apply to: active tasks, aggregating tasks not named by group, a blank group, and running
/// pending or completed tasks, archiving archived or completed ones.
pub async fn case_bulk_actions_refuse_sets_they_do_not_apply_to<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    let before = s.snapshot("q").await;
    let state = TaskSet::State;
    let b = &t.broker;

    for set in [state(TaskState::Active), state(TaskState::Aggregating)] {
        assert_invalid(b.run_all(&QueueName::from_static("q"), &set).await, &format!("run_all {set}"));
        assert_invalid(b.archive_all(&QueueName::from_static("q"), &set).await, &format!("archive_all {set}"));
        assert_invalid(b.delete_all(&QueueName::from_static("q"), &set).await, &format!("delete_all {set}"));
    }
    for s in [TaskState::Pending, TaskState::Completed] {
        assert_invalid(b.run_all(&QueueName::from_static("q"), &state(s)).await, &format!("run_all {s}"));
    }
    for s in [TaskState::Archived, TaskState::Completed] {
        assert_invalid(b.archive_all(&QueueName::from_static("q"), &state(s)).await, &format!("archive_all {s}"));
    }
    assert_invalid(
        b.run_all(&QueueName::from_static("nope"), &state(TaskState::Active)).await,
        "checked before the queue",
    );

    assert_eq!(s.snapshot("q").await, before);
}

/// Deleting a unique task, one by one or in bulk, pending, scheduled, retry or grouped, releases
/// its lock: the same unique task can be enqueued again at once.
pub async fn case_deletes_release_the_unique_lock<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    let task = |name: &str| Task::new(name, "payload");
    s.enqueue("f", &task("f"), unique()).await.unwrap();
    let f = s.take("q", "f").await.message;
    s.finish(&f, retry(at(600), "boom", true)).await;
    s.enqueue("a", &task("a"), unique()).await.unwrap();
    s.enqueue("b", &task("b"), unique()).await.unwrap();
    s.enqueue("c", &task("c"), unique().process_in(secs(600))).await.unwrap();
    s.enqueue("d", &task("d"), unique().group("g")).await.unwrap();
    s.enqueue("e", &task("e"), unique().group("h")).await.unwrap();
    for name in ["a", "b", "c", "d", "e", "f"] {
        assert_duplicate(s.enqueue(&format!("{name}-again"), &task(name), unique()).await, "q", name);
    }

    t.broker.delete_task(&QueueName::from_static("q"), &TaskId::from_static("a")).await.unwrap();
    t.broker.delete_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Pending)).await.unwrap();
    t.broker.delete_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Scheduled)).await.unwrap();
    t.broker.delete_all(&QueueName::from_static("q"), &TaskSet::Group(GroupName::from_static("g"))).await.unwrap();
    t.broker.delete_task(&QueueName::from_static("q"), &TaskId::from_static("e")).await.unwrap();
    t.broker.delete_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Retry)).await.unwrap();

    for name in ["a", "b", "c", "d", "e", "f"] {
        let id = format!("{name}-again");
        s.enqueue(&id, &task(name), unique()).await.unwrap_or_else(|e| panic!("enqueue {id}: {e}"));
    }
}

/// Archiving and running a unique task keep its lock (as in Go); deleting the archived task
/// then releases it.
pub async fn case_archive_and_run_keep_the_unique_lock<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    let task = Task::new("email", "to:ann");
    let again = |id: &'static str| s.enqueue(id, &task, unique());
    s.enqueue("a", &task, unique()).await.unwrap();

    t.broker.archive_task(&QueueName::from_static("q"), &TaskId::from_static("a")).await.unwrap();
    assert_duplicate(again("b").await, "q", "email");
    t.broker.run_task(&QueueName::from_static("q"), &TaskId::from_static("a")).await.unwrap();
    assert_duplicate(again("b").await, "q", "email");
    t.broker.archive_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Pending)).await.unwrap();
    assert_duplicate(again("b").await, "q", "email");
    t.broker.run_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Archived)).await.unwrap();
    assert_duplicate(again("b").await, "q", "email");
    t.broker.archive_task(&QueueName::from_static("q"), &TaskId::from_static("a")).await.unwrap();

    t.broker.delete_task(&QueueName::from_static("q"), &TaskId::from_static("a")).await.unwrap();
    again("b").await.unwrap();
}

/// `update_task_payload` replaces the payload of a scheduled task, keeps everything else, and
/// returns the task as stored; other states are refused ("cannot update task that is not in
/// scheduled state.") and left as they were.
pub async fn case_update_task_payload_changes_only_a_scheduled_task<F: BrokerFactory<Broker: OperatorBroker>>(
    factory: &F,
) where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    let options = TaskOptions::new().queue("q").process_at(at(300)).max_retry(3).timeout(secs(90));
    let task = Task::new("report", "old").with_header("trace", "t-1");
    s.enqueue("s", &task, options).await.unwrap();
    let mut want = s.task("q", "s").await;
    want.payload = Bytes::from_static(b"new");

    let updated = t
        .broker
        .update_task_payload(&QueueName::from_static("q"), &TaskId::from_static("s"), Bytes::from_static(b"new"))
        .await
        .unwrap();

    assert_eq!(updated, want);
    assert_eq!(s.task("q", "s").await, want);
    let listed = s.list("q", TaskState::Scheduled, 10, 0).await;
    assert_eq!(listed.iter().find(|task| task.id == "s"), Some(&want));

    let before = s.snapshot("q").await;
    for id in ["pending", "active", "retry", "archived", "completed", "aggregating"] {
        let result = t
            .broker
            .update_task_payload(&QueueName::from_static("q"), &TaskId::new(id).unwrap(), Bytes::from_static(b"x"))
            .await;
        assert_refused(result, "cannot update task that is not in scheduled state.");
    }
    assert_eq!(s.snapshot("q").await, before);
}

/// `delete_queue` without force refuses a queue holding pending, active, scheduled, retry or
/// archived tasks with QueueNotEmpty and changes nothing. Completed and grouped tasks do not
/// count: such a queue is removed (it leaves `queues`, and the inspector no longer finds it),
/// and they, with the counters, show again once the queue is enqueued to again.
pub async fn case_delete_queue_refuses_a_queue_with_tasks<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    s.activate("active", "a").await;
    s.run("retry", "r", retry(at(600), "boom", true)).await;
    s.run("archived", "x", archive("x")).await;
    s.plain("pending", "p").await;
    s.enqueue("s", &Task::new("t", "s"), TaskOptions::new().queue("scheduled").process_in(secs(60))).await.unwrap();
    s.complete("q", "c", secs(3_600)).await;
    s.enqueue("g", &Task::new("t", "g"), TaskOptions::new().queue("q").group("g")).await.unwrap();

    for queue in ["active", "retry", "archived", "pending", "scheduled"] {
        let before = s.snapshot(queue).await;
        match t.broker.delete_queue(&QueueName::new(queue).unwrap(), false).await {
            Err(Error::QueueNotEmpty { queue: q }) if q == queue => {}
            other => panic!("delete_queue({queue:?}): expected QueueNotEmpty, got {other:?}"),
        }
        assert_eq!(s.snapshot(queue).await, before, "{queue}");
    }

    t.broker.delete_queue(&QueueName::from_static("q"), false).await.unwrap();

    assert_eq!(t.broker.queues().await.unwrap(), ["active", "archived", "pending", "retry", "scheduled"]);
    assert_queue_not_found(t.broker.queue_info(&QueueName::from_static("q")).await, "q");
    assert_queue_not_found(t.broker.task_info(&QueueName::from_static("q"), &TaskId::from_static("c")).await, "q");
    assert_queue_not_found(
        t.broker.list_tasks(&QueueName::from_static("q"), TaskState::Completed, Page::default()).await,
        "q",
    );
    assert_queue_not_found(t.broker.delete_queue(&QueueName::from_static("q"), false).await, "q");
    s.plain("q", "new").await;
    let info = s.info("q").await;
    assert_eq!(sizes(&info), [1, 0, 0, 0, 0, 1, 1, 1]);
    assert_eq!(info.processed_total, 1);
}

/// `delete_queue` with force deletes the queue's pending, scheduled, retry and archived tasks
/// and removes the queue; its completed and grouped tasks, counters and paused mark survive and
/// show again once the queue is enqueued to again.
pub async fn case_delete_queue_with_force_deletes_its_tasks<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    let active = one_task_per_state(&s).await;
    s.finish(&active, Outcome::Done).await;
    t.broker.pause_queue(&QueueName::from_static("q")).await.unwrap();
    let counters = s.info("q").await;
    s.plain("other", "o").await;

    t.broker.delete_queue(&QueueName::from_static("q"), true).await.unwrap();

    assert_eq!(t.broker.queues().await.unwrap(), ["other"]);
    assert_queue_not_found(t.broker.queue_info(&QueueName::from_static("q")).await, "q");
    assert_queue_not_found(t.broker.task_info(&QueueName::from_static("q"), &TaskId::from_static("retry")).await, "q");
    s.plain("q", "new").await;
    let info = s.info("q").await;
    assert_eq!(sizes(&info), [1, 0, 0, 0, 0, 1, 1, 1]);
    assert_eq!(s.all_ids("q", TaskState::Pending).await, ["new"]);
    for id in ["scheduled", "retry", "archived"] {
        assert_task_not_found(
            t.broker.task_info(&QueueName::from_static("q"), &TaskId::new(id).unwrap()).await,
            "q",
            id,
        );
    }
    assert_eq!(s.task("q", "completed").await.state, TaskState::Completed);
    assert_eq!(s.task("q", "aggregating").await.state, TaskState::Aggregating);
    assert!(info.paused);
    assert_eq!((info.processed_total, info.failed_total), (counters.processed_total, counters.failed_total));
    assert_eq!(s.info("other").await.pending, 1);
}

/// The tasks a forced `delete_queue` deletes give up their uniqueness locks (Go keeps them until
/// they expire), so the same unique task can be enqueued again at once.
pub async fn case_delete_queue_with_force_releases_unique_locks<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    let (pending, scheduled) = (Task::new("email", "to:ann"), Task::new("email", "to:bob"));
    s.enqueue("p", &pending, unique()).await.unwrap();
    s.enqueue("s", &scheduled, unique().process_in(secs(60))).await.unwrap();

    t.broker.delete_queue(&QueueName::from_static("q"), true).await.unwrap();

    s.enqueue("p-again", &pending, unique()).await.unwrap();
    s.enqueue("s-again", &scheduled, unique()).await.unwrap();
}

/// `delete_queue` with force refuses a queue with active tasks ("cannot remove queue with active
/// tasks") and changes nothing; the queue stays known.
pub async fn case_delete_queue_with_force_refuses_active_tasks<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    one_task_per_state(&s).await;
    let before = s.snapshot("q").await;

    assert_refused(
        t.broker.delete_queue(&QueueName::from_static("q"), true).await,
        "cannot remove queue with active tasks",
    );
    assert!(matches!(
        t.broker.delete_queue(&QueueName::from_static("q"), false).await,
        Err(Error::QueueNotEmpty { .. })
    ));

    assert_eq!(s.snapshot("q").await, before);
    assert_eq!(t.broker.queues().await.unwrap(), ["q"]);
}

/// `list_group_tasks` lists the tasks of one group, oldest first, paged; an unknown group is
/// empty.
pub async fn case_list_group_tasks_pages_a_group_oldest_first<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    for (id, group) in [("a", "g"), ("x", "h"), ("b", "g"), ("c", "g"), ("d", "g"), ("e", "g")] {
        s.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").group(group)).await.unwrap();
        s.advance(secs(1));
    }
    let page = |group: &'static str, size, number| {
        let broker = t.broker.clone();
        async move {
            let tasks = broker
                .list_group_tasks(&QueueName::from_static("q"), &GroupName::new(group).unwrap(), Page { size, number })
                .await
                .expect("list_group_tasks");
            tasks.into_iter().map(|task| task.id).collect::<Vec<_>>()
        }
    };

    let mut pages = Vec::new();
    for number in 0..4 {
        pages.push(page("g", 2, number).await);
    }
    assert_eq!(pages, [vec!["a", "b"], vec!["c", "d"], vec!["e"], vec![]]);
    assert_eq!(page("h", 10, 0).await, ["x"]);
    assert!(page("nope", 10, 0).await.is_empty());
    let tasks = t
        .broker
        .list_group_tasks(&QueueName::from_static("q"), &GroupName::from_static("g"), Page { size: 1, number: 0 })
        .await
        .unwrap();
    let task = &tasks[0];
    assert_eq!(
        (task.state, task.group.as_deref(), task.next_process_at, task.payload.as_ref()),
        (TaskState::Aggregating, Some("g"), None, b"a".as_ref())
    );
}

/// `history` gives the processed and failed counts of the last `days` UTC days, today (by the
/// broker's clock) first, zero for days without outcomes; 0 days is refused.
pub async fn case_history_counts_each_utc_day_today_first<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    s.set(at(DAY - 2));
    s.run("q", "d", Outcome::Done).await;
    s.run("q", "x", archive("x")).await;
    s.run("other", "o", Outcome::Done).await;
    let late = s.activate("q", "late").await;
    s.set(at(DAY) + millis(500));
    s.finish(&late, retry(at(DAY + 60), "boom", true)).await;
    s.set(at(3 * DAY - 1));

    let day = |date: &str, processed, failed| DailyStats {
        queue: QueueName::from_static("q"),
        date: date.to_owned(),
        processed,
        failed,
    };
    let history = t.broker.history(&QueueName::from_static("q"), 4).await.unwrap();
    assert_eq!(
        history,
        [day("2126-11-24", 0, 0), day("2126-11-23", 1, 1), day("2126-11-22", 2, 1), day("2126-11-21", 0, 0)]
    );
    assert_eq!(t.broker.history(&QueueName::from_static("q"), 1).await.unwrap(), [day("2126-11-24", 0, 0)]);
    assert_invalid(t.broker.history(&QueueName::from_static("q"), 0).await, "history of 0 days");
}

/// `queue_info` estimates the memory the queue's tasks take: more than zero bytes while it holds
/// tasks in any state. (The figure itself is backend-specific.)
pub async fn case_queue_info_estimates_memory_usage<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    s.plain("p", "a").await;
    assert!(s.info("p").await.memory_usage > 0, "one pending task");
    one_task_per_state(&s).await;
    assert!(s.info("q").await.memory_usage > 0, "a task in every state");
    s.enqueue("g", &Task::new("t", "g"), TaskOptions::new().queue("g").group("g")).await.unwrap();
    assert!(s.info("g").await.memory_usage > 0, "one grouped task");
}

/// Running tasks wakes a worker waiting on the queue, one by one or in bulk.
pub async fn case_running_tasks_wakes_a_waiting_worker<F: BrokerFactory<Broker: OperatorBroker>>(factory: &F)
where
    F::Store: Broker + Clone,
{
    let t = Fixture::operator(factory).await;
    let s = t.setup();
    for id in ["a", "b"] {
        s.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").process_in(secs(60))).await.unwrap();
    }
    let wait = |broker: &F::Store| {
        let broker = broker.clone();
        tokio::spawn(async move { broker.wait_for_tasks(&names(&["q"])).await })
    };

    let waiter = wait(&s.broker);
    t.broker.run_task(&QueueName::from_static("q"), &TaskId::from_static("a")).await.unwrap();
    tokio::time::timeout(DELIVERY, waiter).await.expect("no wake-up after run_task").unwrap();
    s.take("q", "a").await;

    let waiter = wait(&s.broker);
    assert_eq!(t.broker.run_all(&QueueName::from_static("q"), &TaskSet::State(TaskState::Scheduled)).await.unwrap(), 1);
    tokio::time::timeout(DELIVERY, waiter).await.expect("no wake-up after run_all").unwrap();
}
