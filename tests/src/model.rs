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

use asynq_core::{Error, FREE_STALLS, GroupName, TaskSet, TaskState};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::Duration;

/// The queues operations pick from.
pub const QUEUES: [&str; 2] = ["q0", "q1"];
/// The task IDs operations pick from (per queue: the same ID may live in both queues).
pub const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
/// The payloads enqueued tasks carry; a unique task's lock is per queue, type and payload.
pub const PAYLOADS: [&str; 2] = ["x", "y"];
/// The groups grouped tasks join.
pub const GROUPS: [&str; 2] = ["g0", "g1"];
/// The type of every task.
pub const TASK_TYPE: &str = "t";
/// The uniqueness TTL of every unique task: far longer than any generated sequence advances
/// the clock, because Redis expires its locks by its own clock, not the simulated one.
pub const UNIQUE_TTL: Duration = Duration::from_secs(100 * 365 * 86_400);
/// How long after now the recoverer makes a recovered task due again.
pub const RECOVER_RETRY_DELAY: Duration = Duration::from_secs(60);
/// The states whose tasks an [`Observation`] lists: Go's, then workflow tasks waiting.
pub const OBSERVED_STATES: [TaskState; 8] = [
    TaskState::Active,
    TaskState::Pending,
    TaskState::Scheduled,
    TaskState::Retry,
    TaskState::Archived,
    TaskState::Completed,
    TaskState::Aggregating,
    TaskState::Waiting,
];
/// The lease a dequeue grants, and the grace the recoverer allows past it.
pub const LEASE_SECS: i64 = 30;
/// How old an archived task may get before the next archive trims it (Go's 90 days).
pub const ARCHIVE_MAX_AGE_SECS: i64 = 90 * 86_400;

const DAY_SECS: i64 = 86_400;

/// When and where an enqueued task goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Pending now.
    Now,
    /// Scheduled this many seconds ahead.
    In(u64),
    /// Into a group now (aggregating).
    Group(&'static str),
    /// Scheduled this many seconds ahead, with a group option (pending when due: Go's
    /// `schedule` stores no group).
    GroupIn(&'static str, u64),
}

/// How a finished attempt ended (the test maps it to [`asynq_core::broker::Outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishWith {
    /// Success without retention: deleted.
    Done,
    /// Success with retention: completed until `now + retention`.
    Complete,
    /// Failure with retries left: due again this many seconds from now.
    Retry {
        /// Seconds until due.
        in_secs: u64,
        /// Whether the failure counts (retried and failed counters go up).
        is_failure: bool,
    },
    /// Failure for good: archived.
    Archive,
    /// Given back unfinished: front of the pending list.
    Requeue,
}

/// The tasks a bulk operator action applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// Every task in a state (some states are refused by some actions).
    State(TaskState),
    /// Every task in a group.
    Group(&'static str),
}

impl Set {
    /// The broker-level task set.
    pub fn task_set(self) -> TaskSet {
        match self {
            Set::State(state) => TaskSet::State(state),
            Set::Group(group) => TaskSet::Group(GroupName::new(group).unwrap()),
        }
    }
}

/// A task a client enqueues, of type [`TASK_TYPE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTask {
    /// The queue.
    pub queue: &'static str,
    /// The task ID.
    pub id: &'static str,
    /// The payload.
    pub payload: &'static str,
    /// Pending, scheduled or grouped.
    pub when: When,
    /// Whether it is unique (with [`UNIQUE_TTL`]).
    pub unique: bool,
    /// Retention in seconds (0: none).
    pub retention: u64,
    /// Maximum retries.
    pub max_retry: u32,
    /// Its priority within its queue (0: the default, Go's pending list).
    pub priority: i8,
}

