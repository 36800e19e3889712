//! How an attempt ends: each outcome of `finish`, the state and message it leaves and the
//! counters it moves, the refusal to finish a task that is not active, and messages whose
//! fields are corrupt but decode (at the ends of their integer types, or naming a `unique_key`
//! that is no lock), which settle without overflowing or failing their batch.

use super::BrokerFactory;
use super::fixture::{Fixture, archive, assert_task_not_found, at, every_outcome, millis, names, retry, secs};
use asynq_core::broker::WorkerBroker;
use asynq_core::broker::{Dequeue, Forward, Inspect, Janitor, Outcome};
use asynq_core::time::{MAX_UNIX_SECS, MIN_UNIX_SECS, from_unix_secs};
use asynq_core::{MAX_DURATION, QueueInfo, QueueName, StoredTask, Task, TaskId, TaskInfo, TaskOptions, TaskState};
use bytes::Bytes;
use std::time::{Duration, SystemTime};

/// The task as stored after a failure at `failed_at` (a whole second).
fn failed(msg: &StoredTask, error: &str, failed_at: SystemTime, retried: u32) -> StoredTask {
    StoredTask { last_error: Some(error.to_owned()), last_failed_at: Some(failed_at), retried, ..msg.clone() }
}

/// Done deletes the task and counts it as processed (today and in total), not as failed.
pub async fn case_done_deletes_and_counts_processed<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let msg = t.activate("q", "a").await;
    t.plain("q", "b").await;

    t.finish(&msg, Outcome::Done).await;

    assert_task_not_found(t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("a")).await, "q", "a");
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.pending, want.size, want.processed, want.processed_total) = (1, 1, 1, 1);
    assert_eq!(t.counts("q").await, want);
}

/// Complete keeps the task as completed with `completed_at` (whole seconds) and the result
/// written before finishing, counts it as processed, and keeps it until completion + retention.
pub async fn case_complete_keeps_task_and_result_for_the_retention<F: BrokerFactory<Broker: WorkerBroker>>(
    factory: &F,
) {
    let t = Fixture::worker(factory).await;
    let options = TaskOptions::new().queue("q").retention(secs(3_600));
    t.enqueue("a", &Task::new("answer", "p"), options).await.unwrap();
    let msg = t.take("q", "a").await.message;
    t.broker
        .write_result(&QueueName::from_static("q"), &TaskId::from_static("a"), Bytes::from_static(b"42"))
        .await
        .unwrap();
    t.set(at(2) + millis(300));

    t.finish(&msg, Outcome::Complete).await;

    let done = StoredTask { completed_at: Some(at(2)), ..msg };
    let result = Some(Bytes::from_static(b"42"));
    assert_eq!(t.task("q", "a").await, TaskInfo::new(&done, TaskState::Completed, None, result));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.completed, want.size, want.processed, want.processed_total) = (1, 1, 1, 1);
    assert_eq!(t.counts("q").await, want);
    assert_eq!(t.all_ids("q", TaskState::Completed).await, ["a"]);

    t.set(at(2 + 3_600) - millis(1));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 0);
    t.set(at(2 + 3_600));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 1);
    assert_task_not_found(t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("a")).await, "q", "a");
}

/// A failing retry moves the task to retry at `retry_at` (whole seconds), with `retried` up by
/// one and the error and failure time recorded, and counts it as processed and failed. The
/// worker that takes it again gets that message.
pub async fn case_retry_as_failure_counts_and_records_the_error<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let msg = t.activate("q", "a").await;
    t.advance(millis(1_500));

    t.finish(&msg, retry(at(60) + millis(900), "boom", true)).await;

    let stored = failed(&msg, "boom", at(1), 1);
    assert_eq!(t.task("q", "a").await, TaskInfo::new(&stored, TaskState::Retry, Some(at(60)), None));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.retry, want.size, want.processed, want.failed, want.processed_total, want.failed_total) = (1, 1, 1, 1, 1, 1);
    assert_eq!(t.counts("q").await, want);
    assert!(t.dequeue(&["q"], 1).await.is_empty());

    t.set(at(60));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);
    assert_eq!(t.take("q", "a").await.message, stored);
}

/// A retry that is not a failure records the error and failure time but leaves `retried` and
/// every counter alone.
pub async fn case_retry_not_as_failure_counts_nothing<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let msg = t.activate("q", "a").await;
    t.advance(secs(3));

    t.finish(&msg, retry(at(30), "rate limited", false)).await;

    let stored = failed(&msg, "rate limited", at(3), 0);
    assert_eq!(t.task("q", "a").await, TaskInfo::new(&stored, TaskState::Retry, Some(at(30)), None));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.retry, want.size) = (1, 1);
    assert_eq!(t.counts("q").await, want);
}

