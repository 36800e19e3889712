//! A reference model of one broker for model-based testing: queues, task states, uniqueness
//! locks, counters and the simulated clock, as plain data, written from the wire-format spec
//! (`asynq-wire-format.md`, sections 4 to 6) and the broker traits' documentation rather than
//! from either broker's code.
//!
//! The vocabulary is shared with the test that drives real brokers (`tests/model_based.rs`):
//! an [`Op`] is one call a client, server role, operator or clock makes; [`Model::apply`] says
//! what it returns as a [`Reply`] (errors by [`ErrorKind`], never by text), and
//! [`Model::observe`] says what the inspector shows afterwards as an [`Observation`]. A broker
//! conforms when, for every sequence of operations, its replies and observations equal the
//! model's after every step.
//!
//! Names come from small pools ([`QUEUES`], [`IDS`], [`PAYLOADS`], [`GROUPS`]) so that
//! generated operations collide: ID conflicts, duplicate unique tasks, missing tasks and
//! actions on tasks in the wrong state all happen often.
//!
//! Where the spec records a Go quirk the model keeps it: a scheduled task enqueued with a group
//! becomes plain pending when due (`schedule` stores no `group` field), a retried task that was
//! once added to a group goes back to that group when due without re-registering the group name,
//! and the queue's aggregating count and listing only see registered group names. Where this
//! port documents a deliberate difference from Go, the model follows the port: operator
//! deletes and forced queue removals release the uniqueness lock each deleted task holds
//! (including tasks added to a group), and archive trimming deletes the trimmed tasks.
//!
//! Workflows ([`Op::Workflow`]) are modelled within one queue each: a settle passes outcomes
//! on breadth first (see `Model::pass_on`), and a relay, which follows every operation, passes
//! on those of parents an operator settled, in ID order. The order in which dependents in other
//! queues hear of a parent is not specified; `tests/workflow_differential.rs` holds the two
//! brokers to each other across queues instead.
//!
//! Task priorities ([`NewTask::priority`]) order a queue's pending tasks: highest first, first in
//! first out within one, the default (0) being Go's pending list; a task given back goes next
//! among its priority, and one made pending again (due, retried, run by an operator) joins the
//! end of its priority.
//!
//! Durable steps ([`Op::RecordStep`]) are recorded by name with an active task and go with it:
//! a task stored again under the same ID (replaced, or enqueued after the old one went) has none.
//! A handler parks its active task ([`Op::Park`]): scheduled, charged nothing, due when its
//! sleep or wait ends, or at once when it waits for a signal it was sent already, out of any
//! group it was once in (pending when due); then it is a scheduled task like any other
//! (forwarded when due, run, archived or deleted by an operator) except that it has started: a
//! task that has (parked, or with step records) is never replaced, by a debounce (which stores
//! its task beside it) or by its ID (refused). Signals ([`Op::Signal`]) are kept by name with
//! their task whatever its state and go with it; one a parked task waits for makes it pending
//! as an operator's run does.
//!
//! This file holds the state and [`Model::apply`]; `vocab` the vocabulary, `operations` what each
//! call does, `steps` durable steps, parks and signals, `workflow` the workflows and `observe`
//! what the inspector shows.

mod observe;
mod operations;
mod steps;
mod vocab;
mod workflow;

pub use vocab::*;

use asynq_core::TaskState;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Seconds in a day: the counters of processed and failed tasks are daily.
const DAY_SECS: i64 = 86_400;

/// A sorted set of IDs by score, ties by ID (Redis's order).
type ZSet = BTreeSet<(i64, String)>;

fn zremove(set: &mut ZSet, id: &str) -> bool {
    let found = set.iter().find(|(_, member)| member == id).cloned();
    found.is_some_and(|entry| set.remove(&entry))
}

/// The key of a uniqueness lock: queue, type (always [`TASK_TYPE`]) and payload.
type LockKey = (String, String);

#[derive(Debug, Clone)]
struct Lock {
    holder: String,
    expires_at: i64,
}

