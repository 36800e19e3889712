//! What operators see: queue statistics and latency, one task's snapshot, listings by state with
//! their order and paging, orphaned active tasks, and pausing.

use super::BrokerFactory;
use super::fixture::{
    Fixture, archive, assert_failed_precondition, assert_queue_not_found, assert_task_not_found, at, millis, retry,
    secs,
};
use asynq_core::broker::{Capabilities, Inspect, Manage, Outcome, Page};
use asynq_core::{QueueInfo, QueueName, Task, TaskId, TaskOptions, TaskState};
use std::time::SystemTime;

/// `queue_info` reports every field: the size of each state and their sum, the groups, today's
/// and total counters, the paused flag, the latency and the time of the snapshot; queues do not
/// share counters.
pub async fn case_queue_info_counts_every_state<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.activate("q", "active").await;
    t.run("q", "retry", retry(at(600), "boom", true)).await;
    t.run("q", "archived", archive("x")).await;
    t.complete("q", "completed", secs(3_600)).await;
    t.run("q", "done", Outcome::Done).await;
    t.enqueue("scheduled", &Task::new("t", ""), TaskOptions::new().queue("q").process_in(secs(120))).await.unwrap();
    for (id, group) in [("g1", "g"), ("g2", "h"), ("g3", "h")] {
        t.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").group(group)).await.unwrap();
    }
    t.advance(millis(250));
    t.plain("q", "pending").await;
    t.plain("other", "x").await;
    t.broker.pause_queue(&QueueName::from_static("q")).await.unwrap();
    t.advance(millis(1_500));

    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.pending, want.active, want.scheduled, want.retry, want.archived, want.completed) = (1, 1, 1, 1, 1, 1);
    (want.aggregating, want.groups, want.size) = (3, 2, 9);
    (want.processed, want.failed, want.processed_total, want.failed_total) = (4, 2, 4, 2);
    (want.paused, want.latency) = (true, millis(1_500));
    let info = t.info("q").await;
    // The memory estimate is backend-specific: only its being there is checked.
    assert!(info.memory_usage > 0, "memory usage of a queue with tasks: {info:?}");
    want.memory_usage = info.memory_usage;
    assert_eq!(info, want);
    let mut other = QueueInfo::empty(&QueueName::from_static("other"), t.now());
    (other.pending, other.size, other.latency) = (1, 1, millis(1_500));
    let info = t.info("other").await;
    assert!(info.memory_usage > 0, "memory usage of a queue with a task: {info:?}");
    other.memory_usage = info.memory_usage;
    assert_eq!(info, other);
}

/// Latency is the time since the next task to run became pending, to the nanosecond; zero with
/// nothing pending, and zero while a requeued task (which has no pending time) is next.
pub async fn case_queue_latency_is_the_age_of_the_next_pending_task<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    t.enqueue("s", &Task::new("t", ""), TaskOptions::new().queue("q").process_in(secs(600))).await.unwrap();
    t.advance(secs(5));
    assert_eq!(t.info("q").await.latency, secs(0));

    t.plain("q", "a").await;
    t.advance(millis(1_250));
    t.plain("q", "b").await;
    t.advance(millis(500));
    assert_eq!(t.info("q").await.latency, millis(1_750));

    let a = t.take("q", "a").await.message;
    assert_eq!(t.info("q").await.latency, millis(500));
    t.advance(secs(1));
    t.finish(&a, Outcome::Requeue).await;
    assert_eq!(t.info("q").await.latency, secs(0), "the requeued task is next");

    t.take("q", "a").await;
    assert_eq!(t.info("q").await.latency, millis(1_500));
}

/// The inspector refuses a queue that was never enqueued to with QueueNotFound, and an unknown
/// task of a known queue with TaskNotFound.
pub async fn case_unknown_queue_is_not_found<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.plain("q", "a").await;

    assert_queue_not_found(t.broker.queue_info(&QueueName::from_static("nope")).await, "nope");
    assert_queue_not_found(
        t.broker.task_info(&QueueName::from_static("nope"), &TaskId::from_static("a")).await,
        "nope",
    );
    for state in TaskState::ALL {
        assert_queue_not_found(
            t.broker.list_tasks(&QueueName::from_static("nope"), state, Page::default()).await,
            "nope",
        );
    }
    assert_task_not_found(
        t.broker.task_info(&QueueName::from_static("q"), &TaskId::from_static("nope")).await,
        "q",
        "nope",
    );
}

