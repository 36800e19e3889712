//! Dequeue for [`RedisBroker`]: batched fetches (`dequeue.lua`), outcomes settled one by one or in batches, leases extended, results written, and idle marks for push wake-ups (skipping quiet queues, see [`super::quiet`]).

use super::*;
use crate::pubsub::Quietness;
use asynq_core::{FailureKind, Progress, QueueName, TaskId};
use std::collections::HashMap;

impl RedisBroker {
    /// The script call that records `outcome` for the active task `msg`, and its name; it logs
    /// to the queue's event log under `events`.
    fn finish_call(
        &self,
        msg: &StoredTask,
        outcome: Outcome,
        now: SystemTime,
        events: &EventCaps,
    ) -> (ScriptCall, &'static str) {
        let (mut call, name) = self.outcome_call(msg, outcome, now);
        call.key(self.queue_keys(&msg.queue).events()).arg(events.arg(&msg.queue));
        (call, name)
    }

    /// [`RedisBroker::finish_call`] without its event log key and argument.
    fn outcome_call(&self, msg: &StoredTask, outcome: Outcome, now: SystemTime) -> (ScriptCall, &'static str) {
        let now_secs = unix_secs(now);
        let k = self.queue_keys(&msg.queue);
        let date = utc_date(now);
        let stats_expiry = now_secs + STATS_TTL_SECS;
        let id = msg.id.as_str();
        let unique = lock_of(&k, msg);
        match outcome {
            Outcome::Done => {
                let mut call = ScriptCall::new(&SCRIPTS.done);
                call.key(k.active()).key(k.lease()).key(k.task(id)).key(k.processed_on(&date)).key(k.processed_total());
                call.key(unique).arg(id).arg(stats_expiry).arg(k.finished_channel());
                (call, "done")
            }
            Outcome::Complete => {
                let mut call = ScriptCall::new(&SCRIPTS.complete);
                call.key(k.active()).key(k.lease()).key(k.completed()).key(k.task(id));
                call.key(k.processed_on(&date)).key(k.processed_total()).key(unique);
                call.arg(id)
                    .arg(stats_expiry)
                    .arg(unix_secs(msg.completed_expiry(now)))
                    .arg(encode(&msg.completed(now)));
                call.arg(k.finished_channel());
                (call, "complete")
            }
            Outcome::Retry { retry_at, error, is_failure } => {
                let mut call = ScriptCall::new(&SCRIPTS.retry);
                call.key(k.task(id)).key(k.active()).key(k.lease()).key(k.retry());
                call.key(k.processed_on(&date)).key(k.failed_on(&date)).key(k.processed_total()).key(k.failed_total());
                call.arg(id).arg(encode(&msg.failed(&error, now, is_failure))).arg(unix_secs(retry_at));
                call.arg(stats_expiry).arg(if is_failure { "1" } else { "0" });
                (call, "retry")
            }
            Outcome::Archive { error } => {
                let mut call = ScriptCall::new(&SCRIPTS.archive);
                call.key(k.task(id)).key(k.active()).key(k.lease()).key(k.archived());
                call.key(k.processed_on(&date)).key(k.failed_on(&date)).key(k.processed_total()).key(k.failed_total());
                call.arg(id).arg(encode(&msg.archived(&error, now))).arg(now_secs);
                let (cutoff, max_size) = self.archive_args(now_secs);
                call.arg(cutoff).arg(max_size).arg(stats_expiry).arg(k.task_prefix());
                call.arg(k.finished_channel());
                (call, "archive")
            }
            Outcome::Requeue | Outcome::Stalled => {
                let stalled = if outcome == Outcome::Stalled { "1" } else { "0" };
                let mut call = ScriptCall::new(&SCRIPTS.requeue);
                call.key(k.active()).key(k.lease()).key(k.pending()).key(k.task(id)).key(k.idle_workers());
                call.key(k.prioritized()).key(k.priority_sequence());
                call.arg(id).arg(k.ready_channel()).arg(stalled);
                (call, "requeue")
            }
        }
    }

