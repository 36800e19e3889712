//! Storing new tasks: where each placement puts a task and how it is counted, how enqueueing
//! makes a queue known, and how an ID conflict is refused without writing anything.

use super::BrokerFactory;
use super::fixture::{Fixture, archive, assert_id_conflict, assert_queue_not_found, at, millis, names, retry, secs};
use asynq_core::broker::{Forward, Inspect, Outcome};
use asynq_core::{QueueInfo, QueueName, Task, TaskInfo, TaskOptions, TaskState};

/// A task ready now is pending: counted, listed, and due at the current whole second.
pub async fn case_enqueue_pending_task<F: BrokerFactory<Broker: asynq_core::broker::Enqueue>>(factory: &F) {
    let t = Fixture::producer(factory).await;
    t.advance(millis(400));

    let msg = t.produce("a", &Task::new("email", "to:ann"), TaskOptions::new().queue("q")).await.unwrap();

    assert_eq!(t.task("q", "a").await, TaskInfo::new(&msg, TaskState::Pending, Some(at(0)), None));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.pending, want.size) = (1, 1);
    assert_eq!(t.counts("q").await, want);
    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["a"]);
}

/// A task due later is scheduled at its process time in whole seconds, and not dequeued.
pub async fn case_enqueue_scheduled_task<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.advance(millis(700));

    let options = TaskOptions::new().queue("q").process_in(secs(90));
    let msg = t.enqueue("s", &Task::new("report", "daily"), options).await.unwrap();

    assert_eq!(t.task("q", "s").await, TaskInfo::new(&msg, TaskState::Scheduled, Some(at(90)), None));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.scheduled, want.size) = (1, 1);
    assert_eq!(t.counts("q").await, want);
    assert_eq!(t.all_ids("q", TaskState::Scheduled).await, ["s"]);
    assert!(t.dequeue(&["q"], 10).await.is_empty());
}

/// A grouped task ready now aggregates in its group: counted per group, never dequeued, never
/// forwarded.
pub async fn case_enqueue_grouped_task<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let grouped = |group: &str| TaskOptions::new().queue("q").group(group);
    let g1 = t.enqueue("g1", &Task::new("digest", "1"), grouped("g")).await.unwrap();
    t.enqueue("g2", &Task::new("digest", "2"), grouped("g")).await.unwrap();
    t.enqueue("h1", &Task::new("digest", "3"), grouped("h")).await.unwrap();

    let info = t.task("q", "g1").await;
    assert_eq!(info, TaskInfo::new(&g1, TaskState::Aggregating, None, None));
    assert_eq!(info.group.as_deref(), Some("g"));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.aggregating, want.groups, want.size) = (3, 2, 3);
    assert_eq!(t.counts("q").await, want);

    t.advance(secs(86_400));
    assert!(t.dequeue(&["q"], 10).await.is_empty());
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 0);
    assert_eq!(t.info("q").await.aggregating, 3);
}

/// A queue is known (listed, sorted, and open to the inspector) from its first enqueue, whatever
/// the placement.
pub async fn case_enqueue_makes_the_queue_known<F: BrokerFactory<Broker: asynq_core::broker::Enqueue>>(factory: &F) {
    let t = Fixture::producer(factory).await;
    assert!(t.store.queues().await.unwrap().is_empty(), "a fresh broker knows no queue");
    assert_queue_not_found(t.store.queue_info(&QueueName::from_static("b")).await, "b");

    t.produce_plain("b", "x").await;
    t.produce("x", &Task::new("t", ""), TaskOptions::new().queue("c").process_in(secs(60))).await.unwrap();
    t.produce("x", &Task::new("t", ""), TaskOptions::new().queue("a").group("g")).await.unwrap();

    assert_eq!(t.store.queues().await.unwrap(), ["a", "b", "c"]);
    let sizes = [t.info("a").await.aggregating, t.info("b").await.pending, t.info("c").await.scheduled];
    assert_eq!(sizes, [1, 1, 1]);
}

/// A task whose ID exists in its queue is refused, whatever its placement, and nothing is
/// written; the same ID in another queue is no conflict.
pub async fn case_task_id_conflict_writes_nothing<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let original = t.plain("q", "a").await;
    t.enqueue("s", &Task::new("t", "s"), TaskOptions::new().queue("q").process_in(secs(60))).await.unwrap();
    t.enqueue("g", &Task::new("t", "g"), TaskOptions::new().queue("q").group("g")).await.unwrap();
    let before = t.snapshot("q").await;

    let other = Task::new("other", "x");
    for options in [
        TaskOptions::new(),
        TaskOptions::new().process_in(secs(60)),
        TaskOptions::new().group("g"),
        TaskOptions::new().group("new-group"),
    ] {
        assert_id_conflict(t.enqueue("a", &other, options.queue("q")).await, "q", "a");
    }

    assert_eq!(t.snapshot("q").await, before);
    t.enqueue("a", &other, TaskOptions::new().queue("elsewhere")).await.unwrap();
    assert_eq!(t.take("q", "a").await.message, original);
}

