//! Leases on active tasks: the heartbeater's extension, which touches only tasks still active
//! in the given queue, the stage a lease records (taken, or started by a handler), and the
//! recoverer's query for leases that ran out by a cutoff.

use super::BrokerFactory;
use super::fixture::{Fixture, at, ids, millis, names, secs};
use asynq_core::broker::WorkerBroker;
use asynq_core::broker::{Dequeue, ExpiredLease, LeaseStage, Outcome, Recover};
use asynq_core::{Error, QueueName, StoredTask, TaskState};
use std::time::SystemTime;

fn taken(message: &StoredTask) -> ExpiredLease {
    ExpiredLease { message: message.clone(), stage: LeaseStage::Taken, stalls: 0 }
}

fn started(message: &StoredTask) -> ExpiredLease {
    ExpiredLease { message: message.clone(), stage: LeaseStage::Started, stalls: 0 }
}

/// `extend_leases` moves the lease of each listed active task of the queue to now + 30 s (whole
/// seconds) and returns it; pending, unknown and other queues' IDs are ignored. At
/// `LeaseStage::Started` it marks the tasks it extends as started.
pub async fn case_extend_leases_moves_only_active_ids<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let a = t.activate("q", "a").await;
    let b = t.activate("q", "b").await;
    let o = t.activate("other", "o").await;
    t.plain("q", "p").await;
    t.advance(millis(10_600));

    let ids = ids(&["a", "p", "gone", "o"]);
    assert_eq!(t.broker.extend_leases(&QueueName::from_static("q"), &ids).await.unwrap(), at(40));
    assert_eq!(t.broker.extend_leases(&QueueName::from_static("unknown"), &ids).await.unwrap(), at(40));

    let broker = &t.broker;
    let expired =
        |cutoff: SystemTime| async move { broker.list_lease_expired(&names(&["q", "other"]), cutoff).await.unwrap() };
    assert_eq!(expired(at(39)).await, [taken(&b), taken(&o)]);
    assert_eq!(expired(at(40)).await, [taken(&b), started(&a), taken(&o)]);
    let info = t.info("q").await;
    assert_eq!((info.active, info.pending), (2, 1));
    assert_eq!(t.task("q", "p").await.state, TaskState::Pending);
}

/// `list_lease_expired` returns exactly the active tasks whose lease is at or before the cutoff
/// (in whole seconds), queue by queue in the given order and by lease within a queue (within
/// one second, started tasks first), and moves nothing.
pub async fn case_list_lease_expired_returns_exactly_the_expired<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let a = t.activate("q", "a").await;
    t.advance(secs(10));
    let b = t.activate("q", "b").await;
    t.advance(secs(10));
    let c = t.activate("other", "c").await;
    t.plain("q", "pending").await;

    let broker = &t.broker;
    let expired = |queues: &'static [&'static str], cutoff: SystemTime| async move {
        broker.list_lease_expired(&names(queues), cutoff).await.unwrap()
    };
    let none: [ExpiredLease; 0] = [];
    let (a, b, c) = (taken(&a), taken(&b), taken(&c));
    assert_eq!(expired(&["q", "other"], at(30) - millis(1)).await, none);
    assert_eq!(expired(&["q", "other"], at(30)).await, std::slice::from_ref(&a));
    assert_eq!(expired(&["q", "other"], at(40) + millis(500)).await, [a.clone(), b.clone()]);
    assert_eq!(expired(&["q", "other"], at(50)).await, [a.clone(), b.clone(), c.clone()]);
    assert_eq!(expired(&["other", "q"], at(50)).await, [c, a, b]);
    assert_eq!(expired(&["unknown"], at(1_000)).await, none);
    assert_eq!(expired(&[], at(1_000)).await, none);
    assert_eq!(t.info("q").await.active, 2);
}

/// A lease records whether a handler started its task: a dequeued task is taken; extending its
/// lease starts it, and a started task stays started; a task dequeued again after a requeue is
/// taken again.
pub async fn case_lease_stage_is_recorded_and_never_regresses<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let a = t.activate("q", "a").await;
    let b = t.activate("q", "b").await;
    let queues = names(&["q"]);

    assert_eq!(t.broker.extend_leases(&QueueName::from_static("q"), &ids(&["a"])).await.unwrap(), at(30));
    t.advance(secs(5));
    assert_eq!(t.broker.extend_leases(&QueueName::from_static("q"), &ids(&["a"])).await.unwrap(), at(35));
    assert_eq!(t.broker.list_lease_expired(&queues, at(35)).await.unwrap(), [taken(&b), started(&a)]);

    t.finish(&a, Outcome::Requeue).await;
    let again = t.take("q", "a").await.message;
    assert_eq!(t.broker.list_lease_expired(&queues, at(35)).await.unwrap(), [taken(&b), taken(&again)]);
    assert_eq!(t.task("q", "a").await.state, TaskState::Active);
}

/// `Outcome::Stalled` gives a started task whose lease expired back to the front of pending,
/// charged nothing (its retry count and the failed counters stay), and counts the stall: its
/// next expired lease reports one stall more.
pub async fn case_a_stall_requeues_uncharged_and_is_counted<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let a = t.activate("q", "a").await;
    t.plain("q", "b").await;
    t.broker.extend_leases(&QueueName::from_static("q"), &ids(&["a"])).await.unwrap();
    let queues = names(&["q"]);
    assert_eq!(t.broker.list_lease_expired(&queues, at(30)).await.unwrap(), [started(&a)]);

    t.finish(&a, Outcome::Stalled).await;
    let info = t.info("q").await;
    assert_eq!((info.active, info.pending, info.failed, info.failed_total), (0, 2, 0, 0));
    let again = t.take("q", "a").await.message;
    assert_eq!(again.retried, 0, "a stall uses no retry");
    t.broker.extend_leases(&QueueName::from_static("q"), &ids(&["a"])).await.unwrap();
    let stalled_once = ExpiredLease { message: again, stage: LeaseStage::Started, stalls: 1 };
    assert_eq!(t.broker.list_lease_expired(&queues, at(30)).await.unwrap(), [stalled_once]);
}