/// Archive keeps `retried` as it was, records the error and failure time, and counts the task
/// as processed and failed.
pub async fn case_archive_keeps_retried_and_counts_a_failure<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    t.run("q", "a", retry(at(10), "boom", true)).await;
    t.set(at(10));
    t.broker.forward_ready(&names(&["q"])).await.unwrap();
    let msg = t.take("q", "a").await.message;
    assert_eq!(msg.retried, 1);
    t.advance(millis(500));

    t.finish(&msg, archive("gave up")).await;

    let stored = failed(&msg, "gave up", at(10), 1);
    assert_eq!(t.task("q", "a").await, TaskInfo::new(&stored, TaskState::Archived, None, None));
    let mut want = QueueInfo::empty(&QueueName::from_static("q"), t.now());
    (want.archived, want.size, want.processed, want.failed, want.processed_total, want.failed_total) =
        (1, 1, 2, 2, 2, 2);
    assert_eq!(t.counts("q").await, want);
    assert_eq!(t.all_ids("q", TaskState::Archived).await, ["a"]);
}

/// Requeue puts the task back as the next to run, ahead of older pending tasks, unchanged and
/// counted nowhere.
pub async fn case_requeue_goes_to_the_front<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let msg = t.activate("q", "a").await;
    t.plain("q", "b").await;
    t.plain("q", "c").await;
    t.advance(secs(5));

    t.finish(&msg, Outcome::Requeue).await;

    assert_eq!(t.task("q", "a").await, TaskInfo::new(&msg, TaskState::Pending, Some(at(5)), None));
    let info = t.info("q").await;
    assert_eq!((info.pending, info.active, info.size, info.processed_total, info.failed_total), (3, 0, 3, 0, 0));
    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["a", "b", "c"]);
    assert_eq!(t.dequeue_ids(&["q"], 3).await, ["a", "b", "c"]);
}

/// No outcome can be recorded for a task that is not active (pending, scheduled, unknown, or in
/// another queue): each fails with TaskNotFound and writes nothing.
pub async fn case_finishing_a_task_that_is_not_active_fails<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let active = t.activate("q", "active").await;
    let pending = t.plain("q", "pending").await;
    let later = TaskOptions::new().queue("q").process_in(secs(60));
    let scheduled = t.enqueue("scheduled", &Task::new("t", ""), later).await.unwrap();
    let unknown = StoredTask { id: TaskId::from_static("unknown"), ..active.clone() };
    let elsewhere = StoredTask { queue: QueueName::from_static("elsewhere"), ..active.clone() };
    let before = t.snapshot("q").await;

    for msg in [&pending, &scheduled, &unknown, &elsewhere] {
        for outcome in every_outcome(at(30)) {
            assert_task_not_found(t.broker.finish(msg, outcome).await, &msg.queue, &msg.id);
        }
    }

    assert_eq!(t.snapshot("q").await, before);
}

/// Once an outcome is recorded the task is no longer active: recording any second outcome
/// fails with TaskNotFound and changes nothing.
pub async fn case_finishing_twice_fails<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    for (i, first) in every_outcome(at(30)).into_iter().enumerate() {
        let id = format!("t{i}");
        let options = TaskOptions::new().queue("q").retention(Duration::from_secs(60));
        t.enqueue(&id, &Task::new("t", id.clone()), options).await.unwrap();
        let msg = t.take("q", &id).await.message;
        t.finish(&msg, first).await;
        let before = t.snapshot("q").await;

        for again in every_outcome(at(30)) {
            assert_task_not_found(t.broker.finish(&msg, again).await, "q", &id);
        }

        assert_eq!(t.snapshot("q").await, before, "after finishing {id} a second time");
        // A requeued task is pending again; take it out of the way of the next round.
        if t.info("q").await.pending > 0 {
            t.take("q", &id).await;
        }
    }
}