/// An ID conflicts with a stored task in any state (it is the task record that counts); a
/// task deleted on success frees its ID.
pub async fn case_task_id_conflicts_with_a_task_in_any_state<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    t.run("q", "done", Outcome::Done).await;
    t.complete("q", "completed", secs(3_600)).await;
    t.run("q", "archived", archive("x")).await;
    t.run("q", "retry", retry(at(600), "x", true)).await;
    t.activate("q", "active").await;
    t.enqueue("scheduled", &Task::new("t", ""), TaskOptions::new().queue("q").process_in(secs(60))).await.unwrap();
    t.enqueue("aggregating", &Task::new("t", ""), TaskOptions::new().queue("q").group("g")).await.unwrap();
    t.plain("q", "pending").await;
    let before = t.snapshot("q").await;

    for id in ["completed", "archived", "retry", "active", "scheduled", "aggregating", "pending"] {
        assert_id_conflict(t.enqueue(id, &Task::new("t", "new"), TaskOptions::new().queue("q")).await, "q", id);
    }

    assert_eq!(t.snapshot("q").await, before);
    t.enqueue("done", &Task::new("t", "new"), TaskOptions::new().queue("q")).await.unwrap();
    assert_eq!(t.info("q").await.pending, 2);
}

/// A batch stores each task as a single enqueue would and reports each one on its own: a
/// conflicting ID or a held lock fails that task only.
pub async fn case_enqueue_batch_reports_each_task<F: BrokerFactory<Broker: asynq_core::broker::Enqueue>>(factory: &F) {
    use asynq_core::broker::Enqueue;
    let t = Fixture::producer(factory).await;
    t.produce("taken", &Task::new("email", "0"), TaskOptions::new().queue("q")).await.unwrap();
    let unique = TaskOptions::new().queue("q").unique(secs(60));
    t.produce("first", &Task::new("report", "nov"), unique.clone()).await.unwrap();

    let batch = [
        ("a", Task::new("email", "1"), TaskOptions::new().queue("q")),
        ("taken", Task::new("email", "2"), TaskOptions::new().queue("q")),
        ("s", Task::new("report", "dec"), TaskOptions::new().queue("q").process_in(secs(30))),
        ("dup", Task::new("report", "nov"), unique),
        ("other", Task::new("email", "3"), TaskOptions::new().queue("other")),
        ("a", Task::new("email", "again"), TaskOptions::new().queue("q")),
    ];
    let requests = batch
        .iter()
        .map(|(id, task, options)| {
            asynq_core::resolve_enqueue(task, &options.clone().task_id(*id), t.now(), || unreachable!()).unwrap()
        })
        .collect();
    let mut results = t.broker.enqueue_batch(requests).await.into_iter();

    assert!(results.next().unwrap().is_ok());
    assert_id_conflict(results.next().unwrap(), "q", "taken");
    assert!(results.next().unwrap().is_ok());
    super::fixture::assert_duplicate(results.next().unwrap(), "q", "report");
    assert!(results.next().unwrap().is_ok());
    // The same ID twice in one batch: the second conflicts with the first.
    assert_id_conflict(results.next().unwrap(), "q", "a");
    assert!(results.next().is_none());

    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["taken", "first", "a"]);
    assert_eq!(t.all_ids("q", TaskState::Scheduled).await, ["s"]);
    assert_eq!(t.all_ids("other", TaskState::Pending).await, ["other"]);
    assert_eq!(t.task("q", "taken").await.payload, "0");
    assert_eq!(t.task("q", "a").await.payload, "1");

    // A batch none of whose IDs exist yet may still name one twice.
    let requests = [("b", "1"), ("c", "2"), ("b", "3")]
        .iter()
        .map(|(id, payload)| {
            let options = TaskOptions::new().queue("q").task_id(*id);
            asynq_core::resolve_enqueue(&Task::new("email", *payload), &options, t.now(), || unreachable!()).unwrap()
        })
        .collect();
    let results = t.broker.enqueue_batch(requests).await;
    assert!(results[0].is_ok() && results[1].is_ok(), "{results:?}");
    assert_id_conflict(results.into_iter().nth(2).unwrap(), "q", "b");
    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["taken", "first", "a", "b", "c"]);
    assert_eq!(t.task("q", "b").await.payload, "1");
}