/// One call against a broker, or a move of the clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A client enqueues a task.
    Enqueue(NewTask),
    /// A client enqueues several tasks in one `enqueue_batch` call; each succeeds or fails on
    /// its own, in order.
    EnqueueBatch(Vec<NewTask>),
    /// A processor takes up to `max` tasks from `queues`, in that order.
    Dequeue {
        /// The queues, in priority order.
        queues: Vec<&'static str>,
        /// How many at most.
        max: usize,
    },
    /// A processor finishes a message it was handed: the `pick`-th most recently handed task
    /// (modulo their number; each task counts once, with its latest message), so that finishes
    /// mostly hit active tasks and sometimes stale ones. Skipped before any task was handed.
    Finish {
        /// Which handed task, from the most recent (0).
        pick: usize,
        /// The outcome.
        with: FinishWith,
    },
    /// The settler finishes several handed tasks in one `finish_batch` call: each pick is
    /// resolved as [`Op::Finish`] resolves it, before any is finished; a task picked twice is
    /// finished once (a server never settles one attempt twice).
    FinishBatch(Vec<(usize, FinishWith)>),
    /// The clock moves forward.
    Advance {
        /// Seconds.
        secs: u64,
    },
    /// The forwarder moves due scheduled and retry tasks of `queues`.
    Forward {
        /// The queues.
        queues: Vec<&'static str>,
    },
    /// A handler starts a handed task (picked as [`Op::Finish`] picks): its lease is renewed
    /// and marked started (`extend_leases` at `LeaseStage::Started`); nothing happens to a task
    /// no longer leased.
    Start {
        /// Which handed task, from the most recent (0).
        pick: usize,
    },
    /// The clock moves forward by `wait` seconds (workers that died let their leases lapse),
    /// then the recoverer lists the active tasks of `queues` whose lease expired more than
    /// [`LEASE_SECS`] ago and finishes each: a task no handler started is requeued, and so is a
    /// started one the first `FREE_STALLS` times (counting a stall); after that a started one
    /// retries in [`RECOVER_RETRY_DELAY`] while it has retries left, and is archived otherwise.
    Recover {
        /// The queues.
        queues: Vec<&'static str>,
        /// Seconds the clock moves first.
        wait: u64,
    },
    /// The janitor deletes up to `batch` expired completed tasks of `queue`.
    Janitor {
        /// The queue.
        queue: &'static str,
        /// The batch size.
        batch: usize,
    },
    /// An operator runs one task.
    RunTask {
        /// The queue.
        queue: &'static str,
        /// The task ID.
        id: &'static str,
    },
    /// An operator archives one task.
    ArchiveTask {
        /// The queue.
        queue: &'static str,
        /// The task ID.
        id: &'static str,
    },
    /// An operator deletes one task.
    DeleteTask {
        /// The queue.
        queue: &'static str,
        /// The task ID.
        id: &'static str,
    },
    /// An operator runs every task of a set.
    RunAll {
        /// The queue.
        queue: &'static str,
        /// The set.
        set: Set,
    },
    /// An operator archives every task of a set.
    ArchiveAll {
        /// The queue.
        queue: &'static str,
        /// The set.
        set: Set,
    },
    /// An operator deletes every task of a set.
    DeleteAll {
        /// The queue.
        queue: &'static str,
        /// The set.
        set: Set,
    },
    /// An operator pauses a queue.
    Pause {
        /// The queue.
        queue: &'static str,
    },
    /// An operator unpauses a queue.
    Unpause {
        /// The queue.
        queue: &'static str,
    },
    /// An operator removes a queue.
    DeleteQueue {
        /// The queue.
        queue: &'static str,
        /// Whether to delete its tasks too.
        force: bool,
    },
    /// A client enqueues `task` debounced with `key`: scheduled `window` seconds ahead, in
    /// place of the task last enqueued with the key in its queue while that one is still
    /// scheduled with the key. The task's `when` and `unique` are not used.
    Debounce {
        /// The task.
        task: NewTask,
        /// The debounce key.
        key: &'static str,
        /// The window, seconds.
        window: u64,
    },
    /// A client replaces the waiting (pending or scheduled) task `task.id` of `task.queue`
    /// with `task`, pending or scheduled as its `when` says (`Now` or `In`); `unique` is not
    /// used.
    Replace(NewTask),
    /// A client stores a workflow of tasks of `queue` in one call (see [`WorkflowTask`]).
    /// Every operation is followed by a relay of every queue (see [`Model::apply`]).
    Workflow {
        /// The queue of every task of the workflow.
        queue: &'static str,
        /// Its tasks, each after the tasks it waits for.
        tasks: Vec<WorkflowTask>,
    },
    /// An operator cancels the waiting workflow task `id` (`Workflows::cancel_waiting`).
    CancelWaiting {
        /// The queue.
        queue: &'static str,
        /// The task ID.
        id: &'static str,
    },
}

/// One task of an [`Op::Workflow`], of type [`TASK_TYPE`] with payload "w".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowTask {
    /// The task ID.
    pub id: &'static str,
    /// The positions of the earlier tasks of the workflow it waits for; none for a root.
    pub after: Vec<usize>,
    /// Whether it runs anyway when a task it waits for fails (else it is cancelled).
    pub run_anyway: bool,
    /// For a root: scheduled this many seconds ahead rather than pending.
    pub delay: Option<u64>,
    /// Retention in seconds (0: none).
    pub retention: u64,
    /// Maximum retries.
    pub max_retry: u32,
}

/// The kind of error a call returned: what callers match on, without the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// [`Error::InvalidArgument`].
    InvalidArgument,
    /// [`Error::TaskIdConflict`].
    TaskIdConflict,
    /// [`Error::DuplicateTask`].
    DuplicateTask,
    /// [`Error::TaskNotFound`].
    TaskNotFound,
    /// [`Error::QueueNotFound`].
    QueueNotFound,
    /// [`Error::QueueNotEmpty`].
    QueueNotEmpty,
    /// [`Error::FailedPrecondition`].
    FailedPrecondition,
    /// Anything else (a backend failure, which the model never predicts), with its message.
    Other(String),
}

