//! Task priorities within a queue ([`TaskOptions::priority`]): a queue's pending tasks above the
//! default priority run first, highest first, then those of the default priority, then those
//! below it; first in first out within one priority. A task keeps its priority wherever it goes
//! (scheduled, retried, requeued, archived and run again), the inspector lists and counts
//! prioritized tasks as pending in the order they run, and operators act on them as on any
//! pending task.

use super::BrokerFactory;
use super::fixture::{Fixture, assert_duplicate, at, names, retry, secs};
use asynq_core::broker::{Dequeue, Enqueue, Forward, Inspect, Manage, Outcome, Recover};
use asynq_core::{
    Error, GroupName, Placement, QueueName, StoredTask, Task, TaskId, TaskOptions, TaskPriority, TaskSet, TaskState,
    resolve_enqueue,
};
use std::time::Duration;

/// Enqueues a pending task `id` into `q` with `priority`, its ID as payload.
async fn prioritized<B: asynq_core::Broker + Clone>(t: &Fixture<B>, id: &str, priority: i32) -> StoredTask {
    let options = TaskOptions::new().queue("q").priority(priority);
    t.enqueue(id, &Task::new("t", id.to_owned()), options).await.unwrap_or_else(|e| panic!("enqueue {id}: {e}"))
}

/// The IDs of every pending task of `q`, as the inspector lists them.
async fn pending<B: asynq_core::Broker + Clone>(t: &Fixture<B>) -> Vec<String> {
    t.all_ids("q", TaskState::Pending).await
}

/// Checks that `result` is [`Error::InvalidArgument`] for `field`.
#[track_caller]
fn assert_invalid<T: std::fmt::Debug>(result: asynq_core::Result<T>, field: &str) {
    match result {
        Err(Error::InvalidArgument { field: f, .. }) if f == field => {}
        other => panic!("expected InvalidArgument for {field:?}, got {other:?}"),
    }
}

/// Higher priorities run first, the default's tasks (Go's pending list) after those above it
/// and before those below it, and tasks of one priority in the order they were enqueued; one
/// dequeue call takes them across priorities in that order.
pub async fn case_higher_priorities_run_first_and_fifo_within_one<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    for (id, priority) in [("a", 0), ("b", -1), ("c", 5), ("d", 0), ("e", 5), ("f", 10), ("g", -10), ("h", -1)] {
        prioritized(&t, id, priority).await;
    }
    let order = ["f", "c", "e", "a", "d", "b", "h", "g"];
    assert_eq!(pending(&t).await, order, "listed in the order they run");
    assert_eq!(t.dequeue_ids(&["q"], 2).await, ["f", "c"]);
    assert_eq!(t.dequeue_ids(&["q"], 3).await, ["e", "a", "d"], "across the default's list");
    assert_eq!(t.dequeue_ids(&["q"], 10).await, ["b", "h", "g"]);
    assert!(t.dequeue_ids(&["q"], 10).await.is_empty());
}

/// Priorities order tasks within a queue only: queues are still drained in the order the
/// dequeue gives them, and a paused queue gives nothing, prioritized tasks included.
pub async fn case_priorities_order_tasks_within_a_queue_only<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    t.plain("first", "plain").await;
    prioritized(&t, "urgent", 10).await;
    assert_eq!(t.dequeue_ids(&["first", "q"], 2).await, ["plain", "urgent"]);

    prioritized(&t, "held", 3).await;
    t.broker.pause_queue(&QueueName::from_static("q")).await.unwrap();
    assert!(t.dequeue_ids(&["q"], 5).await.is_empty(), "a paused queue gives nothing");
    t.broker.unpause_queue(&QueueName::from_static("q")).await.unwrap();
    assert_eq!(t.dequeue_ids(&["q"], 5).await, ["held"]);
}

