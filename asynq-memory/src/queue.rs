//! One queue, kept the way Go asynq keeps it in Redis, and the moves of its tasks.
//!
//! The containers mirror the Redis keys: a pending and an active list, sorted sets scored in
//! Unix seconds (lease, scheduled, retry, archived, completed and one per group), and one record
//! per task standing for the task hash. Each method does what the Go scripts cited in its
//! documentation (by section of the wire-format spec) do, under the broker's lock.
//!
//! Every state change goes through the core state machine ([`transition`]), so this broker
//! cannot make a move the model forbids. A single-task operation refuses such a move with
//! [`Error::FailedPrecondition`] and writes nothing. A batch operation (dequeue, forward, expire)
//! instead drops the container entry and moves on: an ID whose record is missing or in another
//! state is a stale entry, which no operation here leaves behind.

mod aggregate;
mod inspect;
mod manage;
mod pending;
mod steps;
mod workflow;

pub(crate) use workflow::Passed;

use crate::stats::Stats;
use crate::zset::ZSet;
use asynq_core::broker::{Dequeued, ExpiredLease, LeaseStage, Outcome};
use asynq_core::events::EventKind;
use asynq_core::state::{Event, Next, transition};
use asynq_core::time::{from_unix_secs, unix_nanos, unix_secs};
use asynq_core::{
    ArchiveLimits, ArchiveOutlook, EnqueueRequest, Error, GroupName, LEASE_DURATION, Placement, Progress, Result,
    StoredTask, TaskId, TaskInfo, TaskPriority, TaskState,
};
use bytes::Bytes;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, SystemTime};

/// A task's record: the fields of Go's task hash `asynq:{q}:t:<id>`.
#[derive(Debug)]
struct TaskRecord {
    msg: StoredTask,
    state: TaskState,
    /// Unix nanoseconds when it became pending; set only by enqueue and forward.
    pending_since: Option<i64>,
    /// The lock key, recorded for pending and scheduled unique tasks only (as Go does).
    unique_key: Option<String>,
    /// The group, recorded only when the task is enqueued into one (not when scheduled), and
    /// dropped when its handler parks it (Redis's `park.lua`).
    group: Option<GroupName>,
    result: Option<Bytes>,
    /// Its handler's last progress report in the current (or last) attempt.
    progress: Option<Progress>,
    /// How many times a started lease of it expired and was forgiven ([`Outcome::Stalled`]).
    stalls: u32,
    /// The debounce key it was enqueued with, if any (Redis's `debounce` hash field).
    debounce: Option<String>,
    /// Its priority, among which tasks it waits whenever it is pending (Redis's `priority`
    /// hash field).
    priority: TaskPriority,
    /// Its durable steps' records (Redis's `step:<name>` hash fields), one per name.
    steps: Vec<asynq_core::steps::StepRecord>,
    /// Why its handler parked it, if it did (Redis's `parked` hash field); shown while scheduled.
    parked: Option<asynq_core::steps::Parked>,
    /// Signals sent to it, by name (Redis's `signal:<name>` hash fields).
    signals: HashMap<asynq_core::steps::StepName, Bytes>,
}

impl TaskRecord {
    fn new(msg: StoredTask, state: TaskState) -> Self {
        Self {
            msg,
            state,
            pending_since: None,
            unique_key: None,
            group: None,
            result: None,
            progress: None,
            stalls: 0,
            debounce: None,
            priority: TaskPriority::DEFAULT,
            steps: Vec::new(),
            parked: None,
            signals: HashMap::new(),
        }
    }

    /// Whether the task has started, so that nothing replaces or edits it (Redis's
    /// `started.lua`): its handler recorded a step, or parked it (counted while it is scheduled:
    /// the attempt that goes on forgets the park).
    fn has_started(&self) -> bool {
        (self.state == TaskState::Scheduled && self.parked.is_some()) || !self.steps.is_empty()
    }

    /// The task's snapshot in `state`, due at `next_process_at`.
    fn info(&self, state: TaskState, next_process_at: Option<SystemTime>) -> TaskInfo {
        let mut info = TaskInfo::new(&self.msg, state, next_process_at, self.result.clone());
        info.progress.clone_from(&self.progress);
        info.debounce_key.clone_from(&self.debounce);
        info.priority = self.priority;
        info
    }
}