#[derive(Debug, Clone)]
struct Task {
    state: TaskState,
    retry: u32,
    retried: u32,
    retention: i64,
    /// The lock the task was enqueued with.
    unique: Option<LockKey>,
    /// The `group` field of the stored task: set only when enqueued straight into a group, and
    /// dropped when its handler parks it.
    group: Option<String>,
    /// How many times a started lease of it expired and was forgiven.
    stalls: u32,
    /// The debounce key it was enqueued with.
    debounce: Option<String>,
    /// Whether it belongs to a workflow (its settling passes its outcome on).
    workflow: bool,
    /// Its priority within its queue.
    priority: i8,
    /// The names of its recorded durable steps: they go when the task goes.
    steps: BTreeSet<String>,
    /// Why its handler last parked it, and until when (shown while it is scheduled).
    parked: Option<ParkedView>,
    /// The names of the signals sent to it: they go when the task goes.
    signals: BTreeSet<String>,
}

impl Task {
    /// Whether it has started, so that no debounce or replacement by ID takes its place: its
    /// handler recorded a step, or parked it (while it is scheduled, from that park).
    fn has_started(&self) -> bool {
        (self.state == TaskState::Scheduled && self.parked.is_some()) || !self.steps.is_empty()
    }
}

/// The pending tasks of a queue, in the order a dequeue takes them: priorities from the highest
/// down, first in first out within one; the default priority, 0, is Go's pending list.
#[derive(Debug, Clone, Default)]
struct Pending(BTreeMap<std::cmp::Reverse<i8>, VecDeque<String>>);

impl Pending {
    /// Joins the end of `priority`.
    fn push_back(&mut self, id: String, priority: i8) {
        self.0.entry(std::cmp::Reverse(priority)).or_default().push_back(id);
    }

    /// Goes next among `priority` (a task given back).
    fn push_front(&mut self, id: String, priority: i8) {
        self.0.entry(std::cmp::Reverse(priority)).or_default().push_front(id);
    }

    fn pop_front(&mut self) -> Option<String> {
        let (priority, ids) = self.0.iter_mut().find(|(_, ids)| !ids.is_empty())?;
        let (priority, id) = (*priority, ids.pop_front());
        if self.0[&priority].is_empty() {
            self.0.remove(&priority);
        }
        id
    }

    fn remove(&mut self, id: &str) {
        for ids in self.0.values_mut() {
            ids.retain(|p| p != id);
        }
        self.0.retain(|_, ids| !ids.is_empty());
    }

    fn iter(&self) -> impl Iterator<Item = &String> {
        self.0.values().flatten()
    }

    fn len(&self) -> usize {
        self.0.values().map(VecDeque::len).sum()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every pending task, taken out.
    fn take_all(&mut self) -> Vec<String> {
        std::mem::take(&mut self.0).into_values().flatten().collect()
    }
}

/// A workflow task waiting for others.
#[derive(Debug, Clone)]
struct Waiting {
    /// The tasks it still waits for.
    left: BTreeSet<String>,
    /// Whether it runs anyway when one of them fails.
    run_anyway: bool,
}

#[derive(Debug, Clone, Default)]
struct Queue {
    tasks: BTreeMap<String, Task>,
    /// Front: the next to be dequeued.
    pending: Pending,
    /// In the order they were dequeued.
    active: Vec<String>,
    lease: BTreeMap<String, i64>,
    /// The leased tasks a handler started (IDs no longer leased may linger; only leased ones
    /// are looked up).
    started: BTreeSet<String>,
    scheduled: ZSet,
    retry: ZSet,
    archived: ZSet,
    completed: ZSet,
    groups: BTreeMap<String, ZSet>,
    /// The registered group names (`asynq:{q}:groups`).
    group_names: BTreeSet<String>,
    paused: bool,
    processed_total: u64,
    failed_total: u64,
    /// Day number (Unix seconds / 86 400) to (processed, failed).
    daily: BTreeMap<i64, (u64, u64)>,
    /// The waiting workflow tasks (their state is [`TaskState::Waiting`]).
    waiting: BTreeMap<String, Waiting>,
    /// The workflow tasks others wait for that have not passed their outcome on yet, each with
    /// the tasks waiting for it, in plan order.
    open: BTreeMap<String, Vec<String>>,
}

impl Queue {
    fn zset(&mut self, state: TaskState) -> &mut ZSet {
        match state {
            TaskState::Scheduled => &mut self.scheduled,
            TaskState::Retry => &mut self.retry,
            TaskState::Archived => &mut self.archived,
            TaskState::Completed => &mut self.completed,
            other => unreachable!("{other} tasks are not kept in a sorted set"),
        }
    }