    /// Records `items`' outcomes: one pipeline per queue, the successes without retention of a
    /// queue in one `done_batch.lua` call, its other outcomes in `settle_batch.lua` calls (per
    /// `SETTLE_BATCH` tasks). Without a `lease_cutoff`, a queue's only success, or its only
    /// other outcome, keeps its own script; with one (a lease score), each task is settled only
    /// while its lease is scored at or below it, which only the batch scripts check.
    pub(super) async fn settle(
        &self,
        items: Vec<(StoredTask, Outcome)>,
        lease_cutoff: Option<&str>,
    ) -> Vec<Result<()>> {
        if items.is_empty() {
            return Vec::new();
        }
        let now = self.now();
        let events = match self.event_caps_now().await {
            Ok(events) => events,
            Err(e) => return items.iter().map(|_| Err(e.duplicate())).collect(),
        };
        let mut by_queue: BTreeMap<String, Vec<(usize, StoredTask, Outcome)>> = BTreeMap::new();
        let count = items.len();
        for (index, (msg, outcome)) in items.into_iter().enumerate() {
            by_queue.entry(msg.queue.to_string()).or_default().push((index, msg, outcome));
        }
        let mut results: Vec<Option<Result<()>>> = Vec::new();
        results.resize_with(count, || None);
        let single_limit = if lease_cutoff.is_some() { 0 } else { 1 };
        let mut conn = self.conn();
        for (queue, items) in by_queue {
            let requeued = items.iter().any(|(_, _, outcome)| matches!(outcome, Outcome::Requeue | Outcome::Stalled));
            let retried = items.iter().any(|(_, _, outcome)| matches!(outcome, Outcome::Retry { .. }));
            let (members, items): (Vec<_>, Vec<_>) =
                items.into_iter().partition(|(_, msg, outcome)| crate::workflow::passes_outcome_on(msg, outcome));
            let mut calls = self.workflow_settle_calls(&queue, members, now, lease_cutoff, &events);
            let passes_on = !calls.is_empty();
            let (done, others): (Vec<_>, Vec<_>) = items.into_iter().partition(|(_, _, o)| *o == Outcome::Done);
            let mut singles = Vec::new();
            if done.len() > single_limit {
                let call = self.done_batch_call(&queue, &done, now, lease_cutoff, &events);
                calls.push(BatchCall { call, context: "done batch", items: strip(done) });
            } else {
                singles.extend(done);
            }
            if others.len() > single_limit {
                calls.extend(self.settle_batch_calls(&queue, others, now, lease_cutoff, &events));
            } else {
                singles.extend(others);
            }
            calls.extend(singles.into_iter().map(|(index, msg, outcome)| {
                let (call, context) = self.finish_call(&msg, outcome, now, &events);
                BatchCall { call, context, items: vec![(index, msg)] }
            }));
            for (index, msg, code) in run_pipeline(&mut conn, calls).await {
                results[index] = Some(code.and_then(|code| if code == 1 { Ok(()) } else { Err(not_found(&msg)) }));
            }
            if requeued {
                self.pubsub().made_pending(&queue);
            }
            // After the write, so a forwarder that looks when told finds the task.
            if retried {
                self.inner_retry_notices().notice(&queue);
            }
            if passes_on && let Ok(queue) = QueueName::new(queue) {
                self.want_relay(queue);
            }
        }
        results.into_iter().map(|r| r.expect("every item has a result")).collect()
    }