impl ErrorKind {
    /// The kind of `error`.
    pub fn of(error: &Error) -> Self {
        match error {
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::TaskIdConflict { .. } => ErrorKind::TaskIdConflict,
            Error::DuplicateTask { .. } => ErrorKind::DuplicateTask,
            Error::TaskNotFound { .. } => ErrorKind::TaskNotFound,
            Error::QueueNotFound { .. } => ErrorKind::QueueNotFound,
            Error::QueueNotEmpty { .. } => ErrorKind::QueueNotEmpty,
            Error::FailedPrecondition(_) => ErrorKind::FailedPrecondition,
            other => ErrorKind::Other(other.to_string()),
        }
    }
}

/// What an operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Success without a value.
    Ok,
    /// Success with a count.
    Count(usize),
    /// Success with tasks, as `(queue, id)`: dequeued ones in order, recovered ones sorted.
    Tasks(Vec<(String, String)>),
    /// Nothing was called (a finish without a message to finish).
    Skipped,
    /// One reply per item of a batch, in order.
    Each(Vec<Reply>),
    /// Failure.
    Err(ErrorKind),
}

impl Reply {
    /// The reply of a call that returns nothing.
    pub fn of_unit(result: asynq_core::Result<()>) -> Self {
        match result {
            Ok(()) => Reply::Ok,
            Err(e) => Reply::Err(ErrorKind::of(&e)),
        }
    }

    /// The reply of a call that returns a count.
    pub fn of_count(result: asynq_core::Result<usize>) -> Self {
        match result {
            Ok(n) => Reply::Count(n),
            Err(e) => Reply::Err(ErrorKind::of(&e)),
        }
    }
}

/// The sizes and counters of a queue the inspector shows (memory usage and latency aside).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Counts {
    /// Sum of the seven state counts.
    pub size: usize,
    /// Registered group names.
    pub groups: usize,
    /// Pending tasks.
    pub pending: usize,
    /// Active tasks.
    pub active: usize,
    /// Scheduled tasks.
    pub scheduled: usize,
    /// Retry tasks.
    pub retry: usize,
    /// Archived tasks.
    pub archived: usize,
    /// Completed tasks.
    pub completed: usize,
    /// Aggregating tasks in registered groups.
    pub aggregating: usize,
    /// Waiting workflow tasks (not part of `size`).
    pub waiting: usize,
    /// Processed today (UTC).
    pub processed: u64,
    /// Failed today (UTC).
    pub failed: u64,
    /// Processed ever.
    pub processed_total: u64,
    /// Failed ever.
    pub failed_total: u64,
    /// Whether the queue is paused.
    pub paused: bool,
}

impl From<&asynq_core::QueueInfo> for Counts {
    fn from(info: &asynq_core::QueueInfo) -> Self {
        Counts {
            size: info.size,
            groups: info.groups,
            pending: info.pending,
            active: info.active,
            scheduled: info.scheduled,
            retry: info.retry,
            archived: info.archived,
            completed: info.completed,
            aggregating: info.aggregating,
            waiting: info.waiting,
            processed: info.processed,
            failed: info.failed,
            processed_total: info.processed_total,
            failed_total: info.failed_total,
            paused: info.paused,
        }
    }
}

/// A task as a listing shows it, reduced to what the model tracks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    /// The task ID.
    pub id: String,
    /// How many failed attempts it has had.
    pub retried: u32,
    /// When a scheduled or retry task is due (Unix seconds); `None` in other states.
    pub due: Option<i64>,
}

/// What the inspector shows of one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueView {
    /// The queue's counts.
    pub counts: Result<Counts, ErrorKind>,
    /// Its tasks state by state, in [`OBSERVED_STATES`] order: pending and active in processing
    /// order, scheduled, retry, archived and completed by score then ID, aggregating sorted by
    /// ID (the order across groups is not specified), waiting sorted by ID.
    pub tasks: Vec<(TaskState, Result<Vec<Row>, ErrorKind>)>,
}

/// What the inspector shows of every queue of [`QUEUES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The known queues, sorted.
    pub queues: Vec<String>,
    /// Each queue of [`QUEUES`], in order.
    pub views: Vec<(String, QueueView)>,
    /// When asked for: `task_info` of every queue and ID of the pools, queue by queue, as the
    /// task's state and retry count. This also sees stored tasks that no listing shows.
    pub lookups: Vec<Lookup>,
}

/// One `task_info` call of an [`Observation`]: queue, ID, and the task's state and retry
/// count or the error.
pub type Lookup = (String, String, Result<(TaskState, u32), ErrorKind>);

/// Records that `tasks` were handed out, in order: each moves to the end of `handed`.
pub fn hand<K: PartialEq + Clone>(handed: &mut Vec<K>, tasks: &[K]) {
    for task in tasks {
        handed.retain(|h| h != task);
        handed.push(task.clone());
    }
}

/// The `pick`-th most recently handed task (modulo their number), as [`Op::Finish`] picks it.
pub fn pick_handed<K>(handed: &[K], pick: usize) -> Option<&K> {
    (!handed.is_empty()).then(|| &handed[handed.len() - 1 - pick % handed.len()])
}