/// `task_info` gives the next process time by state: the current whole second for a pending
/// task, the due second for scheduled and retry tasks, none for the others.
pub async fn case_task_info_next_process_time_by_state<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.advance(millis(400));
    t.activate("q", "active").await;
    t.run("q", "retry", retry(at(75) + millis(300), "boom", true)).await;
    t.run("q", "archived", archive("x")).await;
    t.complete("q", "completed", secs(60)).await;
    let later = TaskOptions::new().queue("q").process_at(at(90) + millis(500));
    t.enqueue("scheduled", &Task::new("t", ""), later).await.unwrap();
    t.enqueue("aggregating", &Task::new("t", ""), TaskOptions::new().queue("q").group("g")).await.unwrap();
    t.plain("q", "pending").await;

    for (id, state, next) in [
        ("pending", TaskState::Pending, Some(at(0))),
        ("active", TaskState::Active, None),
        ("scheduled", TaskState::Scheduled, Some(at(90))),
        ("retry", TaskState::Retry, Some(at(75))),
        ("archived", TaskState::Archived, None),
        ("completed", TaskState::Completed, None),
        ("aggregating", TaskState::Aggregating, None),
    ] {
        let task = t.task("q", id).await;
        assert_eq!((task.id.as_str(), task.state, task.next_process_at), (id, state, next));
    }
}

/// Pending tasks are listed next-to-run first, due now (not truncated); active tasks in the
/// order they were dequeued; both paged.
pub async fn case_list_pending_and_active_in_processing_order<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    for id in ["a", "b", "c", "d", "e"] {
        t.plain("q", id).await;
    }
    t.advance(millis(600));

    let mut pages = Vec::new();
    for number in 0..4 {
        pages.push(t.list_ids("q", TaskState::Pending, 2, number).await);
    }
    assert_eq!(pages, [vec!["a", "b"], vec!["c", "d"], vec!["e"], vec![]]);
    for task in t.list("q", TaskState::Pending, 2, 0).await {
        assert_eq!((task.state, task.next_process_at), (TaskState::Pending, Some(t.now())), "{}", task.id);
    }

    t.dequeue(&["q"], 3).await;
    assert_eq!(t.list_ids("q", TaskState::Active, 2, 0).await, ["a", "b"]);
    assert_eq!(t.list_ids("q", TaskState::Active, 2, 1).await, ["c"]);
    for task in t.list("q", TaskState::Active, 10, 0).await {
        assert_eq!((task.state, task.next_process_at, task.is_orphaned), (TaskState::Active, None, false));
    }
    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["d", "e"]);
}

/// Scheduled and retry tasks are listed by due time, archived ones by archive time and completed
/// ones by expiry, ties by ID; paged; due times shown for scheduled and retry tasks only.
pub async fn case_list_sorted_states_by_score<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    for (id, due) in [("x", 30), ("y", 10), ("z", 20), ("w", 10)] {
        t.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").process_at(at(due))).await.unwrap();
    }
    t.run("q", "r1", retry(at(50), "boom", true)).await;
    t.run("q", "r2", retry(at(20), "boom", true)).await;
    t.run("q", "a1", archive("x")).await;
    t.complete("q", "c1", secs(100)).await;
    t.advance(secs(5));
    t.run("q", "a0", archive("x")).await;
    t.complete("q", "c2", secs(10)).await;

    let listed = |tasks: Vec<asynq_core::TaskInfo>| -> Vec<(String, TaskState, Option<SystemTime>)> {
        tasks.into_iter().map(|task| (task.id.into_string(), task.state, task.next_process_at)).collect()
    };
    let scheduled = |id: &str, due| (id.to_owned(), TaskState::Scheduled, Some(at(due)));
    assert_eq!(
        listed(t.list("q", TaskState::Scheduled, 3, 0).await),
        [scheduled("w", 10), scheduled("y", 10), scheduled("z", 20)]
    );
    assert_eq!(listed(t.list("q", TaskState::Scheduled, 3, 1).await), [scheduled("x", 30)]);
    assert!(t.list("q", TaskState::Scheduled, 3, 2).await.is_empty());
    let retrying = |id: &str, due| (id.to_owned(), TaskState::Retry, Some(at(due)));
    assert_eq!(listed(t.list("q", TaskState::Retry, 10, 0).await), [retrying("r2", 20), retrying("r1", 50)]);
    let kept = |id: &str, state| (id.to_owned(), state, None);
    let archived = [kept("a1", TaskState::Archived), kept("a0", TaskState::Archived)];
    assert_eq!(listed(t.list("q", TaskState::Archived, 10, 0).await), archived);
    let completed = [kept("c2", TaskState::Completed), kept("c1", TaskState::Completed)];
    assert_eq!(listed(t.list("q", TaskState::Completed, 10, 0).await), completed);
    assert_eq!(t.list_ids("q", TaskState::Completed, 1, 1).await, ["c1"]);
}