    /// The calls that settle `members`, workflow tasks of queue `queue` settling for good, each
    /// passing its outcome on (see [`crate::workflow`]): batch calls whatever their number, as
    /// only the batch scripts can be wrapped.
    fn workflow_settle_calls(
        &self,
        queue: &str,
        members: Vec<(usize, StoredTask, Outcome)>,
        now: SystemTime,
        lease_cutoff: Option<&str>,
        events: &EventCaps,
    ) -> Vec<BatchCall> {
        if members.is_empty() {
            return Vec::new();
        }
        let outcomes: HashMap<usize, (bool, String)> = members
            .iter()
            .map(|(index, _, outcome)| match outcome {
                Outcome::Archive { error } => (*index, (false, error.clone())),
                _ => (*index, (true, String::new())),
            })
            .collect();
        let (done, others): (Vec<_>, Vec<_>) = members.into_iter().partition(|(_, _, o)| *o == Outcome::Done);
        let mut inner = Vec::new();
        if !done.is_empty() {
            let call = self.done_batch_call(queue, &done, now, lease_cutoff, events);
            inner.push((true, BatchCall { call, context: "done batch", items: strip(done) }));
        }
        inner.extend(self.settle_batch_calls(queue, others, now, lease_cutoff, events).into_iter().map(|c| (false, c)));
        inner
            .into_iter()
            .map(|(done, call)| self.settle_passing_outcomes(queue, call, done, &outcomes, now, events))
            .collect()
    }

    /// One `done_batch.lua` call for the successful tasks `done`, all of queue `queue`; with a
    /// `lease_cutoff` (a lease score), each task is settled only while its lease is scored at or
    /// below it.
    fn done_batch_call(
        &self,
        queue: &str,
        done: &[(usize, StoredTask, Outcome)],
        now: SystemTime,
        lease_cutoff: Option<&str>,
        events: &EventCaps,
    ) -> ScriptCall {
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&SCRIPTS.done_batch);
        call.key(k.active())
            .key(k.lease())
            .key(k.processed_on(&utc_date(now)))
            .key(k.processed_total())
            .key(k.waiting())
            .key(k.events());
        call.arg(unix_secs(now) + STATS_TTL_SECS).arg(k.task_prefix()).arg(k.finished_channel());
        call.arg(lease_cutoff.unwrap_or(""));
        let event_cap = events.arg(queue);
        for (_, msg, _) in done {
            call.arg(msg.id.as_str()).arg(lock_of(&k, msg).unwrap_or(""));
            if !event_cap.is_empty() {
                call.arg(msg.type_name.as_str());
            }
        }
        call.arg(event_cap);
        call
    }

    /// The `settle_batch.lua` calls for `items`, every outcome but [`Outcome::Done`], all of
    /// queue `queue`, in order: up to `SETTLE_BATCH` tasks and `BATCH_BYTES` of messages
    /// per call (a call's first task is taken whatever its size). With a `lease_cutoff` (a
    /// lease score), each task is settled only while its lease is scored at or below it.
    fn settle_batch_calls(
        &self,
        queue: &str,
        items: Vec<(usize, StoredTask, Outcome)>,
        now: SystemTime,
        lease_cutoff: Option<&str>,
        events: &EventCaps,
    ) -> Vec<BatchCall> {
        let k = self.queue_keys(queue);
        let now_secs = unix_secs(now);
        let event_cap = events.arg(queue);
        let closed = |mut call: BatchCall| {
            call.call.arg(event_cap.as_str());
            call
        };
        let new_call = || {
            let mut call = ScriptCall::new(&SCRIPTS.settle_batch);
            call.key(k.active()).key(k.lease()).key(k.pending()).key(k.retry()).key(k.archived()).key(k.completed());
            call.key(k.processed_on(&utc_date(now))).key(k.failed_on(&utc_date(now)));
            call.key(k.processed_total()).key(k.failed_total()).key(k.idle_workers()).key(k.waiting());
            call.key(k.prioritized()).key(k.priority_sequence()).key(k.events());
            let (cutoff, max_size) = self.archive_args(now_secs);
            call.arg(now_secs).arg(cutoff).arg(max_size);
            call.arg(now_secs + STATS_TTL_SECS).arg(k.task_prefix()).arg(k.finished_channel()).arg(k.ready_channel());
            call.arg(lease_cutoff.unwrap_or(""));
            BatchCall { call, context: "settle batch", items: Vec::new() }
        };
        let mut calls = Vec::new();
        let mut open = new_call();
        let mut open_bytes = 0;
        for (index, msg, outcome) in items {
            let record = SettleRecord::new(&k, &msg, outcome, now);
            let len = record.message.len();
            if !open.items.is_empty() && (open.items.len() == SETTLE_BATCH || open_bytes + len > BATCH_BYTES) {
                calls.push(closed(std::mem::replace(&mut open, new_call())));
                open_bytes = 0;
            }
            open_bytes += len;
            open.call.arg(record.kind).arg(msg.id.as_str()).arg(record.message).arg(record.score).arg(record.lock);
            open.items.push((index, msg));
        }
        if !open.items.is_empty() {
            calls.push(closed(open));
        }
        calls
    }
}