    fn count(&mut self, now: i64, failed: bool) {
        let day = self.daily.entry(now.div_euclid(DAY_SECS)).or_default();
        day.0 += 1;
        self.processed_total += 1;
        if failed {
            day.1 += 1;
            self.failed_total += 1;
        }
    }

    /// Takes task `id` out of the container of its (non-active) state.
    fn detach(&mut self, id: &str) {
        let task = &self.tasks[id];
        match task.state {
            TaskState::Pending => self.pending.remove(id),
            TaskState::Aggregating => {
                let group = task.group.clone().unwrap_or_default();
                if let Some(set) = self.groups.get_mut(&group) {
                    zremove(set, id);
                    if set.is_empty() {
                        self.groups.remove(&group);
                        self.group_names.remove(&group);
                    }
                }
            }
            TaskState::Active => unreachable!("active tasks are never detached by an operator"),
            state => {
                zremove(self.zset(state), id);
            }
        }
    }

    /// Adds task `id` to the archive at `now` and trims tasks archived 90 days ago or more.
    fn archive(&mut self, id: &str, now: i64) {
        self.archived.insert((now, id.to_owned()));
        if let Some(task) = self.tasks.get_mut(id) {
            task.state = TaskState::Archived;
        }
        self.trim_archive(now);
    }

    /// Deletes the tasks archived 90 days or more before `now`.
    fn trim_archive(&mut self, now: i64) {
        let cutoff = now - ARCHIVE_MAX_AGE_SECS;
        let old: Vec<(i64, String)> = self.archived.iter().filter(|(score, _)| *score <= cutoff).cloned().collect();
        for entry in old {
            self.archived.remove(&entry);
            self.tasks.remove(&entry.1);
        }
    }
}

/// The reference model: every queue of [`QUEUES`], the uniqueness locks and the clock.
#[derive(Debug, Clone)]
pub struct Model {
    now: i64,
    known: BTreeSet<String>,
    queues: BTreeMap<String, Queue>,
    locks: BTreeMap<LockKey, Lock>,
    /// The `(queue, id)` pairs a processor was ever handed a message for, most recent last.
    handed: Vec<(String, String)>,
    /// Per `(queue, debounce key)`, the ID of the task last enqueued with the key.
    debounce_marks: BTreeMap<(String, String), String>,
    /// The workflow tasks the current operation settled for good (queue, ID, whether it
    /// succeeded), in order: their outcomes are passed on together once it is done.
    settling: Vec<(String, String, bool)>,
}

impl Model {
    /// An empty broker whose clock reads `now` (Unix seconds).
    pub fn new(now: i64) -> Self {
        let queues = QUEUES.iter().map(|q| (q.to_string(), Queue::default())).collect();
        Model {
            now,
            known: BTreeSet::new(),
            queues,
            locks: BTreeMap::new(),
            handed: Vec::new(),
            debounce_marks: BTreeMap::new(),
            settling: Vec::new(),
        }
    }

    /// The clock, Unix seconds.
    pub fn now(&self) -> i64 {
        self.now
    }

    fn queue(&mut self, name: &str) -> &mut Queue {
        self.queues.entry(name.to_owned()).or_default()
    }

    fn check_known(&self, queue: &str) -> Result<(), ErrorKind> {
        if self.known.contains(queue) { Ok(()) } else { Err(ErrorKind::QueueNotFound) }
    }

    fn release(&mut self, queue: &str, id: &str) {
        let key = self.queues.get(queue).and_then(|q| q.tasks.get(id)).and_then(|t| t.unique.clone());
        if let Some(key) = key
            && self.locks.get(&key).is_some_and(|lock| lock.holder == id)
        {
            self.locks.remove(&key);
        }
    }