/// A uniqueness lock: the ID of the task holding it, until it expires.
#[derive(Debug)]
struct UniqueLock {
    owner: String,
    expires_at: SystemTime,
}

impl UniqueLock {
    fn is_live(&self, now: SystemTime) -> bool {
        now <= self.expires_at
    }
}

/// The state of one queue.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    /// Task IDs ready to run: Go's pending list and, for tasks of other priorities, the
    /// `prioritized` set of ours.
    pending: pending::Pending,
    /// Task IDs leased to workers, most recently dequeued at the front.
    active: VecDeque<String>,
    lease: ZSet,
    /// The leased tasks no handler has started ([`LeaseStage::Taken`]).
    unstarted: HashSet<String>,
    scheduled: ZSet,
    retry: ZSet,
    archived: ZSet,
    completed: ZSet,
    /// The group names the aggregator scans (Go's `asynq:{q}:groups`); forwarding into a group
    /// does not add to it.
    groups: BTreeSet<GroupName>,
    group_sets: HashMap<GroupName, ZSet>,
    /// The aggregation sets taken out of the groups, with their deadlines.
    aggregation_sets: aggregate::AggregationSets,
    tasks: HashMap<String, TaskRecord>,
    locks: HashMap<String, UniqueLock>,
    /// Unix seconds of the pause, while paused.
    paused: Option<i64>,
    stats: Stats,
    /// Per debounce key, the ID of the task last enqueued with it (Redis's
    /// `<ns>:{q}:debounce:<key>`, which expires an hour after the task was due instead).
    debounce_marks: HashMap<String, String>,
    /// The size of `debounce_marks` at which its expired marks are swept next.
    debounce_sweep_at: usize,
    /// The task event log, while the queue keeps one.
    pub(crate) events: Option<crate::events::EventStream>,
    /// Its workflow tasks' records.
    workflows: workflow::WorkflowRecords,
    /// What its archive keeps (the broker's [`MemoryConfig::archive_limits`](crate::MemoryConfig)).
    archive_limits: ArchiveLimits,
}

/// The Unix second at which a lease taken or extended at `now` expires.
pub(crate) fn lease_expiry(now: SystemTime) -> i64 {
    unix_secs(now).saturating_add(LEASE_DURATION.as_secs() as i64)
}

/// The uniqueness-lock key of a task within its queue: the type name (prefixed by its length,
/// so no type and payload pair can spell another's) and the payload in hex (no collisions, and
/// nothing to share with Go here, so no digest).
fn unique_key(type_name: &str, payload: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut key = format!("{}:{type_name}:", type_name.len());
    key.extend(payload.iter().flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]).map(char::from));
    key
}

/// The state `event` moves a task in state `from` to, or `FailedPrecondition` if the state
/// machine forbids it (or deletes the task).
fn state_after(from: Option<TaskState>, event: Event) -> Result<TaskState> {
    match transition(from, event) {
        Ok(Next::State(state)) => Ok(state),
        Ok(Next::Deleted) => Err(Error::FailedPrecondition(format!("{event:?} would delete the task"))),
        Err(e) => Err(Error::FailedPrecondition(e.to_string())),
    }
}

/// `FailedPrecondition` unless the state machine lets `event` delete a task in state `from`.
fn check_deletes(from: Option<TaskState>, event: Event) -> Result<()> {
    match transition(from, event) {
        Ok(Next::Deleted) => Ok(()),
        Ok(Next::State(state)) => Err(Error::FailedPrecondition(format!("{event:?} would keep the task, as {state}"))),
        Err(e) => Err(Error::FailedPrecondition(e.to_string())),
    }
}

fn too_long(field: &'static str, d: Duration) -> Error {
    Error::invalid(field, format!("{d:?} is too long"))
}

