//! What actions do beyond moving tasks: the uniqueness locks they keep or release, and the
//! workers they wake.

use super::*;

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