/// The items of [`Op::FinishBatch`]: each pick resolved against `handed`, the first pick of a
/// task kept.
pub fn pick_batch<K: PartialEq + Clone>(handed: &[K], picks: &[(usize, FinishWith)]) -> Vec<(K, FinishWith)> {
    let mut items: Vec<(K, FinishWith)> = Vec::new();
    for (pick, with) in picks {
        if let Some(task) = pick_handed(handed, *pick)
            && !items.iter().any(|(t, _)| t == task)
        {
            items.push((task.clone(), *with));
        }
    }
    items
}

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
    /// The `group` field of the stored task: set only when enqueued straight into a group.
    group: Option<String>,
    /// How many times a started lease of it expired and was forgiven.
    stalls: u32,
    /// The debounce key it was enqueued with.
    debounce: Option<String>,
    /// Whether it belongs to a workflow (its settling passes its outcome on).
    workflow: bool,
    /// Its priority within its queue.
    priority: i8,
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

    /// Stores the workflow `tasks` of `queue`: the roots pending (in order) or scheduled, the
    /// others waiting. Refused before anything is written when an ID is used twice; refused
    /// with nothing stored but the queue's name when an ID is taken in the queue.
    fn store_workflow(&mut self, queue: &str, tasks: &[WorkflowTask]) -> Result<(), ErrorKind> {
        let ids: BTreeSet<&str> = tasks.iter().map(|t| t.id).collect();
        if ids.len() < tasks.len() {
            return Err(ErrorKind::InvalidArgument);
        }
        self.known.insert(queue.to_owned());
        let now = self.now;
        let q = self.queue(queue);
        if tasks.iter().any(|t| q.tasks.contains_key(t.id)) {
            return Err(ErrorKind::TaskIdConflict);
        }
        for (index, task) in tasks.iter().enumerate() {
            for &parent in &task.after {
                q.open.entry(tasks[parent].id.to_owned()).or_default().push(task.id.to_owned());
            }
            let state = if !task.after.is_empty() {
                let left = task.after.iter().map(|&parent| tasks[parent].id.to_owned()).collect();
                q.waiting.insert(task.id.to_owned(), Waiting { left, run_anyway: task.run_anyway });
                TaskState::Waiting
            } else if let Some(delay) = task.delay {
                q.scheduled.insert((now + delay as i64, task.id.to_owned()));
                TaskState::Scheduled
            } else {
                q.pending.push_back(task.id.to_owned(), 0);
                TaskState::Pending
            };
            debug_assert!(task.after.iter().all(|&parent| parent < index), "parents come first");
            let stored = Task {
                state,
                retry: task.max_retry,
                retried: 0,
                retention: task.retention as i64,
                unique: None,
                group: None,
                stalls: 0,
                debounce: None,
                workflow: true,
                priority: 0,
            };
            q.tasks.insert(task.id.to_owned(), stored);
        }
        Ok(())
    }

    /// Archives the waiting task `id` of `queue` unrun and passes its failure on; returns 1, or
    /// 0 when no such task waits.
    fn cancel_waiting(&mut self, queue: &str, id: &str) -> usize {
        let now = self.now;
        let q = self.queue(queue);
        if q.waiting.remove(id).is_none() {
            return 0;
        }
        q.archive(id, now);
        self.pass_on(queue, vec![(id.to_owned(), false)]);
        1
    }

    /// Passes the outcomes of the workflow tasks `settled` of `queue` (ID, and whether it
    /// succeeded) on to the tasks waiting for them, breadth first: each parent's dependents in
    /// plan order; a dependent whose last parent settled is released (pending), and one that
    /// does not run past a failed parent is archived without running or being counted, and its
    /// own failure is passed on after the dependents already due to hear.
    fn pass_on(&mut self, queue: &str, settled: Vec<(String, bool)>) {
        let now = self.now;
        let q = self.queue(queue);
        let mut due: VecDeque<(String, bool)> = settled.into();
        while let Some((parent, ok)) = due.pop_front() {
            for child in q.open.remove(&parent).unwrap_or_default() {
                let Some(waiting) = q.waiting.get_mut(&child) else { continue };
                if !waiting.left.remove(&parent) {
                    continue;
                }
                if !ok && !waiting.run_anyway {
                    q.waiting.remove(&child);
                    q.archive(&child, now);
                    due.push_back((child, false));
                } else if waiting.left.is_empty() {
                    q.waiting.remove(&child);
                    q.tasks.get_mut(&child).expect("a waiting task exists").state = TaskState::Pending;
                    q.pending.push_back(child, 0);
                }
            }
        }
    }

    /// The relay that follows every operation: in each queue, the workflow tasks others wait
    /// for that settled outside a worker's settling (an operator archived, deleted or ran and
    /// completed them), in ID order, pass their outcomes on: gone or completed as succeeded,
    /// archived as failed.
    fn relay(&mut self) {
        for name in QUEUES {
            let Some(q) = self.queues.get(name) else { continue };
            let settled: Vec<(String, bool)> = q
                .open
                .keys()
                .filter_map(|id| match q.tasks.get(id).map(|t| t.state) {
                    None | Some(TaskState::Completed) => Some((id.clone(), true)),
                    Some(TaskState::Archived) => Some((id.clone(), false)),
                    Some(_) => None,
                })
                .collect();
            self.pass_on(name, settled);
        }
    }

    fn enqueue(&mut self, task: &NewTask) -> Result<(), ErrorKind> {
        let NewTask { queue, id, payload, when, unique, retention, max_retry, priority } = *task;
        let now = self.now;
        // The queue is registered before the store is attempted, whatever its outcome.
        self.known.insert(queue.to_owned());
        let lock_key = (queue.to_owned(), payload.to_owned());
        if unique {
            let delay = match when {
                When::In(secs) | When::GroupIn(_, secs) => secs as i64,
                When::Now | When::Group(_) => 0,
            };
            if self.locks.get(&lock_key).is_some_and(|lock| lock.expires_at > now) {
                return Err(ErrorKind::DuplicateTask);
            }
            let expires_at = now + delay + UNIQUE_TTL.as_secs() as i64;
            self.locks.insert(lock_key.clone(), Lock { holder: id.to_owned(), expires_at });
        }
        let q = self.queue(queue);
        if q.tasks.contains_key(id) {
            // Go keeps the lock it just took.
            return Err(ErrorKind::TaskIdConflict);
        }
        let (state, group) = match when {
            When::Now => {
                q.pending.push_back(id.to_owned(), priority);
                (TaskState::Pending, None)
            }
            When::In(secs) | When::GroupIn(_, secs) => {
                q.scheduled.insert((now + secs as i64, id.to_owned()));
                (TaskState::Scheduled, None)
            }
            When::Group(group) => {
                q.groups.entry(group.to_owned()).or_default().insert((now, id.to_owned()));
                q.group_names.insert(group.to_owned());
                (TaskState::Aggregating, Some(group.to_owned()))
            }
        };
        let task = Task {
            state,
            retry: max_retry,
            retried: 0,
            retention: retention as i64,
            unique: unique.then_some(lock_key),
            group,
            stalls: 0,
            debounce: None,
            workflow: false,
            priority,
        };
        q.tasks.insert(id.to_owned(), task);
        Ok(())
    }

    fn debounce(&mut self, task: &NewTask, key: &str, window: u64) -> Result<(), ErrorKind> {
        let (queue, id) = (task.queue, task.id);
        self.known.insert(queue.to_owned());
        let mark = (queue.to_owned(), key.to_owned());
        let tasks = &self.queues.entry(queue.to_owned()).or_default().tasks;
        let old = self.debounce_marks.get(&mark).filter(|old| {
            tasks
                .get(old.as_str())
                .is_some_and(|t| t.state == TaskState::Scheduled && t.debounce.as_deref() == Some(key))
        });
        match old.cloned() {
            Some(old) if old == id => self.forget_waiting(queue, id),
            _ if self.queue(queue).tasks.contains_key(id) => return Err(ErrorKind::TaskIdConflict),
            Some(old) => self.forget_waiting(queue, &old),
            None => {}
        }
        self.store_waiting(task, Some(window), Some(key));
        self.debounce_marks.insert(mark, id.to_owned());
        Ok(())
    }

    fn replace(&mut self, task: &NewTask) -> Result<(), ErrorKind> {
        // The queue is registered before the replacement is attempted, whatever its outcome.
        self.known.insert(task.queue.to_owned());
        let state = self.task_state(task.queue, task.id)?;
        if !matches!(state, TaskState::Pending | TaskState::Scheduled) {
            return Err(ErrorKind::FailedPrecondition);
        }
        self.forget_waiting(task.queue, task.id);
        let delay = match task.when {
            When::In(secs) => Some(secs),
            _ => None,
        };
        self.store_waiting(task, delay, None);
        Ok(())
    }

    /// Takes waiting task `id` out of its container and forgets it, releasing its lock.
    fn forget_waiting(&mut self, queue: &str, id: &str) {
        self.queue(queue).detach(id);
        self.release(queue, id);
        self.queue(queue).tasks.remove(id);
    }

    /// Stores `task` as pending, or scheduled `delay` seconds ahead, holding no lock.
    fn store_waiting(&mut self, task: &NewTask, delay: Option<u64>, debounce: Option<&str>) {
        let now = self.now;
        let q = self.queue(task.queue);
        let state = match delay {
            Some(secs) => {
                q.scheduled.insert((now + secs as i64, task.id.to_owned()));
                TaskState::Scheduled
            }
            None => {
                q.pending.push_back(task.id.to_owned(), task.priority);
                TaskState::Pending
            }
        };
        let stored = Task {
            state,
            retry: task.max_retry,
            retried: 0,
            retention: task.retention as i64,
            unique: None,
            group: None,
            stalls: 0,
            debounce: debounce.map(str::to_owned),
            workflow: false,
            priority: task.priority,
        };
        q.tasks.insert(task.id.to_owned(), stored);
    }

    fn dequeue(&mut self, queues: &[&'static str], max: usize) -> Vec<(String, String)> {
        let now = self.now;
        let mut taken = Vec::new();
        for name in queues {
            let q = self.queue(name);
            if q.paused {
                continue;
            }
            while taken.len() < max {
                let Some(id) = q.pending.pop_front() else { break };
                if let Some(task) = q.tasks.get_mut(&id) {
                    task.state = TaskState::Active;
                }
                q.active.push(id.clone());
                q.lease.insert(id.clone(), now + LEASE_SECS);
                q.started.remove(&id);
                taken.push((name.to_string(), id));
            }
        }
        hand(&mut self.handed, &taken);
        taken
    }

    fn finish(&mut self, queue: &str, id: &str, with: FinishWith) -> Result<(), ErrorKind> {
        let now = self.now;
        let q = self.queue(queue);
        if !q.active.iter().any(|a| a == id) {
            return Err(ErrorKind::TaskNotFound);
        }
        q.active.retain(|a| a != id);
        q.lease.remove(id);
        let for_good = match with {
            FinishWith::Done | FinishWith::Complete => Some(true),
            FinishWith::Archive => Some(false),
            FinishWith::Retry { .. } | FinishWith::Requeue => None,
        };
        if let Some(ok) = for_good
            && q.tasks.get(id).is_some_and(|t| t.workflow)
        {
            self.settling.push((queue.to_owned(), id.to_owned(), ok));
        }
        let q = self.queue(queue);
        match with {
            FinishWith::Done => {
                q.count(now, false);
                self.release(queue, id);
                self.queue(queue).tasks.remove(id);
            }
            FinishWith::Complete => {
                q.count(now, false);
                let task = q.tasks.get_mut(id).expect("an active task exists");
                task.state = TaskState::Completed;
                let expires_at = now + task.retention;
                q.completed.insert((expires_at, id.to_owned()));
                self.release(queue, id);
            }
            FinishWith::Retry { in_secs, is_failure } => {
                if is_failure {
                    q.count(now, true);
                }
                let task = q.tasks.get_mut(id).expect("an active task exists");
                task.state = TaskState::Retry;
                if is_failure {
                    task.retried += 1;
                }
                q.retry.insert((now + in_secs as i64, id.to_owned()));
            }
            FinishWith::Archive => {
                q.count(now, true);
                q.archive(id, now);
            }
            FinishWith::Requeue => {
                let task = q.tasks.get_mut(id).expect("an active task exists");
                task.state = TaskState::Pending;
                let priority = task.priority;
                q.pending.push_front(id.to_owned(), priority);
            }
        }
        Ok(())
    }

    fn forward(&mut self, queue: &str) -> usize {
        let now = self.now;
        let q = self.queue(queue);
        let mut moved = 0;
        for state in [TaskState::Scheduled, TaskState::Retry] {
            let due: Vec<(i64, String)> = q.zset(state).iter().filter(|(score, _)| *score <= now).cloned().collect();
            for entry in due {
                q.zset(state).remove(&entry);
                let id = entry.1;
                let task = q.tasks.get_mut(&id).expect("a due task exists");
                match task.group.clone() {
                    Some(group) => {
                        // Back into its group, without registering the group name (Go's forward).
                        task.state = TaskState::Aggregating;
                        q.groups.entry(group).or_default().insert((now, id));
                    }
                    None => {
                        task.state = TaskState::Pending;
                        let priority = task.priority;
                        q.pending.push_back(id, priority);
                    }
                }
                moved += 1;
            }
        }
        moved
    }

    fn recover(&mut self, queues: &[&'static str]) -> Reply {
        let cutoff = self.now - LEASE_SECS;
        let mut expired = Vec::new();
        for name in queues {
            let q = self.queue(name);
            for (id, &expiry) in &q.lease {
                if expiry <= cutoff {
                    expired.push((name.to_string(), id.clone()));
                }
            }
        }
        expired.sort();
        expired.dedup();
        for (queue, id) in &expired {
            let q = &self.queues[queue];
            let task = &q.tasks[id];
            let stalled = q.started.contains(id) && task.stalls < FREE_STALLS;
            let with = if !q.started.contains(id) || stalled {
                FinishWith::Requeue
            } else if task.retried >= task.retry {
                FinishWith::Archive
            } else {
                FinishWith::Retry { in_secs: RECOVER_RETRY_DELAY.as_secs(), is_failure: true }
            };
            if let Err(kind) = self.finish(queue, id, with) {
                return Reply::Err(kind);
            }
            if stalled && let Some(task) = self.queue(queue).tasks.get_mut(id) {
                task.stalls += 1;
            }
        }
        hand(&mut self.handed, &expired);
        Reply::Tasks(expired)
    }

    fn janitor(&mut self, queue: &str, batch: usize) -> usize {
        let now = self.now;
        let q = self.queue(queue);
        let expired: Vec<(i64, String)> =
            q.completed.iter().filter(|(score, _)| *score <= now).take(batch).cloned().collect();
        for entry in &expired {
            q.completed.remove(entry);
            q.tasks.remove(&entry.1);
        }
        expired.len()
    }

    fn task_state(&self, queue: &str, id: &str) -> Result<TaskState, ErrorKind> {
        self.check_known(queue)?;
        self.queues.get(queue).and_then(|q| q.tasks.get(id)).map(|t| t.state).ok_or(ErrorKind::TaskNotFound)
    }

    fn run_task(&mut self, queue: &str, id: &str) -> Result<(), ErrorKind> {
        match self.task_state(queue, id)? {
            TaskState::Active | TaskState::Pending | TaskState::Waiting => Err(ErrorKind::FailedPrecondition),
            _ => {
                let q = self.queue(queue);
                q.detach(id);
                let task = q.tasks.get_mut(id).expect("the task exists");
                task.state = TaskState::Pending;
                let priority = task.priority;
                q.pending.push_back(id.to_owned(), priority);
                Ok(())
            }
        }
    }

    fn archive_task(&mut self, queue: &str, id: &str) -> Result<(), ErrorKind> {
        let now = self.now;
        match self.task_state(queue, id)? {
            TaskState::Active | TaskState::Archived | TaskState::Waiting => Err(ErrorKind::FailedPrecondition),
            _ => {
                let q = self.queue(queue);
                q.detach(id);
                q.archive(id, now);
                Ok(())
            }
        }
    }

    fn delete_task(&mut self, queue: &str, id: &str) -> Result<(), ErrorKind> {
        match self.task_state(queue, id)? {
            TaskState::Active | TaskState::Waiting => Err(ErrorKind::FailedPrecondition),
            _ => {
                self.queue(queue).detach(id);
                self.release(queue, id);
                self.queue(queue).tasks.remove(id);
                Ok(())
            }
        }
    }

    /// The IDs of `set`, taken out of their container, in container order. Refuses a state the
    /// action does not apply to (`allowed`) before looking at the queue, as `validate_bulk` does.
    fn take_set(&mut self, queue: &str, set: Set, allowed: &[TaskState]) -> Result<Vec<String>, ErrorKind> {
        if let Set::State(state) = set
            && !allowed.contains(&state)
        {
            return Err(ErrorKind::InvalidArgument);
        }
        self.check_known(queue)?;
        let q = self.queue(queue);
        let ids = match set {
            Set::State(TaskState::Pending) => q.pending.take_all(),
            Set::State(state) => std::mem::take(q.zset(state)).into_iter().map(|(_, id)| id).collect(),
            Set::Group(group) => {
                q.group_names.remove(group);
                q.groups.remove(group).unwrap_or_default().into_iter().map(|(_, id)| id).collect()
            }
        };
        Ok(ids)
    }

    fn run_all(&mut self, queue: &str, set: Set) -> Result<usize, ErrorKind> {
        use TaskState::*;
        let ids = self.take_set(queue, set, &[Scheduled, Retry, Archived])?;
        let q = self.queue(queue);
        for id in &ids {
            let task = q.tasks.get_mut(id).expect("a listed task exists");
            task.state = Pending;
            let priority = task.priority;
            q.pending.push_back(id.clone(), priority);
        }
        Ok(ids.len())
    }

    fn archive_all(&mut self, queue: &str, set: Set) -> Result<usize, ErrorKind> {
        use TaskState::*;
        let now = self.now;
        let ids = self.take_set(queue, set, &[Pending, Scheduled, Retry])?;
        let q = self.queue(queue);
        for id in &ids {
            q.archive(id, now);
        }
        // As Go's archiveAll scripts do, the archive is trimmed even when nothing was archived.
        q.trim_archive(now);
        Ok(ids.len())
    }

    fn delete_all(&mut self, queue: &str, set: Set) -> Result<usize, ErrorKind> {
        use TaskState::*;
        let ids = self.take_set(queue, set, &[Pending, Scheduled, Retry, Archived, Completed])?;
        for id in &ids {
            self.release(queue, id);
            self.queue(queue).tasks.remove(id);
        }
        Ok(ids.len())
    }

    fn delete_queue(&mut self, queue: &str, force: bool) -> Result<(), ErrorKind> {
        self.check_known(queue)?;
        let q = self.queue(queue);
        let held = !q.pending.is_empty()
            || !q.active.is_empty()
            || !q.scheduled.is_empty()
            || !q.retry.is_empty()
            || !q.archived.is_empty();
        if held && !force {
            return Err(ErrorKind::QueueNotEmpty);
        }
        if !q.active.is_empty() {
            return Err(ErrorKind::FailedPrecondition);
        }
        let mut doomed: Vec<String> = q.pending.take_all();
        for state in [TaskState::Scheduled, TaskState::Retry, TaskState::Archived] {
            doomed.extend(std::mem::take(q.zset(state)).into_iter().map(|(_, id)| id));
        }
        let now = self.now;
        for id in doomed {
            // Unlike Go's, a forced removal releases the locks the deleted tasks hold.
            self.release(queue, &id);
            let q = self.queue(queue);
            q.tasks.remove(&id);
            // A task others wait for vanished: each still waiting for it is archived unrun,
            // whatever its policy, and its failure flows on.
            let mut failed = Vec::new();
            for child in q.open.remove(&id).unwrap_or_default() {
                if q.waiting.remove(&child).is_some() {
                    q.archive(&child, now);
                    failed.push((child, false));
                }
            }
            self.pass_on(queue, failed);
        }
        self.known.remove(queue);
        Ok(())
    }

    /// What the inspector shows now; with `lookups`, including every task looked up by ID.
    pub fn observe(&self, lookups: bool) -> Observation {
        let views = QUEUES.iter().map(|name| (name.to_string(), self.view(name))).collect();
        let mut found = Vec::new();
        if lookups {
            for queue in QUEUES {
                for id in IDS {
                    let info = self.check_known(queue).and_then(|()| {
                        let task = self.queues.get(queue).and_then(|q| q.tasks.get(id));
                        task.map(|t| (t.state, t.retried)).ok_or(ErrorKind::TaskNotFound)
                    });
                    found.push((queue.to_owned(), id.to_owned(), info));
                }
            }
        }
        Observation { queues: self.known.iter().cloned().collect(), views, lookups: found }
    }

    fn view(&self, name: &str) -> QueueView {
        let empty = Queue::default();
        let q = self.queues.get(name).unwrap_or(&empty);
        let row = |id: &String| Row { id: id.clone(), retried: q.tasks[id].retried, due: None };
        let zrows = |set: &ZSet| set.iter().map(|(_, id)| row(id)).collect::<Vec<_>>();
        let due_rows =
            |set: &ZSet| set.iter().map(|(score, id)| Row { due: Some(*score), ..row(id) }).collect::<Vec<_>>();
        let tasks = OBSERVED_STATES
            .into_iter()
            .map(|state| {
                let rows = match state {
                    TaskState::Active => q.active.iter().map(row).collect(),
                    TaskState::Pending => q.pending.iter().map(row).collect(),
                    TaskState::Scheduled => due_rows(&q.scheduled),
                    TaskState::Retry => due_rows(&q.retry),
                    TaskState::Archived => zrows(&q.archived),
                    TaskState::Completed => zrows(&q.completed),
                    TaskState::Aggregating => {
                        let mut rows: Vec<Row> =
                            q.group_names.iter().filter_map(|g| q.groups.get(g)).flat_map(zrows).collect();
                        rows.sort();
                        rows
                    }
                    TaskState::Waiting => q.waiting.keys().map(row).collect(),
                };
                let listed = if self.known.contains(name) { Ok(rows) } else { Err(ErrorKind::QueueNotFound) };
                (state, listed)
            })
            .collect();
        let counts = self.check_known(name).map(|()| {
            let aggregating = q.group_names.iter().filter_map(|g| q.groups.get(g)).map(BTreeSet::len).sum();
            let (processed, failed) = q.daily.get(&self.now.div_euclid(DAY_SECS)).copied().unwrap_or_default();
            let mut counts = Counts {
                size: 0,
                groups: q.group_names.len(),
                pending: q.pending.len(),
                active: q.active.len(),
                scheduled: q.scheduled.len(),
                retry: q.retry.len(),
                archived: q.archived.len(),
                completed: q.completed.len(),
                aggregating,
                waiting: q.waiting.len(),
                processed,
                failed,
                processed_total: q.processed_total,
                failed_total: q.failed_total,
                paused: q.paused,
            };
            counts.size = counts.pending
                + counts.active
                + counts.scheduled
                + counts.retry
                + counts.archived
                + counts.completed
                + counts.aggregating;
            counts
        });
        QueueView { counts, tasks }
    }
}

impl fmt::Display for Observation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "known queues: {:?}", self.queues)?;
        for (name, view) in &self.views {
            writeln!(f, "{name}: {:?}", view.counts)?;
            for (state, rows) in &view.tasks {
                match rows {
                    Ok(rows) if rows.is_empty() => {}
                    Ok(rows) => {
                        let shown: Vec<String> = rows
                            .iter()
                            .map(|r| match r.due {
                                Some(due) => format!("{}/{}@{due}", r.id, r.retried),
                                None => format!("{}/{}", r.id, r.retried),
                            })
                            .collect();
                        writeln!(f, "  {state}: {}", shown.join(" "))?;
                    }
                    Err(kind) if view.counts.as_ref().err() == Some(kind) => {}
                    Err(kind) => writeln!(f, "  {state}: {kind:?}")?,
                }
            }
        }
        for (queue, id, info) in &self.lookups {
            writeln!(f, "task {queue}/{id}: {info:?}")?;
        }
        Ok(())
    }
}