impl Queue {
    /// Stores a new task (scripts 5.1–5.6).
    pub(crate) fn enqueue(&mut self, mut request: EnqueueRequest, now: SystemTime) -> Result<()> {
        request.check_replacement()?;
        request.check_priority()?;
        if let Some(replace) = request.replace.take() {
            return self.enqueue_replacing(request, replace, now);
        }
        let EnqueueRequest { mut message, placement, unique_ttl, priority, .. } = request;
        let mut lock_key = None;
        if let Some(ttl) = unique_ttl {
            let key = unique_key(&message.type_name, &message.payload);
            if self.locks.get(&key).is_some_and(|lock| lock.is_live(now)) {
                return Err(Error::DuplicateTask { queue: message.queue, type_name: message.type_name });
            }
            let expires_at = now.checked_add(ttl).ok_or_else(|| too_long("unique", ttl))?;
            // Taken before the ID check and kept on a conflict, as in Go.
            self.locks.insert(key.clone(), UniqueLock { owner: message.id.to_string(), expires_at });
            message.unique_key = Some(key.clone());
            lock_key = Some(key);
        }
        if self.holds_id(message.id.as_str()) {
            return Err(Error::TaskIdConflict { queue: message.queue, id: message.id });
        }
        let event = match placement {
            Placement::Pending => Event::Enqueue,
            Placement::Scheduled { .. } => Event::Schedule,
            Placement::Grouped { .. } => Event::AddToGroup,
        };
        let id = message.id.clone();
        let mut record = TaskRecord::new(message, state_after(None, event)?);
        record.priority = priority;
        match placement {
            Placement::Pending => {
                record.pending_since = Some(unix_nanos(now));
                record.unique_key = lock_key;
                self.pending.push(id.to_string(), priority);
            }
            // No `group` on the record even if the message has one: when due, the task becomes
            // an ordinary pending task (Go quirk).
            Placement::Scheduled { process_at } => {
                record.unique_key = lock_key;
                self.scheduled.insert(&id, unix_secs(process_at));
            }
            // No `unique_key` on the record, only in the message (Go quirk).
            Placement::Grouped { group } => {
                self.group_sets.entry(group.clone()).or_default().insert(&id, unix_secs(now));
                self.groups.insert(group.clone());
                record.group = Some(group);
            }
        }
        self.tasks.insert(id.to_string(), record);
        self.emit_stored(now, EventKind::Enqueued, id.as_str());
        Ok(())
    }

    /// Whether a dequeue could take a task now.
    pub(crate) fn has_ready(&self) -> bool {
        self.paused.is_none() && !self.pending.is_empty()
    }

    /// Moves up to `max` tasks from pending to active, next-to-run first (script 5.7).
    pub(crate) fn dequeue(&mut self, max: usize, now: SystemTime) -> Vec<Dequeued> {
        let mut taken = Vec::new();
        if self.paused.is_some() {
            return taken;
        }
        let expiry = lease_expiry(now);
        while taken.len() < max {
            let Some(id) = self.pending.pop() else { break };
            // Go would move an ID without a record to active for good; this broker drops it.
            let Some(record) = self.tasks.get_mut(&id) else { continue };
            let Ok(state) = state_after(Some(record.state), Event::Dequeue) else { continue };
            record.state = state;
            record.pending_since = None;
            record.progress = None;
            taken.push(Dequeued {
                message: record.msg.clone(),
                lease_expiry: from_unix_secs(expiry),
                stage: LeaseStage::Taken,
            });
            self.lease.insert(&id, expiry);
            self.unstarted.insert(id.clone());
            self.active.push_front(id);
        }
        if self.events.is_some() {
            for task in &taken {
                self.emit(now, EventKind::Started, &task.message);
            }
        }
        taken
    }