/// One task's record in a `settle_batch.lua` call: what its own script (`retry.lua`,
/// `archive.lua`, `complete.lua`, `requeue.lua`) would be given.
struct SettleRecord<'a> {
    kind: &'static str,
    /// The message to store, or empty to keep the stored one.
    message: Vec<u8>,
    /// The retry time or the completed expiry, Unix seconds, or empty.
    score: String,
    /// The uniqueness lock to release, or empty.
    lock: &'a str,
}

impl<'a> SettleRecord<'a> {
    fn new(k: &QueueKeys, msg: &'a StoredTask, outcome: Outcome, now: SystemTime) -> Self {
        let (kind, message, score, lock) = match outcome {
            Outcome::Retry { retry_at, error, is_failure } => {
                let kind = if is_failure { "retry" } else { "retry_uncounted" };
                (kind, encode(&msg.failed(&error, now, is_failure)), unix_secs(retry_at).to_string(), "")
            }
            Outcome::Archive { error } => ("archive", encode(&msg.archived(&error, now)), String::new(), ""),
            Outcome::Complete => {
                let score = unix_secs(msg.completed_expiry(now)).to_string();
                ("complete", encode(&msg.completed(now)), score, lock_of(k, msg).unwrap_or(""))
            }
            Outcome::Requeue => ("requeue", Vec::new(), String::new(), ""),
            Outcome::Stalled => ("stall", Vec::new(), String::new(), ""),
            Outcome::Done => unreachable!("successes without retention go to done_batch.lua"),
        };
        Self { kind, message, score, lock }
    }
}

/// The uniqueness lock the settle scripts may release for `msg`: its `unique_key` if that names
/// one of the queue's locks. Any other key (a corrupt message's) is left alone, and logged: on a
/// Cluster it may lie in another slot, which would fail the call.
fn lock_of<'a>(k: &QueueKeys, msg: &'a StoredTask) -> Option<&'a str> {
    let unique_key = msg.unique_key.as_deref().filter(|key| !key.is_empty())?;
    let lock = k.lock(unique_key);
    if lock.is_none() {
        tracing::warn!(
            queue = %msg.queue,
            task_id = %msg.id,
            unique_key,
            "the task's unique_key is not a uniqueness lock of its queue; leaving that key alone"
        );
    }
    lock
}

/// The items without their outcomes.
fn strip(items: Vec<(usize, StoredTask, Outcome)>) -> Vec<(usize, StoredTask)> {
    items.into_iter().map(|(index, msg, _)| (index, msg)).collect()
}

fn not_found(msg: &StoredTask) -> Error {
    Error::TaskNotFound { queue: msg.queue.clone(), id: msg.id.clone() }
}

/// A task as `dequeue.lua` or `list_lease_expired.lua` found it in Redis.
#[derive(Debug)]
#[expect(clippy::large_enum_variant, reason = "short-lived, and nearly every value is a `Task`")]
pub(super) enum Stored {
    /// A message that decodes and names the task it is stored under.
    Task(StoredTask),
    /// An ID whose task hash is missing or has no `msg`.
    Missing {
        /// The ID, as stored (not necessarily UTF-8).
        id: Vec<u8>,
    },
    /// A `msg` that cannot be run: it does not decode, or it names another task.
    Corrupt {
        /// The ID, as stored (not necessarily UTF-8).
        id: Vec<u8>,
        /// What is wrong with it, for the log.
        problem: String,
    },
}

