//! Forwarding: due scheduled and retry tasks become pending in due order, with the time they
//! became pending recorded; tasks not yet due, and aggregating ones, stay where they are.

use super::BrokerFactory;
use super::fixture::{Fixture, at, millis, names, retry, secs};
use asynq_core::broker::WorkerBroker;
use asynq_core::broker::{Forward, Inspect};
use asynq_core::{QueueInfo, QueueName, Task, TaskInfo, TaskOptions, TaskState};

/// Due tasks move to pending, scheduled ones by due time and then retry ones by due time (Go
/// forwards the scheduled set before the retry set); `forward_ready` returns how many moved; a
/// forwarded task is pending from the forward on, so the queue's latency counts from then.
pub async fn case_forward_moves_due_tasks_to_pending<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    for (id, due) in [("s30", 30), ("s10", 10), ("s50", 50)] {
        t.enqueue(id, &Task::new("t", id), TaskOptions::new().queue("q").process_at(at(due))).await.unwrap();
    }
    t.run("q", "r5", retry(at(5), "boom", true)).await;
    t.run("q", "r40", retry(at(40), "boom", true)).await;
    let queues = names(&["q", "unknown"]);
    t.set(at(4));
    assert_eq!(t.broker.forward_ready(&queues).await.unwrap().moved, 0);

    t.set(at(30) + millis(250));
    assert_eq!(t.broker.forward_ready(&queues).await.unwrap().moved, 3);

    let info = t.info("q").await;
    assert_eq!((info.pending, info.scheduled, info.retry, info.latency), (3, 1, 1, secs(0)));
    assert_eq!(t.task("q", "s10").await.state, TaskState::Pending);
    assert_eq!(t.task("q", "s50").await.next_process_at, Some(at(50)));
    assert_eq!(t.task("q", "r40").await.next_process_at, Some(at(40)));
    t.advance(millis(2_500));
    assert_eq!(t.info("q").await.latency, millis(2_500));
    assert_eq!(t.broker.forward_ready(&queues).await.unwrap().moved, 0);
    assert_eq!(t.dequeue_ids(&["q"], 10).await, ["s10", "s30", "r5"]);
}

/// Go moves at most 100 tasks per script call and repeats until none is due: one
/// `forward_ready` moves them all, in due order across the batches.
pub async fn case_forward_moves_more_than_one_batch<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    const N: i64 = 250;
    // Due times run opposite to the IDs, so due order is neither enqueue nor ID order.
    for i in 0..N {
        let id = format!("s{i:03}");
        let options = TaskOptions::new().queue("q").process_at(at(1 + N - i));
        t.enqueue(&id, &Task::new("t", id.clone()), options).await.unwrap();
    }
    t.set(at(1 + N));

    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, N as usize);

    let want: Vec<String> = (0..N).rev().map(|i| format!("s{i:03}")).collect();
    assert_eq!(t.dequeue_ids(&["q"], N as usize).await, want);
}

/// Pausing stops dequeues, not forwarding: a due task of a paused queue becomes pending and
/// waits there.
pub async fn case_forward_ignores_pause<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    t.enqueue("s", &Task::new("t", ""), TaskOptions::new().queue("q").process_in(secs(10))).await.unwrap();
    t.store.pause_queue(&QueueName::from_static("q")).await.unwrap();
    t.advance(secs(10));

    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);

    let info = t.info("q").await;
    assert_eq!((info.paused, info.pending, info.scheduled), (true, 1, 0));
    assert!(t.dequeue(&["q"], 1).await.is_empty());
}

/// A task enqueued with both a group and a later process time is scheduled, and when due
/// becomes an ordinary pending task, not an aggregating one (Go quirk: the schedule script does
/// not store the group); it keeps its group name in the message.
pub async fn case_scheduled_task_with_a_group_becomes_plain_pending<F: BrokerFactory<Broker: WorkerBroker>>(
    factory: &F,
) {
    let t = Fixture::worker(factory).await;
    let options = TaskOptions::new().queue("q").group("g").process_in(secs(10));
    let msg = t.enqueue("a", &Task::new("t", "p"), options).await.unwrap();
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.scheduled, want.size) = (1, 1);
    assert_eq!(t.counts("q").await, want);
    t.advance(secs(10));

    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);

    let task = t.task("q", "a").await;
    assert_eq!(task, TaskInfo::new(&msg, TaskState::Pending, Some(at(10)), None));
    assert_eq!(task.group.as_deref(), Some("g"));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.pending, want.size) = (1, 1);
    assert_eq!(t.counts("q").await, want);
    assert_eq!(t.take("q", "a").await.message, msg);
}

/// How long a due notice may take to arrive (Redis carries it over pub/sub).
const NOTICE_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The next notice `notices` gives that names `queue`, within [`NOTICE_WITHIN`].
async fn notice_of(notices: &mut futures::stream::BoxStream<'static, String>, queue: &str) {
    use futures::StreamExt;
    let heard = tokio::time::timeout(NOTICE_WITHIN, async {
        while let Some(named) = notices.next().await {
            if named == queue {
                return;
            }
        }
        panic!("the notices ended before naming {queue:?}");
    });
    heard.await.unwrap_or_else(|_| panic!("no due notice for {queue:?} within {NOTICE_WITHIN:?}"));
}

/// A forward says when the earliest task left scheduled or waiting to retry falls due (its
/// whole second), or that none is left; due notices name the queue of a task scheduled to fall
/// due before any other of its queue, and of a task set to retry by this broker.
pub async fn case_forward_tells_when_the_next_task_falls_due_and_notices_name_new_ones<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let queues = names(&["q", "other"]);
    assert_eq!(t.broker.forward_ready(&queues).await.unwrap().next_due, None, "nothing is scheduled");

    let mut notices = t.broker.due_notices().await.unwrap();
    t.enqueue("s50", &Task::new("t", "a"), TaskOptions::new().queue("q").process_at(at(50) + millis(700)))
        .await
        .unwrap();
    notice_of(&mut notices, "q").await;
    t.enqueue("s20", &Task::new("t", "b"), TaskOptions::new().queue("q").process_at(at(20))).await.unwrap();
    notice_of(&mut notices, "q").await;
    let forwarded = t.broker.forward_ready(&queues).await.unwrap();
    assert_eq!((forwarded.moved, forwarded.next_due), (0, Some(at(20))));

    t.run("q", "r10", retry(at(10), "boom", true)).await;
    notice_of(&mut notices, "q").await;
    assert_eq!(t.broker.forward_ready(&queues).await.unwrap().next_due, Some(at(10)));

    t.set(at(20));
    let forwarded = t.broker.forward_ready(&queues).await.unwrap();
    assert_eq!((forwarded.moved, forwarded.next_due), (2, Some(at(50))), "the score is the due time's whole second");
    t.set(at(51));
    assert_eq!(t.broker.forward_ready(&queues).await.unwrap(), asynq_core::broker::Forwarded::new(1, None));
}