    /// Records how an attempt at the active task `msg` ended (scripts 5.8–5.12).
    pub(crate) fn finish(&mut self, msg: &StoredTask, outcome: Outcome, now: SystemTime) -> Result<()> {
        let id = msg.id.as_str();
        let not_found = || Error::TaskNotFound { queue: msg.queue.clone(), id: msg.id.clone() };
        // Searched from the back: tasks tend to finish in the order they were dequeued.
        let position = self.active.iter().rposition(|active| active == id);
        let Some(position) = position.filter(|_| self.lease.contains(id)) else { return Err(not_found()) };
        let from = Some(self.tasks.get(id).ok_or_else(not_found)?.state);
        let event = self.events.is_some().then(|| match &outcome {
            Outcome::Done | Outcome::Complete => (EventKind::Succeeded, None),
            Outcome::Retry { error, .. } => (EventKind::Retried, Some(error.clone())),
            Outcome::Archive { error } => (EventKind::Archived, Some(error.clone())),
            Outcome::Requeue | Outcome::Stalled => (EventKind::Requeued, None),
        });
        match outcome {
            Outcome::Done => {
                check_deletes(from, Event::Done)?;
                self.detach_active(position, id);
                self.tasks.remove(id);
                self.stats.record_processed(now);
                self.release_lock(msg.unique_key.as_deref(), id);
            }
            Outcome::Complete => {
                let state = state_after(from, Event::Complete)?;
                self.detach_active(position, id);
                self.completed.insert(id, unix_secs(msg.completed_expiry(now)));
                self.rewrite(id, msg.completed(now), state);
                self.stats.record_processed(now);
                self.release_lock(msg.unique_key.as_deref(), id);
            }
            Outcome::Retry { retry_at, error, is_failure } => {
                let state = state_after(from, Event::Retry)?;
                self.detach_active(position, id);
                self.retry.insert(id, unix_secs(retry_at));
                self.rewrite(id, msg.failed(&error, now, is_failure), state);
                if is_failure {
                    self.stats.record_failed(now);
                }
            }
            Outcome::Archive { error } => {
                let state = state_after(from, Event::Archive)?;
                self.detach_active(position, id);
                self.archived.insert(id, unix_secs(now));
                self.trim_archive(now);
                self.rewrite(id, msg.archived(&error, now), state);
                self.stats.record_failed(now);
            }
            Outcome::Requeue | Outcome::Stalled => {
                let state = state_after(from, Event::Requeue)?;
                self.detach_active(position, id);
                // Next to be dequeued among its priority (the list's right end for the default).
                // No `pending_since`, as in Go.
                let priority = self.tasks.get(id).map_or(TaskPriority::DEFAULT, |record| record.priority);
                self.pending.push_next(id.to_owned(), priority);
                self.rewrite_state(id, state);
                if let (Outcome::Stalled, Some(record)) = (outcome, self.tasks.get_mut(id)) {
                    record.stalls = record.stalls.saturating_add(1);
                }
            }
        }
        match event {
            Some((kind, Some(error))) => self.emit_failure(now, kind, msg, &error),
            Some((kind, None)) => self.emit(now, kind, msg),
            None => {}
        }
        Ok(())
    }

    /// Removes `id`, found at `position` in the active list, from the active list and the lease.
    fn detach_active(&mut self, position: usize, id: &str) {
        self.active.remove(position);
        self.lease.remove(id);
        self.unstarted.remove(id);
    }

    /// Sets the message and state of `id` (Go's `HSET msg … state …`), creating a bare record if
    /// there is none: the archive trim may just have deleted the very task being archived.
    fn rewrite(&mut self, id: &str, msg: StoredTask, state: TaskState) {
        match self.tasks.get_mut(id) {
            Some(record) => (record.msg, record.state) = (msg, state),
            None => {
                self.tasks.insert(id.to_owned(), TaskRecord::new(msg, state));
            }
        }
    }

    fn rewrite_state(&mut self, id: &str, state: TaskState) {
        if let Some(record) = self.tasks.get_mut(id) {
            record.state = state;
        }
    }

    /// An empty queue whose archive keeps to `limits`.
    pub(crate) fn with_archive_limits(limits: ArchiveLimits) -> Self {
        Self { archive_limits: limits, ..Self::default() }
    }

    /// Deletes archived tasks past the age limit, then all but the newest `max_size - 1`;
    /// returns how many it deleted for each reason: (by age, by size).
    fn trim_archive(&mut self, now: SystemTime) -> (usize, usize) {
        let limits = self.archive_limits;
        let expired = self.archived.take_up_to(limits.cutoff_secs(now), usize::MAX);
        let excess = self.archived.len().saturating_sub(limits.kept());
        let dropped = self.archived.take_lowest(excess);
        for id in expired.iter().chain(&dropped) {
            self.tasks.remove(id);
        }
        (expired.len(), dropped.len())
    }