/// Reads the `(id, msg)` pairs the scripts return for `queue`, checking that each message
/// decodes and belongs to the ID and queue it is stored under: a message naming another task
/// would be settled under that task's keys and stay active here for good.
pub(super) fn read_stored(queue: &str, pairs: Vec<Value>) -> Vec<Stored> {
    let mut found = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks_exact(2) {
        let id = Vec::<u8>::from_redis_value_ref(&pair[0]).unwrap_or_default();
        let Ok(Some(bytes)) = Option::<Vec<u8>>::from_redis_value_ref(&pair[1]) else {
            found.push(Stored::Missing { id });
            continue;
        };
        found.push(match proto::TaskMessage::decode(bytes.as_slice()) {
            Err(e) => Stored::Corrupt { id, problem: format!("its msg cannot be decoded: {e}") },
            Ok(msg) if msg.id.as_bytes() != id.as_slice() || msg.queue != queue => {
                Stored::Corrupt { id, problem: format!("its msg names task {:?} of queue {:?}", msg.id, msg.queue) }
            }
            Ok(msg) => match StoredTask::try_from(msg) {
                Ok(task) => Stored::Task(task),
                Err(e) => Stored::Corrupt { id, problem: format!("its msg cannot be read: {e}") },
            },
        });
    }
    found
}

impl RedisBroker {
    /// Runs `archive_corrupt.lua` for the active task `id` of `queue`, which cannot run because
    /// of `problem`, and logs what it did as an error naming the task.
    pub(super) async fn archive_corrupt(
        &self,
        conn: &mut Connection,
        queue: &str,
        id: &[u8],
        problem: &str,
    ) -> Result<()> {
        let k = self.queue_keys(queue);
        let mut task_key = k.task_prefix().into_bytes();
        task_key.extend_from_slice(id);
        let mut call = ScriptCall::new(&SCRIPTS.archive_corrupt);
        call.key(task_key).key(k.active()).key(k.lease()).key(k.archived());
        call.arg(id).arg(unix_secs(self.now())).arg(k.finished_channel());
        let task_id = String::from_utf8_lossy(id);
        match call.run::<i64>(conn, "archive corrupt task").await? {
            1 => tracing::error!(queue = %queue, task_id = %task_id, "archived a corrupt task: {problem}"),
            2 => tracing::error!(queue = %queue, task_id = %task_id, "dropped an active task ID: {problem}"),
            // Another server settled it first.
            _ => {}
        }
        Ok(())
    }
}

impl RedisBroker {
    /// Gives back, uncharged and in the background, the tasks a fetch of `queue` whose reply was
    /// lost leased as started at `started_score` (`give_back_fetch.lua`): a worker never runs
    /// tasks whose IDs it did not learn, and left alone their expired leases would count as
    /// stalls. Tried again, on a connection that may have to reconnect first, until the leases
    /// expire at `lease_expiry`; after that the recoverer finds them, and the first stall of each
    /// is forgiven ([`FREE_STALLS`](asynq_core::FREE_STALLS)). A call that finds none looks once
    /// more a second later: a fetch sent on a connection since replaced may still wait in Redis
    /// behind it.
    pub(super) fn give_back_lost_fetch(&self, queue: &QueueName, started_score: String, lease_expiry: SystemTime) {
        let (broker, queue) = (self.clone(), queue.clone());
        tokio::spawn(async move {
            let mut pause = Duration::from_millis(50);
            let mut looked_again = false;
            loop {
                match broker.give_back_fetch(&queue, &started_score).await {
                    Ok(0) if !looked_again => {
                        looked_again = true;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Ok(0) => return,
                    Ok(given) => {
                        tracing::warn!(queue = %queue, tasks = given, "gave back the tasks of a fetch whose reply was lost");
                        return;
                    }
                    Err(e) if e.is_transient() && broker.now() + pause < lease_expiry => {
                        tracing::debug!(queue = %queue, error = %e, "cannot give back the tasks of a fetch whose reply was lost yet");
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(2));
                    }
                    Err(e) => {
                        tracing::warn!(queue = %queue, error = %e, "could not give back the tasks of a fetch whose reply was lost; they stall once their leases expire");
                        return;
                    }
                }
            }
        });
    }