/// `recover` settles a listed task only while its lease is still one that expired by the
/// cutoff: a task another server recovered, and a worker took again, since the listing is left
/// alone (`TaskNotFound`, nothing written: it stays active under its new lease, its stall
/// uncounted), while the batch's other tasks are settled.
pub async fn case_recover_leaves_a_task_leased_again_since_it_was_listed<F: BrokerFactory<Broker: WorkerBroker>>(
    factory: &F,
) {
    let t = Fixture::worker(factory).await;
    let a = t.activate("q", "a").await;
    let b = t.activate("q", "b").await;
    t.broker.extend_leases(&QueueName::from_static("q"), &ids(&["a"])).await.unwrap();
    t.advance(secs(61));
    let queues = names(&["q"]);
    let cutoff = at(31);
    assert_eq!(t.broker.list_lease_expired(&queues, cutoff).await.unwrap(), [started(&a), taken(&b)]);

    // Another server recovers `a` first, and a worker takes it again.
    let first = t.broker.recover(vec![(a.clone(), Outcome::Stalled)], cutoff).await;
    assert!(matches!(first[..], [Ok(())]), "{first:?}");
    let again = t.take("q", "a").await;
    assert_eq!(again.lease_expiry, at(91));

    let retry = Outcome::Retry { retry_at: at(100), error: "lease expired".into(), is_failure: true };
    let late = t.broker.recover(vec![(a.clone(), Outcome::Stalled), (b.clone(), retry)], cutoff).await;
    assert!(matches!(late[..], [Err(Error::TaskNotFound { .. }), Ok(())]), "{late:?}");
    assert_eq!(t.task("q", "a").await.state, TaskState::Active);
    assert_eq!(t.task("q", "b").await.state, TaskState::Retry);
    let info = t.info("q").await;
    assert_eq!((info.active, info.pending, info.retry), (1, 0, 1));
    let stalled_once = ExpiredLease { message: again.message, stage: LeaseStage::Taken, stalls: 1 };
    assert_eq!(t.broker.list_lease_expired(&queues, at(91)).await.unwrap(), [stalled_once]);
}

/// `recover` settles successes too, under the same rule: a worker writing its outcome again
/// (its first attempt's reply lost) applies it while the task holds the worker's own lease, and
/// leaves alone a task that went back to pending and was taken by another worker since.
pub async fn case_recover_settles_only_under_the_lease_it_names<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let a = t.activate("q", "a").await;
    t.broker.extend_leases(&QueueName::from_static("q"), &ids(&["a"])).await.unwrap();
    let own = t.broker.recover(vec![(a, Outcome::Done)], at(30)).await;
    assert!(matches!(own[..], [Ok(())]), "{own:?}");
    assert_eq!(t.info("q").await.processed, 1);

    let b = t.activate("q", "b").await;
    t.finish(&b, Outcome::Requeue).await; // The first attempt at the write, which ran.
    t.advance(secs(2));
    assert_eq!(t.take("q", "b").await.lease_expiry, at(32));
    let late = t.broker.recover(vec![(b, Outcome::Done)], at(30)).await;
    assert!(matches!(late[..], [Err(Error::TaskNotFound { .. })]), "{late:?}");
    assert_eq!(t.task("q", "b").await.state, TaskState::Active);
    assert_eq!(t.info("q").await.processed, 1);
}

/// `dequeue_starting` takes tasks as `dequeue` does, and each task's reported stage is the one
/// its lease records: a backend that records the first `start` tasks started in the same step
/// says so (and the rest are taken), one that does not reports every task taken. The tasks
/// come next to run first, across queues in the given order, and no task beyond `start` is
/// ever reported started.
pub async fn case_dequeue_starting_reports_the_stage_its_leases_record<F: BrokerFactory<Broker: WorkerBroker>>(
    factory: &F,
) {
    let t = Fixture::worker(factory).await;
    for id in ["a", "b", "c"] {
        t.plain("q", id).await;
    }
    t.plain("r", "d").await;
    let taken_now = t.broker.dequeue_starting(&names(&["q", "r"]), 4, 2).await.unwrap();
    let order: Vec<&str> = taken_now.iter().map(|task| task.message.id.as_str()).collect();
    assert_eq!(order, ["a", "b", "c", "d"]);
    let stages: Vec<LeaseStage> = taken_now.iter().map(|task| task.stage).collect();
    assert!(
        stages == [LeaseStage::Taken; 4]
            || stages == [LeaseStage::Started, LeaseStage::Started, LeaseStage::Taken, LeaseStage::Taken],
        "{stages:?}"
    );
    assert!(taken_now.iter().all(|task| task.lease_expiry == at(30)));
    let expired = t.broker.list_lease_expired(&names(&["q", "r"]), at(31)).await.unwrap();
    for task in &taken_now {
        let listed = expired.iter().find(|lease| lease.message.id == task.message.id).expect("every lease expires");
        assert_eq!(listed.stage, task.stage, "task {}", task.message.id);
    }
    assert!(t.broker.dequeue_starting(&names(&["q", "r"]), 4, 4).await.unwrap().is_empty());
}