    /// What archiving `adding` more tasks at `now` would drop.
    pub(crate) fn archive_outlook(&self, adding: usize, now: SystemTime) -> ArchiveOutlook {
        let limits = self.archive_limits;
        let expired = self.archived.up_to(limits.cutoff_secs(now)).count();
        limits.outlook(self.archived.len(), expired, adding)
    }

    /// Releases the lock `key` if task `id` holds it.
    fn release_lock(&mut self, key: Option<&str>, id: &str) {
        let Some(key) = key else { return };
        if self.locks.get(key).is_some_and(|lock| lock.owner == id) {
            self.locks.remove(key);
        }
    }

    /// Moves the lease of each of `ids` that is active to `expiry` (Unix seconds); at
    /// [`LeaseStage::Started`], also records that a handler starts it.
    pub(crate) fn extend_leases(&mut self, ids: &[TaskId], expiry: i64) {
        for id in ids {
            if self.lease.update(id, expiry) {
                self.unstarted.remove(id.as_str());
            }
        }
    }

    /// Stores the result of task `id`; false if there is no such task.
    pub(crate) fn write_result(&mut self, id: &str, result: Bytes) -> bool {
        let Some(record) = self.tasks.get_mut(id) else { return false };
        record.result = Some(result);
        true
    }

    /// Records the progress of the active task `id`; false if there is no such active task.
    pub(crate) fn write_progress(&mut self, id: &str, progress: &Progress) -> bool {
        let Some(record) = self.tasks.get_mut(id).filter(|record| record.state == TaskState::Active) else {
            return false;
        };
        record.progress = Some(progress.clone());
        if let Some(log) = &mut self.events {
            log.push(progress.reported_at(), EventKind::Progress, &record.msg, None, Some(progress));
        }
        true
    }

    /// Moves every due scheduled task, then every due retry task, to pending or to its group
    /// (script 5.13). Returns how many moved.
    pub(crate) fn forward(&mut self, now: SystemTime) -> usize {
        let secs = unix_secs(now);
        let mut due = self.scheduled.take_up_to(secs, usize::MAX);
        due.extend(self.retry.take_up_to(secs, usize::MAX));
        let mut moved = 0;
        for id in due {
            let Some(record) = self.tasks.get_mut(&id) else { continue };
            let group = record.group.clone().filter(|group| !group.is_empty());
            let event = if group.is_some() { Event::ForwardToGroup } else { Event::Forward };
            let Ok(state) = state_after(Some(record.state), event) else { continue };
            record.state = state;
            match group {
                // Not added to `groups` (Go quirk), so the aggregator does not see the group.
                Some(group) => self.group_sets.entry(group).or_default().insert(&id, secs),
                None => {
                    record.pending_since = Some(unix_nanos(now));
                    self.pending.push(id, record.priority);
                }
            }
            moved += 1;
        }
        moved
    }

    /// When the earliest scheduled or retry task falls due (Unix seconds).
    pub(crate) fn next_due(&self) -> Option<i64> {
        self.scheduled.lowest_score().into_iter().chain(self.retry.lowest_score()).min()
    }

    /// Whether task `id` holds a lease that expired at or before `cutoff` (Unix seconds).
    pub(crate) fn lease_expired_by(&self, id: &str, cutoff: i64) -> bool {
        self.lease.score(id).is_some_and(|expiry| expiry <= cutoff)
    }

    /// The active tasks whose lease expired at or before `cutoff` (Unix seconds), with the
    /// stage each reached, in lease order (script 5.19): within one second, started tasks come
    /// first, as on Redis, where a lease no handler started is scored half a second later.
    pub(crate) fn lease_expired(&self, cutoff: i64) -> Vec<ExpiredLease> {
        let mut expired: Vec<(i64, ExpiredLease)> = self
            .lease
            .up_to(cutoff)
            .filter_map(|id| {
                let stage = if self.unstarted.contains(id) { LeaseStage::Taken } else { LeaseStage::Started };
                let expiry = self.lease.score(id)?;
                let record = self.tasks.get(id)?;
                Some((expiry, ExpiredLease { message: record.msg.clone(), stage, stalls: record.stalls }))
            })
            .collect();
        expired.sort_by_key(|(expiry, lease)| (*expiry, lease.stage == LeaseStage::Taken));
        expired.into_iter().map(|(_, lease)| lease).collect()
    }