/// A batch settles each task exactly as one `finish` would, across queues and outcomes, and
/// reports a task that is not active on its own.
pub async fn case_finish_batch_settles_each_task_as_finish_does<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let unique = TaskOptions::new().queue("q").unique(secs(600));
    t.enqueue("u", &Task::new("report", "nov"), unique.clone()).await.unwrap();
    let u = t.take("q", "u").await.message;
    let (a, b, c) = (t.activate("q", "a").await, t.activate("q", "b").await, t.activate("q", "c").await);
    let (d, e) = (t.activate("other", "d").await, t.activate("other", "e").await);
    let pending = t.plain("q", "p").await;

    let results = t
        .broker
        .finish_batch(vec![
            (u.clone(), Outcome::Done),
            (a.clone(), Outcome::Done),
            (b.clone(), retry(at(60), "boom", true)),
            (pending.clone(), Outcome::Done),
            (d.clone(), Outcome::Done),
            (e.clone(), archive("gave up")),
            (c.clone(), Outcome::Requeue),
        ])
        .await;

    assert_eq!(results.iter().map(Result::is_ok).collect::<Vec<_>>(), [true, true, true, false, true, true, true]);
    assert_task_not_found(results.into_iter().nth(3).unwrap(), "q", "p");
    assert_task_not_found(t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("u")).await, "q", "u");
    assert_task_not_found(t.store.task_info(&QueueName::from_static("q"), &TaskId::from_static("a")).await, "q", "a");
    assert_eq!(t.task("q", "b").await.state, TaskState::Retry);
    assert_eq!(t.task("other", "e").await.state, TaskState::Archived);
    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["c", "p"]);
    let q = t.info("q").await;
    assert_eq!((q.processed_total, q.failed_total, q.active), (3, 1, 0));
    let other = t.info("other").await;
    assert_eq!((other.processed_total, other.failed_total, other.active), (2, 1, 0));
    // The lock of the successful unique task is released.
    t.enqueue("u2", &Task::new("report", "nov"), unique).await.unwrap();
}