    /// One `give_back_fetch.lua` call: how many tasks of `queue` leased at `started_score` it
    /// gave back.
    async fn give_back_fetch(&self, queue: &QueueName, started_score: &str) -> Result<i64> {
        let events = self.event_caps_now().await?;
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&SCRIPTS.give_back_fetch);
        call.key(k.active()).key(k.lease()).key(k.pending()).key(k.idle_workers());
        call.key(k.prioritized()).key(k.priority_sequence()).key(k.events());
        call.arg(started_score).arg(k.task_prefix()).arg(k.ready_channel()).arg(events.arg(queue));
        let given: i64 = call.run(&mut self.conn(), "give back a lost fetch").await?;
        if given > 0 {
            self.pubsub().made_pending(queue);
        }
        Ok(given)
    }
}

/// The lease score `dequeue.lua` gives a task no handler has started ([`LeaseStage::Taken`]):
/// half a second past its expiry second. Go compares lease scores only with whole-second
/// cutoffs, so to Go the lease expires a second later, within its recoverer's 30 s grace.
/// [`Dequeue::extend_leases`] at [`LeaseStage::Started`] writes the whole second, as Go does for
/// every lease.
pub(super) fn taken_lease_score(expiry_secs: i64) -> String {
    format!("{expiry_secs}.5")
}

/// How finely a fetch's token divides the second of a started lease's score: 2^20, so that every
/// score is exact in a double (and so in Redis and Lua) for Unix seconds below 2^32.
const TOKEN_STEPS: f64 = (1u64 << 20) as f64;

/// The lease score `dequeue.lua` gives the tasks a fetch starts ([`LeaseStage::Started`]): the
/// whole expiry second plus the fetch's `token`, `token / 2^20`, a fraction under a half for a
/// token in `1..2^19` (a half or more says [`LeaseStage::Taken`]). To Go, and to every lease
/// cutoff, the lease expires in its second, as Go's own; the token lets a fetch whose reply was
/// lost find its tasks (`give_back_fetch.lua`). Written as the shortest decimal of that double,
/// which Redis parses back to it.
fn started_lease_score(expiry_secs: i64, token: u32) -> String {
    debug_assert!((1..1 << 19).contains(&token));
    (expiry_secs as f64 + f64::from(token) / TOKEN_STEPS).to_string()
}

/// A fetch's token for [`started_lease_score`]: random, so that two fetches of one queue for one
/// second rarely draw the same (and when they do, `dequeue.lua` starts nothing for the second).
fn fetch_token(queue: &QueueName) -> u32 {
    #[cfg(feature = "testing")]
    if let Some(token) = crate::testing::fixed_fetch_token(queue) {
        return token;
    }
    let _ = queue;
    rand::random_range(1..1 << 19)
}

#[async_trait]
impl Dequeue for RedisBroker {
    /// Tries `queues` in order, skipping those known to be quiet (see `broker/quiet.rs`); every
    /// queue found empty or paused is marked `idle_workers` in the same script (unless this
    /// broker knows its mark to be in place), so that the next producer to make a task pending
    /// there wakes this broker's servers.
    async fn dequeue(&self, queues: &[QueueName], max: usize) -> Result<Vec<Dequeued>> {
        self.dequeue_starting(queues, max, 0).await
    }