/// Aggregating tasks of every group are listed, with their group; within a group by the time
/// they were added. (The order across groups is not part of the contract.)
pub async fn case_list_aggregating_tasks<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    for (id, group) in [("b2", "b"), ("a1", "a"), ("b1", "b")] {
        t.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").group(group)).await.unwrap();
        t.advance(secs(1));
    }

    let tasks = t.list("q", TaskState::Aggregating, 10, 0).await;

    let mut listed: Vec<_> = tasks.iter().map(|task| (task.id.as_str(), task.group.as_deref(), task.state)).collect();
    let position = |id: &str| listed.iter().position(|(listed, ..)| *listed == id);
    assert!(position("b2") < position("b1"), "b2 joined group b first: {listed:?}");
    listed.sort();
    let aggregating = TaskState::Aggregating;
    assert_eq!(
        listed,
        [("a1", Some("a"), aggregating), ("b1", Some("b"), aggregating), ("b2", Some("b"), aggregating)]
    );
    assert!(tasks.iter().all(|task| task.next_process_at.is_none()));
}

/// A listed active task is orphaned once its lease is at or before now (whole seconds).
pub async fn case_active_task_past_its_lease_is_orphaned<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.activate("q", "old").await;
    t.advance(secs(10));
    t.activate("q", "new").await;
    let orphans = || async {
        let tasks = t.list("q", TaskState::Active, 10, 0).await;
        tasks.into_iter().map(|task| (task.id.into_string(), task.is_orphaned)).collect::<Vec<_>>()
    };

    t.set(at(30) - millis(1));
    assert_eq!(orphans().await, [("old".to_owned(), false), ("new".to_owned(), false)]);
    t.set(at(30) + millis(500));
    assert_eq!(orphans().await, [("old".to_owned(), true), ("new".to_owned(), false)]);
    t.set(at(40));
    assert_eq!(orphans().await, [("old".to_owned(), true), ("new".to_owned(), true)]);
}

/// Pausing a paused queue and unpausing a running one fail with FailedPrecondition and change
/// nothing.
pub async fn case_pause_twice_or_unpause_running_fails<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.plain("q", "a").await;

    assert_failed_precondition(t.broker.unpause_queue(&QueueName::from_static("q")).await, "q");
    assert!(!t.info("q").await.paused);
    t.broker.pause_queue(&QueueName::from_static("q")).await.unwrap();
    assert_failed_precondition(t.broker.pause_queue(&QueueName::from_static("q")).await, "q");
    assert!(t.info("q").await.paused);
    t.broker.unpause_queue(&QueueName::from_static("q")).await.unwrap();
    assert_failed_precondition(t.broker.unpause_queue(&QueueName::from_static("q")).await, "q");
    assert!(!t.info("q").await.paused);
}

/// Pausing a queue never enqueued to succeeds without making it known; it is paused when its
/// first task arrives.
pub async fn case_pausing_does_not_make_a_queue_known<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.broker.pause_queue(&QueueName::from_static("later")).await.unwrap();

    assert!(t.broker.queues().await.unwrap().is_empty());
    assert_queue_not_found(t.broker.queue_info(&QueueName::from_static("later")).await, "later");

    t.plain("later", "a").await;
    assert_eq!(t.broker.queues().await.unwrap(), ["later"]);
    assert!(t.info("later").await.paused);
    assert!(t.dequeue(&["later"], 1).await.is_empty());
}

/// The queue directory (which servers serving queue patterns watch) counts and lists the queues
/// an enqueue registered, and forgets a removed one.
pub async fn case_the_queue_directory_counts_and_lists_registered_queues<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let directory = std::sync::Arc::new(t.broker.clone()).as_queue_directory().expect("every broker lists its queues");
    assert_eq!(directory.registered_queue_count().await.unwrap(), 0);
    assert!(directory.registered_queues().await.unwrap().is_empty());

    t.plain("tenant:a", "x").await;
    t.plain("tenant:b", "x").await;
    t.enqueue("g", &Task::new("t", ""), TaskOptions::new().queue("tenant:c").group("g")).await.unwrap();
    t.plain("tenant:a", "y").await;
    assert_eq!(directory.registered_queue_count().await.unwrap(), 3);
    let mut queues = directory.registered_queues().await.unwrap();
    queues.sort();
    assert_eq!(queues, ["tenant:a", "tenant:b", "tenant:c"]);

    t.broker.delete_queue(&QueueName::from_static("tenant:b"), true).await.unwrap();
    assert_eq!(directory.registered_queue_count().await.unwrap(), 2);
    let mut queues = directory.registered_queues().await.unwrap();
    queues.sort();
    assert_eq!(queues, ["tenant:a", "tenant:c"]);
}