    /// Deletes up to `batch` completed tasks whose retention ran out (script 5.18), and drops
    /// expired uniqueness locks. Returns how many tasks were deleted.
    pub(crate) fn delete_expired_completed(&mut self, batch: usize, now: SystemTime) -> usize {
        let expired = self.completed.take_up_to(unix_secs(now), batch);
        for id in &expired {
            if self.tasks.get(id).is_some_and(|record| check_deletes(Some(record.state), Event::Expire).is_ok()) {
                self.tasks.remove(id);
            }
        }
        self.locks.retain(|_, lock| lock.is_live(now));
        expired.len()
    }

    /// Pauses the queue (6.16).
    pub(crate) fn pause(&mut self, name: &str, now: SystemTime) -> Result<()> {
        if self.paused.is_some() {
            return Err(Error::FailedPrecondition(format!("queue {name:?} is already paused")));
        }
        self.paused = Some(unix_secs(now));
        Ok(())
    }

    /// Unpauses the queue (6.16).
    pub(crate) fn unpause(&mut self, name: &str) -> Result<()> {
        match self.paused.take() {
            Some(_) => Ok(()),
            None => Err(Error::FailedPrecondition(format!("queue {name:?} is not paused"))),
        }
    }

    /// Logs `kind` for `task` if the queue keeps a log.
    pub(crate) fn emit(&mut self, now: SystemTime, kind: EventKind, task: &StoredTask) {
        if let Some(log) = &mut self.events {
            log.push(now, kind, task, None, None);
        }
    }

    /// Logs `kind` for `task` with the error of its failed attempt.
    pub(crate) fn emit_failure(&mut self, now: SystemTime, kind: EventKind, task: &StoredTask, error: &str) {
        if let Some(log) = &mut self.events {
            log.push(now, kind, task, Some(error), None);
        }
    }

    /// Logs `kind` for the task stored as `id`, if there is one.
    pub(crate) fn emit_stored(&mut self, now: SystemTime, kind: EventKind, id: &str) {
        if let (Some(log), Some(record)) = (&mut self.events, self.tasks.get(id)) {
            log.push(now, kind, &record.msg, None, None);
        }
    }

    /// Logs `kind` naming a step or a signal (`name`) for the task stored as `id`, if there is
    /// one.
    pub(crate) fn emit_named(&mut self, now: SystemTime, kind: EventKind, id: &str, name: Option<&str>) {
        if let (Some(log), Some(record)) = (&mut self.events, self.tasks.get(id)) {
            log.push_named(now, kind, &record.msg, None, None, name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{Task, TaskOptions, resolve_enqueue};

    fn at(secs: i64) -> SystemTime {
        from_unix_secs(secs)
    }

    #[test]
    fn forward_returns_a_grouped_retry_task_to_its_group_without_registering_the_group() {
        // Only inspector operations outside the broker traits can put a task that was added to
        // a group into retry, so the state is arranged by hand.
        let mut queue = Queue::default();
        let task = Task::new("t", "p").with_options(TaskOptions::new().group("g").task_id("a"));
        queue.enqueue(resolve_enqueue(&task, &TaskOptions::new(), at(100), String::new).unwrap(), at(100)).unwrap();
        queue.group_sets.clear();
        queue.groups.clear();
        queue.retry.insert("a", 150);
        queue.tasks.get_mut("a").unwrap().state = TaskState::Retry;

        assert_eq!(queue.forward(at(149)), 0);
        assert_eq!(queue.forward(at(150)), 1);
        assert_eq!(queue.group_sets["g"].score("a"), Some(150));
        assert_eq!(queue.tasks["a"].state, TaskState::Aggregating);
        assert!(queue.groups.is_empty() && queue.pending.is_empty() && queue.retry.len() == 0);
    }

    #[test]
    fn unique_keys_spell_the_type_and_the_payload_in_hex() {
        assert_eq!(unique_key("email", b"\x01\xab"), "5:email:01ab");
        assert_eq!(unique_key("email", b""), "5:email:");
        assert_ne!(unique_key("a:1", b""), unique_key("a", b"\x01"));
    }
}
