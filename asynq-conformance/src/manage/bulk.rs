//! Bulk actions: running, archiving and deleting every task of a state or group, their progress,
//! and the sets they refuse.

use super::*;

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