/// A batch of every outcome across two queues, some of its tasks no longer active, leaves
/// exactly what the same finishes one by one leave: the same replies (not-found for a task
/// whose lease is gone, or that is pending), tasks, sets and their order, counters today and in
/// total, uniqueness locks (released by successes only) and stall counts.
pub async fn case_finish_batch_of_every_outcome_equals_one_by_one<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    use asynq_core::broker::Recover;
    use asynq_core::{Error, Result};
    let t = Fixture::worker(factory).await;
    let unique = |queue: &str| TaskOptions::new().queue(queue).unique(secs(600));
    // Active tasks of `main` and `other`, one more finished already (its lease is gone) and a
    // pending one; returns the items of the batch, in the batch's order.
    let setup = async |main: &str, other: &str| -> Vec<(StoredTask, Outcome)> {
        let mut active = Vec::new();
        for id in ["d1", "d2", "r1", "r2", "r3", "a1", "a2", "rq", "st", "gone"] {
            active.push(t.activate(main, id).await);
        }
        let options = unique(main).retention(secs(120));
        t.enqueue("c", &Task::new("report", "complete"), options).await.unwrap();
        active.push(t.take(main, "c").await.message);
        t.enqueue("ru", &Task::new("report", "retry"), unique(main)).await.unwrap();
        active.push(t.take(main, "ru").await.message);
        for id in ["od", "or", "oa", "orq"] {
            active.push(t.activate(other, id).await);
        }
        let pending = t.plain(main, "p").await;
        let gone = active.iter().find(|m| m.id == "gone").unwrap().clone();
        t.finish(&gone, Outcome::Done).await;
        let msg = |id: &str| active.iter().find(|m| m.id == id).unwrap().clone();
        vec![
            (msg("r1"), retry(at(60) + millis(700), "boom", true)),
            (msg("od"), Outcome::Done),
            (msg("a1"), archive("gave up")),
            (msg("d1"), Outcome::Done),
            (msg("or"), retry(at(30), "boom", true)),
            (msg("rq"), Outcome::Requeue),
            (gone, retry(at(60), "late", true)),
            (msg("r2"), retry(at(30), "again", true)),
            (msg("c"), Outcome::Complete),
            (msg("st"), Outcome::Stalled),
            (msg("oa"), archive("no")),
            (msg("r3"), retry(at(90), "rate limited", false)),
            (pending, archive("not active")),
            (msg("ru"), retry(at(45), "locked", true)),
            (msg("a2"), archive("gave up too")),
            (msg("orq"), Outcome::Requeue),
            (msg("d2"), Outcome::Done),
        ]
    };
    let kind = |result: &Result<()>| match result {
        Ok(()) => "ok".to_owned(),
        Err(Error::TaskNotFound { id, .. }) => format!("not found {id}"),
        Err(Error::DuplicateTask { type_name, .. }) => format!("duplicate {type_name}"),
        Err(other) => format!("{other:?}"),
    };
    let single_items = setup("qa", "oa").await;
    let batch_items = setup("qb", "ob").await;
    t.advance(millis(1_250));

    let mut one_by_one = Vec::new();
    for (msg, outcome) in single_items {
        one_by_one.push(kind(&t.broker.finish(&msg, outcome).await));
    }
    let results = t.broker.finish_batch(batch_items).await;
    let batch: Vec<String> = results.iter().map(kind).collect();

    let mut want = vec!["ok"; 17];
    (want[6], want[12]) = ("not found gone", "not found p");
    assert_eq!(one_by_one, want);
    assert_eq!(batch, want);
    let mut results = results.into_iter();
    assert_task_not_found(results.nth(6).unwrap(), "qb", "gone");
    assert_task_not_found(results.nth(5).unwrap(), "qb", "p");

    // Everything the inspector shows, the queue's name aside, and what a second enqueue of each
    // unique task says of its lock.
    let view = async |queue: &str| {
        let mut snapshot = t.snapshot(queue).await;
        let anonymous = QueueName::from_static("_");
        (snapshot.info.queue, snapshot.info.memory_usage) = (anonymous.clone(), 0);
        snapshot.tasks.iter_mut().for_each(|task| task.queue = anonymous.clone());
        let mut history = t.store.history(&QueueName::new(queue).unwrap(), 2).await.unwrap();
        history.iter_mut().for_each(|day| day.queue = anonymous.clone());
        let mut locks = Vec::new();
        for (id, payload) in [("c2", "complete"), ("ru2", "retry")] {
            locks.push(kind(&t.enqueue(id, &Task::new("report", payload), unique(queue)).await.map(drop)));
        }
        (snapshot, history, locks)
    };
    for (single, batched) in [("qa", "qb"), ("oa", "ob")] {
        let got = view(batched).await;
        assert_eq!(got, view(single).await, "{batched} against {single}");
        let (snapshot, _, locks) = got;
        assert_eq!(snapshot.info.active, 0, "{batched}");
        if batched == "qb" {
            // Three counted retries and two archives failed; they, two successes, one completed
            // task and `gone` were processed.
            assert_eq!((snapshot.info.processed, snapshot.info.failed), (9, 5));
            assert_eq!((snapshot.info.processed_total, snapshot.info.failed_total), (9, 5));
            assert_eq!(locks, ["ok", "duplicate report"], "released by the success, kept by the retry");
            assert_eq!(t.all_ids("qb", TaskState::Pending).await, ["st", "rq", "p", "c2"]);
            assert_eq!(t.all_ids("qb", TaskState::Retry).await, ["r2", "ru", "r1", "r3"]);
            assert_eq!(t.all_ids("qb", TaskState::Archived).await, ["a1", "a2"]);
            assert_eq!(t.all_ids("qb", TaskState::Completed).await, ["c"]);
        }
    }

    // The stall counts, read back from the leases of the requeued tasks taken again.
    let stalls = async |queues: &[&str]| {
        t.dequeue(queues, 100).await;
        let expired = t.broker.list_lease_expired(&names(queues), at(3_600)).await.unwrap();
        let mut stalls: Vec<(String, u32)> =
            expired.into_iter().map(|e| (e.message.id.into_string(), e.stalls)).collect();
        stalls.sort();
        stalls
    };
    let batched = stalls(&["qb", "ob"]).await;
    assert_eq!(batched, stalls(&["qa", "oa"]).await);
    assert!(batched.contains(&("st".to_owned(), 1)) && batched.contains(&("rq".to_owned(), 0)), "{batched:?}");
}

/// The longest retention (Go's longest duration, in whole seconds, which a corrupt message's
/// longer one is read as) keeps the completed task that long instead of overflowing into an
/// expiry in the past: the janitor leaves it alone until then, and it reads back as it is.
pub async fn case_the_longest_retention_keeps_a_task_that_long<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let longest = MAX_DURATION.as_secs();
    for id in ["a", "b"] {
        let options = TaskOptions::new().queue("q").retention(secs(60));
        t.enqueue(id, &Task::new("t", id.to_owned()), options).await.unwrap();
        let msg = StoredTask { retention: Some(secs(longest)), ..t.take("q", id).await.message };
        t.finish(&msg, Outcome::Complete).await;
        let info = t.task("q", id).await;
        assert_eq!((info.state, info.retention), (TaskState::Completed, Some(secs(longest))), "{id}");
        assert_eq!(info.completed_at, Some(at(0)), "{id}");
    }

    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 0);
    t.set(at(longest as i64) - secs(1));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 0);
    assert_eq!(t.info("q").await.completed, 2);
    t.set(at(longest as i64));
    assert_eq!(t.broker.delete_expired_completed(&QueueName::from_static("q"), 100).await.unwrap(), 2);
}

