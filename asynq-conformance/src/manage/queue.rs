//! Queue actions and reads: removing a queue (with force or not), listing a group, the daily
//! history and the memory estimate.

use super::*;

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
