//! Single-task actions: running, archiving and deleting one task from each state, replacing a
//! scheduled task's payload, and the refusals of a missing task or an unknown queue.

use super::*;

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