    /// Applies `op` and returns what the broker call returns.
    pub fn apply(&mut self, op: &Op) -> Reply {
        let result = match op {
            Op::Enqueue(task) => self.enqueue(task).map(|()| Reply::Ok),
            Op::EnqueueBatch(tasks) => {
                Ok(Reply::Each(tasks.iter().map(|t| self.enqueue(t).map_or_else(Reply::Err, |()| Reply::Ok)).collect()))
            }
            Op::FinishBatch(picks) => {
                let items = pick_batch(&self.handed, picks);
                if items.is_empty() {
                    return Reply::Skipped;
                }
                let replies = items
                    .into_iter()
                    .map(|((queue, id), with)| self.finish(&queue, &id, with).map_or_else(Reply::Err, |()| Reply::Ok))
                    .collect();
                Ok(Reply::Each(replies))
            }
            Op::Dequeue { queues, max } => Ok(Reply::Tasks(self.dequeue(queues, *max))),
            Op::Finish { pick, with } => {
                let Some((queue, id)) = pick_handed(&self.handed, *pick).cloned() else {
                    return Reply::Skipped;
                };
                self.finish(&queue, &id, *with).map(|()| Reply::Ok)
            }
            Op::Advance { secs } => {
                self.now += *secs as i64;
                Ok(Reply::Ok)
            }
            Op::Forward { queues } => Ok(Reply::Count(queues.iter().map(|q| self.forward(q)).sum())),
            Op::Start { pick } => {
                let Some((queue, id)) = pick_handed(&self.handed, *pick).cloned() else {
                    return Reply::Skipped;
                };
                let expiry = self.now + LEASE_SECS;
                let q = self.queue(&queue);
                if let Some(lease) = q.lease.get_mut(&id) {
                    *lease = expiry;
                    q.started.insert(id);
                }
                Ok(Reply::Ok)
            }
            Op::Recover { queues, wait } => {
                self.now += *wait as i64;
                Ok(self.recover(queues))
            }
            Op::Janitor { queue, batch } => Ok(Reply::Count(self.janitor(queue, *batch))),
            Op::RunTask { queue, id } => self.run_task(queue, id).map(|()| Reply::Ok),
            Op::ArchiveTask { queue, id } => self.archive_task(queue, id).map(|()| Reply::Ok),
            Op::DeleteTask { queue, id } => self.delete_task(queue, id).map(|()| Reply::Ok),
            Op::RunAll { queue, set } => self.run_all(queue, *set).map(Reply::Count),
            Op::ArchiveAll { queue, set } => self.archive_all(queue, *set).map(Reply::Count),
            Op::DeleteAll { queue, set } => self.delete_all(queue, *set).map(Reply::Count),
            Op::Pause { queue } => {
                let q = self.queue(queue);
                if q.paused {
                    Err(ErrorKind::FailedPrecondition)
                } else {
                    q.paused = true;
                    Ok(Reply::Ok)
                }
            }
            Op::Unpause { queue } => {
                let q = self.queue(queue);
                if q.paused {
                    q.paused = false;
                    Ok(Reply::Ok)
                } else {
                    Err(ErrorKind::FailedPrecondition)
                }
            }
            Op::DeleteQueue { queue, force } => self.delete_queue(queue, *force).map(|()| Reply::Ok),
            Op::Debounce { task, key, window } => self.debounce(task, key, *window).map(|()| Reply::Ok),
            Op::Replace(task) => self.replace(task).map(|()| Reply::Ok),
            Op::Workflow { queue, tasks } => self.store_workflow(queue, tasks).map(|()| Reply::Ok),
            Op::CancelWaiting { queue, id } => Ok(Reply::Count(self.cancel_waiting(queue, id))),
            Op::RecordStep { pick, step } => {
                let Some((queue, id)) = pick_handed(&self.handed, *pick).cloned() else {
                    return Reply::Skipped;
                };
                self.record_step(&queue, &id, step).map(|()| Reply::Ok)
            }
            Op::Park { pick, why, secs, step } => {
                let Some((queue, id)) = pick_handed(&self.handed, *pick).cloned() else {
                    return Reply::Skipped;
                };
                self.park(&queue, &id, *why, *secs, *step).map(|()| Reply::Ok)
            }
            Op::Signal { to, name } => {
                let (queue, id) = match to {
                    Target::Task(queue, id) => (queue.to_string(), id.to_string()),
                    Target::Handed(pick) => match pick_handed(&self.handed, *pick) {
                        Some(handed) => handed.clone(),
                        None => return Reply::Skipped,
                    },
                };
                self.signal(&queue, &id, name).map(|woke| Reply::Count(usize::from(woke)))
            }
        };
        for name in QUEUES {
            let settled =
                self.settling.iter().filter(|(q, _, _)| q == name).map(|(_, id, ok)| (id.clone(), *ok)).collect();
            self.pass_on(name, settled);
        }
        self.settling.clear();
        self.relay();
        result.unwrap_or_else(Reply::Err)
    }
}