/// Tasks whose timeout, deadline, retry counts and failure and completion times are at the ends
/// of what a task holds (Go's longest duration, the years 1 and 9999, Go's `int32` counts: what
/// a corrupt message is read as) settle like any other: retried, archived and completed with
/// those fields kept as they are, and read back without overflowing.
pub async fn case_extreme_task_fields_settle_and_read_back<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let corrupt = |msg: StoredTask| StoredTask {
        timeout: Some(secs(MAX_DURATION.as_secs())),
        deadline: Some(from_unix_secs(MIN_UNIX_SECS)),
        max_retry: i32::MAX as u32,
        retried: i32::MAX as u32 - 1,
        last_failed_at: Some(from_unix_secs(MIN_UNIX_SECS)),
        completed_at: Some(from_unix_secs(MAX_UNIX_SECS)),
        ..msg
    };
    let retried = corrupt(t.activate("q", "retried").await);
    let archived = corrupt(t.activate("q", "archived").await);
    let completed = corrupt(t.activate("q", "completed").await);
    let results = t
        .broker
        .finish_batch(vec![
            (retried.clone(), retry(at(60), "boom", true)),
            (archived.clone(), archive("gave up")),
            (StoredTask { retention: Some(secs(60)), ..completed.clone() }, Outcome::Complete),
        ])
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");

    let info = t.task("q", "retried").await;
    assert_eq!(
        info,
        TaskInfo::new(&failed(&retried, "boom", at(0), i32::MAX as u32), TaskState::Retry, Some(at(60)), None)
    );
    let info = t.task("q", "archived").await;
    assert_eq!(
        info,
        TaskInfo::new(&failed(&archived, "gave up", at(0), i32::MAX as u32 - 1), TaskState::Archived, None, None)
    );
    let info = t.task("q", "completed").await;
    assert_eq!(info.state, TaskState::Completed);
    assert_eq!((info.completed_at, info.deadline), (Some(at(0)), Some(from_unix_secs(MIN_UNIX_SECS))));
    let q = t.info("q").await;
    assert_eq!((q.retry, q.archived, q.completed, q.active), (1, 1, 1, 0));
}

/// A success whose message names a `unique_key` that is no lock of the broker's (a corrupt
/// message's) settles like any other, alone or in a batch, and every other task of the batch
/// settles too: the unique task's own lock is released.
pub async fn case_a_unique_key_that_is_no_lock_fails_nothing<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let unique = TaskOptions::new().queue("q").unique(secs(600));
    t.enqueue("u", &Task::new("report", "nov"), unique.clone()).await.unwrap();
    let u = t.take("q", "u").await.message;
    let no_lock = |msg: StoredTask, key: &str| StoredTask { unique_key: Some(key.to_owned()), ..msg };
    let a = no_lock(t.activate("q", "a").await, "not a lock");
    let b = no_lock(t.activate("q", "b").await, "q");
    let c = no_lock(t.activate("q", "c").await, u.unique_key.as_deref().expect("a unique task has a lock"));
    let alone = no_lock(t.activate("q", "alone").await, "not a lock either");
    let kept = no_lock(t.activate("q", "kept").await, "no lock");

    t.finish(&alone, Outcome::Done).await;
    t.finish(&StoredTask { retention: Some(secs(60)), ..kept }, Outcome::Complete).await;
    let results = t
        .broker
        .finish_batch(vec![(a, Outcome::Done), (c, Outcome::Done), (b, Outcome::Done), (u, Outcome::Done)])
        .await;

    assert!(results.iter().all(Result::is_ok), "{results:?}");
    for id in ["a", "b", "c", "u", "alone"] {
        assert_task_not_found(
            t.store.task_info(&QueueName::from_static("q"), &TaskId::new(id).unwrap()).await,
            "q",
            id,
        );
    }
    assert_eq!(t.task("q", "kept").await.state, TaskState::Completed);
    let q = t.info("q").await;
    assert_eq!((q.processed_total, q.active, q.completed), (6, 0, 1));
    // `c` named the lock `u` holds, but did not hold it; `u` released it.
    t.enqueue("u2", &Task::new("report", "nov"), unique).await.unwrap();
}
