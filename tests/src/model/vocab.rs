//! The model's vocabulary, shared with the test that drives real brokers: the name pools and
//! constants, the operations ([`Op`]), their replies ([`Reply`], [`ErrorKind`]), what the
//! inspector shows ([`Observation`]), and the helpers that pick handed-out tasks.

use asynq_core::{Error, GroupName, TaskSet, TaskState};
use std::time::Duration;

/// The queues operations pick from.
pub const QUEUES: [&str; 2] = ["q0", "q1"];
/// The task IDs operations pick from (per queue: the same ID may live in both queues).
pub const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
/// The payloads enqueued tasks carry; a unique task's lock is per queue, type and payload.
pub const PAYLOADS: [&str; 2] = ["x", "y"];
/// The groups grouped tasks join.
pub const GROUPS: [&str; 2] = ["g0", "g1"];
/// The names of durable steps recorded ([`Op::RecordStep`]).
pub const STEPS: [&str; 2] = ["s0", "s1"];
/// The names of the signals sent ([`Op::Signal`]) and waited for ([`Op::Park`]).
pub const SIGNALS: [&str; 2] = ["go", "stop"];
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

/// Why a handler parks its task ([`Op::Park`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ParkFor {
    /// A durable sleep.
    Sleep,
    /// A wait for the signal of this name (from [`SIGNALS`]).
    Signal(&'static str),
}

/// Why a task the inspector looks up is parked, while it is scheduled: the reason and when it
/// goes on at the latest (Unix seconds).
pub type ParkedView = (ParkFor, i64);

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
    /// scheduled with the key and has not started (parked). The task's `when` and `unique` are
    /// not used.
    Debounce {
        /// The task.
        task: NewTask,
        /// The debounce key.
        key: &'static str,
        /// The window, seconds.
        window: u64,
    },
    /// A client replaces the waiting (pending or scheduled) task `task.id` of `task.queue`,
    /// unless it has started (parked, or with step records), with `task`, pending or scheduled
    /// as its `when` says (`Now` or `In`); `unique` is not used.
    Replace(NewTask),
    /// A client stores a workflow of tasks of `queue` in one call (see [`WorkflowTask`]).
    /// Every operation is followed by a relay of every queue (see [`Model::apply`](super::Model::apply)).
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
    /// A handler records the durable step `step` of the task handed out `pick`-th from the
    /// most recent (`Steps::record_step`): only a task that is active now takes it, and its
    /// records go when the task goes.
    RecordStep {
        /// Which handed-out task (see [`pick_handed`]).
        pick: usize,
        /// The step's name.
        step: &'static str,
    },
    /// A handler parks the task handed out `pick`-th from the most recent (`Steps::park`): only
    /// an active task is parked; it is scheduled until `secs` from now (at once when it waits
    /// for a signal it was sent already), charged nothing, with `step` recorded when given.
    Park {
        /// Which handed-out task (see [`pick_handed`]).
        pick: usize,
        /// A sleep or a wait for a signal.
        why: ParkFor,
        /// Seconds from now until it goes on at the latest.
        secs: u64,
        /// The step recorded with it (the sleep's or wait's own), if any.
        step: Option<&'static str>,
    },
    /// A client sends signal `name` to a task (`Steps::signal`): kept with the task whatever
    /// its state, and a task parked waiting for it is made pending. Replies with a count: 1
    /// when it woke the task, else 0.
    Signal {
        /// The task.
        to: Target,
        /// The signal's name (from [`SIGNALS`]).
        name: &'static str,
    },
}

/// The task an [`Op::Signal`] goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The task handed out `pick`-th from the most recent (see [`pick_handed`]), likely parked;
    /// skipped before any task was handed out.
    Handed(usize),
    /// Task `id` of `queue`, whether or not it exists.
    Task(&'static str, &'static str),
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
    /// With the lookups: the names of the durable steps recorded for every queue and ID of the
    /// pools (`Steps::step_records`), sorted; empty for a task that has none or does not exist.
    pub steps: Vec<(String, String, Vec<String>)>,
    /// With the lookups: the names of [`SIGNALS`] kept for every queue and ID of the pools
    /// (`Steps::signal_value` is some), in pool order.
    pub signals: Vec<(String, String, Vec<String>)>,
}

/// One `task_info` call of an [`Observation`]: queue, ID, and the task's state, retry count
/// and why it is parked while it is scheduled ([`ParkedView`]), or the error.
pub type Lookup = (String, String, Result<(TaskState, u32, Option<ParkedView>), ErrorKind>);

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