/// The inspector shows prioritized tasks as pending: counted in the queue's pending tasks and
/// size, listed in the order they run a page at a time, each with its priority and due now; the
/// latency is the longest wait of the next task of each priority.
pub async fn case_prioritized_tasks_are_listed_and_counted_as_pending<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    prioritized(&t, "low", -3).await;
    t.advance(secs(2));
    prioritized(&t, "plain", 0).await;
    t.advance(secs(1));
    prioritized(&t, "high", 4).await;
    t.advance(secs(1));

    let info = t.info("q").await;
    assert_eq!((info.pending, info.size), (3, 3));
    assert_eq!(info.latency, secs(4), "the low task has waited longest");
    assert_eq!(t.list_ids("q", TaskState::Pending, 2, 0).await, ["high", "plain"]);
    assert_eq!(t.list_ids("q", TaskState::Pending, 2, 1).await, ["low"]);
    let listed = t.list("q", TaskState::Pending, 10, 0).await;
    let priorities: Vec<i8> = listed.iter().map(|task| task.priority.get()).collect();
    assert_eq!(priorities, [4, 0, -3]);
    assert!(listed.iter().all(|task| task.state == TaskState::Pending && task.next_process_at == Some(t.now())));

    let high = t.task("q", "high").await;
    assert_eq!((high.state, high.priority.get(), high.next_process_at), (TaskState::Pending, 4, Some(t.now())));
    assert_eq!(t.task("q", "plain").await.priority, TaskPriority::DEFAULT);

    t.take("q", "high").await;
    t.take("q", "plain").await;
    assert_eq!(t.info("q").await.latency, secs(4));
    let taken = t.take("q", "low").await;
    assert_eq!(t.task("q", "low").await.priority.get(), -3, "an active task shows its priority");
    t.finish(&taken.message, Outcome::Done).await;
    assert_eq!((t.info("q").await.pending, t.info("q").await.latency), (0, Duration::ZERO));
}

/// A task keeps its priority: scheduled, it joins its priority when due; retried, it comes back
/// to it; requeued (a shutdown) or forgiven a stall, it is next among its priority.
pub async fn case_a_task_keeps_its_priority_through_scheduling_retries_and_requeues<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let options = TaskOptions::new().queue("q").priority(2).process_in(secs(10));
    t.enqueue("later", &Task::new("t", ""), options).await.unwrap();
    assert_eq!(t.task("q", "later").await.priority.get(), 2, "a scheduled task shows its priority");
    t.plain("q", "plain").await;
    prioritized(&t, "early", 2).await;
    t.set(at(10));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);
    assert_eq!(pending(&t).await, ["early", "later", "plain"], "due, it waits among its priority");

    let early = t.take("q", "early").await.message;
    t.finish(&early, retry(at(20), "boom", true)).await;
    t.set(at(20));
    t.broker.forward_ready(&names(&["q"])).await.unwrap();
    assert_eq!(pending(&t).await, ["later", "early", "plain"], "retried, it comes back to its priority");

    let later = t.take("q", "later").await.message;
    t.finish(&later, Outcome::Requeue).await;
    assert_eq!(pending(&t).await, ["later", "early", "plain"], "requeued, it is next among its priority");
    let later = t.take("q", "later").await.message;
    t.finish(&later, Outcome::Stalled).await;
    assert_eq!(pending(&t).await, ["later", "early", "plain"], "and so after a stall");
    assert!(t.all_ids("q", TaskState::Pending).await.len() == 3 && t.info("q").await.active == 0);
}

/// A task whose worker died is recovered to its priority: retried and, when due, back among
/// its priority, or requeued at its front when no handler started it.
pub async fn case_a_recovered_task_keeps_its_priority<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    prioritized(&t, "a", 7).await;
    prioritized(&t, "b", 7).await;
    let a = t.take("q", "a").await.message;
    t.set(at(100));
    let cutoff = t.now();
    let expired = t.broker.list_lease_expired(&names(&["q"]), cutoff).await.unwrap();
    assert_eq!(expired.len(), 1);
    let results = t.broker.recover(vec![(a, retry(at(100), "lease expired", true))], cutoff).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    t.broker.forward_ready(&names(&["q"])).await.unwrap();
    prioritized(&t, "c", 0).await;
    assert_eq!(pending(&t).await, ["b", "a", "c"]);
    assert_eq!(t.task("q", "a").await.priority.get(), 7);
}