    /// [`Dequeue::dequeue`], with the first `start` tasks leased at the whole second, as started,
    /// by the same `dequeue.lua` call.
    async fn dequeue_starting(&self, queues: &[QueueName], max: usize, start: usize) -> Result<Vec<Dequeued>> {
        let expiry = unix_secs(self.now() + LEASE_DURATION);
        let lease_expiry = from_unix_secs(expiry);
        // Without wake-ups, nothing is known to stay quiet: every queue is dequeued.
        let (watched, mut quietness) = match self.watch(queues).await {
            Some(quietness) => (true, quietness),
            None => (false, vec![Quietness::Unknown; queues.len()]),
        };
        let generation = self.pubsub().wake_generation();
        self.check_quiet(queues, &mut quietness).await;
        // Read only once a queue is to be asked: a fetch that skips every quiet queue costs none.
        let mut events: Option<EventCaps> = None;
        let mut taken = Vec::new();
        let mut conn = self.conn();
        for (queue, quiet) in queues.iter().zip(quietness) {
            let wanted = max.saturating_sub(taken.len());
            if wanted == 0 {
                break;
            }
            if quiet != Quietness::Unknown {
                continue;
            }
            let events = match &events {
                Some(events) => events,
                None => events.insert(self.event_caps_now().await?),
            };
            let k = self.queue_keys(queue);
            // A mark known to be in place is not set again (see `PubSub::mark_in_place`).
            let mark_in_place = watched && self.pubsub().mark_in_place(queue, super::quiet::QUIET_FOR);
            let mark_lifetime = if mark_in_place { String::new() } else { IDLE_MARK_SECS.to_string() };
            let mut invocation = ScriptCall::new(&SCRIPTS.dequeue);
            invocation.key(k.pending()).key(k.paused()).key(k.active()).key(k.lease()).key(k.idle_workers());
            invocation.key(k.prioritized()).key(k.events());
            invocation.arg(taken_lease_score(expiry)).arg(k.task_prefix()).arg(wanted).arg(mark_lifetime);
            // Counted over the tasks with a message, as the script counts them.
            let mut to_start = start.saturating_sub(taken.len());
            let started_score = started_lease_score(expiry, fetch_token(queue));
            invocation.arg(to_start).arg(&started_score).arg(events.arg(queue));
            let mut pairs: Vec<Value> = match invocation.run(&mut conn, "dequeue").await {
                Ok(pairs) => pairs,
                Err(e) => {
                    if to_start > 0 && e.kind() == FailureKind::OutcomeUnknown {
                        self.give_back_lost_fetch(queue, started_score, lease_expiry);
                    }
                    if taken.is_empty() {
                        return Err(e);
                    }
                    // The tasks of the queues before it are leased to this worker: run them.
                    tracing::warn!(queue = %queue, error = %e, "could not fetch from a queue; running what the others gave");
                    break;
                }
            };
            // After the pairs, "taken": the started score was held, so nothing was started.
            if pairs.len() > 1 && pairs.len() % 2 == 1 {
                pairs.pop();
                to_start = 0;
            }
            if pairs.len() == 1 {
                // `dequeue.lua`'s answer for a paused queue.
                if watched {
                    self.pubsub().found_quiet(queue, generation, true);
                    if !mark_in_place {
                        self.pubsub().marked(queue, generation);
                    }
                }
                continue;
            }
            if watched && pairs.len() / 2 < wanted {
                self.pubsub().found_quiet(queue, generation, false);
                if !mark_in_place {
                    self.pubsub().marked(queue, generation);
                }
            } else {
                self.pubsub().found_busy(queue);
            }
            for stored in read_stored(queue, pairs) {
                let stage = match &stored {
                    Stored::Missing { .. } => LeaseStage::Taken,
                    Stored::Task(_) | Stored::Corrupt { .. } if to_start > 0 => {
                        to_start -= 1;
                        LeaseStage::Started
                    }
                    _ => LeaseStage::Taken,
                };
                match stored {
                    Stored::Task(message) => taken.push(Dequeued { message, lease_expiry, stage }),
                    // `dequeue.lua` already dropped it.
                    Stored::Missing { id } => tracing::error!(
                        queue = %queue,
                        task_id = %String::from_utf8_lossy(&id),
                        "dropped a pending task ID whose task hash is missing or has no msg: it cannot run"
                    ),
                    // A failure here leaves the task active; the recoverer archives it once its
                    // lease expires.
                    Stored::Corrupt { id, problem } => {
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, &problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                problem = %problem,
                                error = %e,
                                "cannot archive a corrupt task; the recoverer will once its lease expires"
                            );
                        }
                    }
                }
            }
        }
        Ok(taken)
    }

    /// Subscribes to the queues' wake-up channels, marks those not known to be quiet as having
    /// an idle worker, and waits for a producer's wake-up; returns at once when a task is already
    /// pending. Never resolves while Redis is unreachable: the processor's poll then takes over.
    async fn wait_for_tasks(&self, queues: &[QueueName]) {
        let pubsub = self.pubsub();
        let notified = pubsub.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let Some(quietness) = self.watch(queues).await else { return std::future::pending().await };
        let generation = pubsub.wake_generation();
        let mut conn = self.conn();
        for (queue, quiet) in queues.iter().zip(quietness) {
            // A quiet queue's mark is in place: what clears it publishes a wake-up.
            if quiet != Quietness::Unknown {
                continue;
            }
            let k = self.queue_keys(queue);
            let mut call = ScriptCall::new(&SCRIPTS.mark_idle);
            call.key(k.idle_workers()).key(k.pending()).key(k.paused()).key(k.prioritized()).arg(IDLE_MARK_SECS);
            match call.run::<i64>(&mut conn, "mark idle").await {
                Ok(0) => {
                    pubsub.marked(queue, generation);
                    pubsub.found_quiet(queue, generation, false);
                }
                Ok(_) => {
                    pubsub.marked(queue, generation);
                    return;
                }
                Err(_) => return std::future::pending().await,
            }
        }
        notified.await
    }

    async fn finish(&self, msg: &StoredTask, outcome: Outcome) -> Result<()> {
        if crate::workflow::passes_outcome_on(msg, &outcome) {
            return self.settle(vec![(msg.clone(), outcome)], None).await.remove(0);
        }
        let requeued = matches!(outcome, Outcome::Requeue | Outcome::Stalled);
        let retried = matches!(outcome, Outcome::Retry { .. });
        let events = self.event_caps_now().await?;
        let (call, context) = self.finish_call(msg, outcome, self.now(), &events);
        let reply = call.run::<i64>(&mut self.conn(), context).await?;
        if requeued {
            self.pubsub().made_pending(&msg.queue);
        }
        if retried && reply == 1 {
            self.inner_retry_notices().notice(&msg.queue);
        }
        match reply {
            1 => Ok(()),
            _ => Err(not_found(msg)),
        }
    }

    /// `RedisBroker::settle` under any lease.
    async fn finish_batch(&self, items: Vec<(StoredTask, Outcome)>) -> Vec<Result<()>> {
        self.settle(items, None).await
    }

    async fn extend_leases(&self, queue: &QueueName, ids: &[TaskId]) -> Result<SystemTime> {
        let expiry = unix_secs(self.now() + LEASE_DURATION);
        if ids.is_empty() {
            return Ok(from_unix_secs(expiry));
        }
        // A whole-second score: started, as Go writes every lease.
        let mut cmd = redis::cmd("ZADD");
        cmd.arg(self.queue_keys(queue).lease()).arg("XX");
        for id in ids {
            cmd.arg(expiry).arg(id.as_str());
        }
        let _: i64 = cmd.query_async(&mut self.conn()).await.map_err(|e| broker_error("extend leases", e))?;
        Ok(from_unix_secs(expiry))
    }

    async fn write_progress(&self, queue: &QueueName, id: &TaskId, progress: &Progress) -> Result<()> {
        let events = self.event_caps_now().await?;
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&SCRIPTS.write_progress);
        call.key(k.task(id)).key(k.events());
        call.arg(crate::progress::encode(progress)).arg(id.as_str()).arg(events.arg(queue));
        match call.run::<i64>(&mut self.conn(), "write progress").await? {
            1 => Ok(()),
            _ => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
        }
    }

    async fn write_result(&self, queue: &QueueName, id: &TaskId, result: Bytes) -> Result<()> {
        check_value_len("result", result.len())?;
        let mut invocation = ScriptCall::new(&SCRIPTS.write_result);
        invocation.key(self.queue_keys(queue).task(id)).arg(result.as_ref());
        match invocation.run::<i64>(&mut self.conn(), "write result").await? {
            1 => Ok(()),
            _ => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
        }
    }
}