/// A batch of every placement, unique or not, stores what the same enqueues one by one store
/// and answers each task as they answer: duplicate IDs within the batch and IDs already taken
/// conflict, held locks refuse, a lock taken just before an ID conflict is kept, the first of
/// two tasks with one ID wins, and the pending order is the request order.
pub async fn case_enqueue_batch_of_every_placement_equals_one_by_one<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    use asynq_core::broker::{Aggregate, Enqueue, GroupInfo};
    use asynq_core::{EnqueueRequest, Error, Result};
    let t = Fixture::new(factory).await;
    let (pending, scheduled) = (TaskOptions::new(), TaskOptions::new().process_in(secs(30)));
    let unique = |options: TaskOptions| options.unique(secs(600));
    let requests = |queue: &str| -> Vec<EnqueueRequest> {
        [
            ("p1", "email", "1", pending.clone()),
            ("s1", "report", "dec", scheduled.clone()),
            ("g1", "digest", "1", TaskOptions::new().group("g")),
            ("up", "lock", "up", unique(pending.clone())),
            ("us", "lock", "us", unique(scheduled.clone())),
            ("ug", "lock", "ug", unique(TaskOptions::new().group("h"))),
            ("taken", "email", "2", scheduled.clone()),
            ("held", "lock", "held", unique(pending.clone())),
            ("p1", "email", "again", scheduled.clone()),
            // Takes its lock, then conflicts: the lock stays and refuses the next one.
            ("s1", "lock", "kept", unique(pending.clone())),
            ("kept", "lock", "kept", unique(TaskOptions::new().group("g"))),
            ("up", "lock", "other", unique(scheduled.clone())),
            ("late", "lock", "up", unique(TaskOptions::new().group("g"))),
            ("g2", "digest", "2", TaskOptions::new().group("g")),
            ("p2", "email", "3", pending.clone()),
            ("p0", "email", "4", unique(pending.clone())),
        ]
        .into_iter()
        .map(|(id, type_name, payload, options)| {
            let options = options.queue(queue).task_id(id);
            asynq_core::resolve_enqueue(&Task::new(type_name, payload), &options, t.now(), || unreachable!()).unwrap()
        })
        .collect()
    };
    // What a result says, with the queue left out.
    let kind = |result: &Result<()>| match result {
        Ok(()) => "ok".to_owned(),
        Err(Error::TaskIdConflict { id, .. }) => format!("conflict {id}"),
        Err(Error::DuplicateTask { type_name, .. }) => format!("duplicate {type_name}"),
        Err(other) => format!("{other:?}"),
    };
    for queue in ["qa", "qb"] {
        t.enqueue("taken", &Task::new("email", "0"), TaskOptions::new().queue(queue)).await.unwrap();
        t.enqueue("first", &Task::new("lock", "held"), unique(TaskOptions::new().queue(queue))).await.unwrap();
    }

    let mut one_by_one = Vec::new();
    for request in requests("qa") {
        one_by_one.push(kind(&t.broker.enqueue(request).await));
    }
    let batch: Vec<String> = t.broker.enqueue_batch(requests("qb")).await.iter().map(kind).collect();

    let want = [
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "conflict taken",
        "duplicate lock",
        "conflict p1",
        "conflict s1",
        "duplicate lock",
        "conflict up",
        "duplicate lock",
        "ok",
        "ok",
        "ok",
    ];
    assert_eq!(one_by_one, want);
    assert_eq!(batch, want);
    // Everything the inspector shows, the queue's name aside.
    let view = async |queue: &str| {
        let mut snapshot = t.snapshot(queue).await;
        let anonymous = QueueName::from_static("_");
        (snapshot.info.queue, snapshot.info.memory_usage) = (anonymous.clone(), 0);
        snapshot.tasks.iter_mut().for_each(|task| task.queue = anonymous.clone());
        let groups = t.broker.groups(&QueueName::new(queue).unwrap()).await.unwrap();
        let groups: Vec<_> =
            groups.into_iter().map(|GroupInfo { group, size, .. }| (group.into_string(), size)).collect();
        (snapshot, groups)
    };
    let (snapshot, groups) = view("qb").await;
    assert_eq!((snapshot, groups.clone()), view("qa").await);
    assert_eq!(t.all_ids("qb", TaskState::Pending).await, ["taken", "first", "p1", "up", "p2", "p0"]);
    assert_eq!(t.all_ids("qb", TaskState::Scheduled).await, ["s1", "us"]);
    assert_eq!(groups, [("g".to_owned(), 2), ("h".to_owned(), 1)]);
    assert_eq!(t.task("qb", "p1").await.payload, "1");
    // Every lock taken is still held, the two taken just before an ID conflict included.
    for queue in ["qa", "qb"] {
        for payload in ["held", "up", "us", "ug", "kept", "other"] {
            let options = unique(TaskOptions::new().queue(queue));
            super::fixture::assert_duplicate(
                t.enqueue("new", &Task::new("lock", payload), options).await,
                queue,
                "lock",
            );
        }
    }
}