/// Operators act on a prioritized pending task as on any pending task: archive it, run it again
/// (back to its priority), delete it; the bulk actions on pending tasks take prioritized ones
/// too, and a forced queue removal deletes them.
pub async fn case_operators_act_on_prioritized_tasks<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let (q, id) = (QueueName::from_static("q"), |id: &'static str| TaskId::from_static(id));
    for (task, priority) in [("a", 3), ("b", 0), ("c", -2), ("d", 3)] {
        prioritized(&t, task, priority).await;
    }
    t.broker.archive_task(&q, &id("a")).await.unwrap();
    assert_eq!(pending(&t).await, ["d", "b", "c"]);
    let archived = t.task("q", "a").await;
    assert_eq!((archived.state, archived.priority.get()), (TaskState::Archived, 3));
    assert!(matches!(t.broker.run_task(&q, &id("d")).await, Err(Error::FailedPrecondition(_))), "already pending");
    t.broker.run_task(&q, &id("a")).await.unwrap();
    assert_eq!(pending(&t).await, ["d", "a", "b", "c"], "run again, it goes back to its priority");
    t.broker.delete_task(&q, &id("d")).await.unwrap();
    assert_eq!(pending(&t).await, ["a", "b", "c"]);

    assert_eq!(t.broker.archive_all(&q, &TaskSet::State(TaskState::Pending)).await.unwrap(), 3);
    assert!(pending(&t).await.is_empty() && t.info("q").await.archived == 3);
    assert_eq!(t.broker.run_all(&q, &TaskSet::State(TaskState::Archived)).await.unwrap(), 3);
    assert_eq!(pending(&t).await, ["a", "b", "c"], "each back to its priority");
    assert_eq!(t.broker.delete_all(&q, &TaskSet::State(TaskState::Pending)).await.unwrap(), 3);
    assert_eq!(t.info("q").await.pending, 0);

    prioritized(&t, "e", 9).await;
    assert!(matches!(t.broker.delete_queue(&q, false).await, Err(Error::QueueNotEmpty { .. })));
    t.broker.delete_queue(&q, true).await.unwrap();
    assert!(t.broker.task_info(&q, &id("e")).await.is_err(), "a forced removal deletes prioritized tasks");
    assert!(t.dequeue_ids(&["q"], 5).await.is_empty());
}

/// A unique task may have a priority (its lock works as for any task); a debounced one joins its
/// priority when due; a waiting task replaced by its ID takes the new priority; a grouped task
/// with a priority is refused with a typed error and nothing is written, whether the request
/// was resolved or made by hand.
pub async fn case_priority_with_unique_debounced_replaced_and_grouped_tasks<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let unique = TaskOptions::new().queue("q").priority(4).unique(secs(60));
    t.enqueue("u1", &Task::new("u", "same"), unique.clone()).await.unwrap();
    assert_duplicate(t.enqueue("u2", &Task::new("u", "same"), unique).await, "q", "u");
    let debounced = TaskOptions::new().queue("q").priority(6).debounce("k", secs(5));
    t.enqueue("d1", &Task::new("t", "v1"), debounced.clone()).await.unwrap();
    t.enqueue("d2", &Task::new("t", "v2"), debounced).await.unwrap();
    t.plain("q", "plain").await;
    t.set(at(5));
    t.broker.forward_ready(&names(&["q"])).await.unwrap();
    assert_eq!(pending(&t).await, ["d2", "u1", "plain"]);

    let task = Task::new("t", "replaced");
    let options = TaskOptions::new().queue("q").task_id("plain").priority(8);
    let mut request = resolve_enqueue(&task, &options, t.now(), || unreachable!()).unwrap();
    request.replace = Some(asynq_core::Replace::Waiting);
    t.broker.enqueue(request).await.unwrap();
    assert_eq!(pending(&t).await, ["plain", "d2", "u1"], "replaced, it takes the new priority");
    assert_eq!(t.task("q", "plain").await.priority.get(), 8);
    let options = TaskOptions::new().queue("q").task_id("d2");
    let mut request = resolve_enqueue(&Task::new("t", "v3"), &options, t.now(), || unreachable!()).unwrap();
    request.replace = Some(asynq_core::Replace::Waiting);
    t.broker.enqueue(request).await.unwrap();
    assert_eq!(pending(&t).await, ["plain", "u1", "d2"], "and back to the default");
    assert_eq!(t.task("q", "d2").await.priority, TaskPriority::DEFAULT);

    let before = t.snapshot("q").await;
    let grouped = TaskOptions::new().queue("q").group("g").priority(1);
    assert_invalid(t.enqueue("g1", &Task::new("t", ""), grouped).await, "priority");
    let mut request =
        resolve_enqueue(&Task::new("t", ""), &TaskOptions::new().queue("q").task_id("g2"), t.now(), || unreachable!())
            .unwrap();
    request.placement = Placement::Grouped { group: GroupName::from_static("g") };
    request.priority = TaskPriority::MAX;
    assert_invalid(t.broker.enqueue(request.clone()).await, "priority");
    let results = t.broker.enqueue_batch(vec![request]).await;
    assert!(matches!(results[..], [Err(Error::InvalidArgument { field: "priority", .. })]), "{results:?}");
    assert_eq!(t.snapshot("q").await, before, "nothing written");
}

/// A batch keeps each task's priority, and stores them as the same enqueues one by one would.
pub async fn case_enqueue_batch_keeps_priorities<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let tasks = [("a", 0), ("b", 2), ("c", -1), ("d", 2), ("e", 0), ("f", 9)];
    let requests = tasks
        .iter()
        .map(|(id, priority)| {
            let options = TaskOptions::new().queue("q").task_id(*id).priority(*priority);
            resolve_enqueue(&Task::new("t", ""), &options, t.now(), || unreachable!()).unwrap()
        })
        .collect();
    let results = t.broker.enqueue_batch(requests).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(pending(&t).await, ["f", "b", "d", "a", "e", "c"]);
    assert_eq!(t.task("q", "d").await.priority.get(), 2);
    assert_eq!(t.dequeue_ids(&["q"], 10).await, ["f", "b", "d", "a", "e", "c"]);
}

/// A worker waiting on a queue is woken by a prioritized task made pending, whether enqueued or
/// forwarded, as by any other.
pub async fn case_a_prioritized_task_wakes_a_waiting_worker<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    const DELIVERY: Duration = Duration::from_secs(5);
    let t = Fixture::new(factory).await;
    let wait = |broker: &F::Broker| {
        let broker = broker.clone();
        tokio::spawn(async move { broker.wait_for_tasks(&names(&["q"])).await })
    };
    // A fetch that comes up short marks the queue idle, as a server's does before it waits.
    assert!(t.dequeue_ids(&["q"], 5).await.is_empty());
    let waiter = wait(&t.broker);
    prioritized(&t, "a", 5).await;
    tokio::time::timeout(DELIVERY, waiter).await.expect("no wake-up after a prioritized enqueue").unwrap();
    assert_eq!(t.dequeue_ids(&["q"], 5).await, ["a"]);

    let options = TaskOptions::new().queue("q").priority(-5).process_in(secs(10));
    t.enqueue("b", &Task::new("t", ""), options).await.unwrap();
    let waiter = wait(&t.broker);
    t.set(at(10));
    t.broker.forward_ready(&names(&["q"])).await.unwrap();
    tokio::time::timeout(DELIVERY, waiter).await.expect("no wake-up after a prioritized forward").unwrap();
    assert_eq!(t.dequeue_ids(&["q"], 5).await, ["b"]);
}
