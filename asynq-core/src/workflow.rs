//! Workflows: tasks that run only once the tasks they wait for have settled, with their results
//! passed on. A workflow is described by a [`Flow`]: a task, a chain (each part waits for the
//! one before it), a group (its parts run side by side; what follows waits for all of them, as
//! a chord's callback does), or a DAG whose tasks name the tasks they wait for; shapes nest.
//!
//! [`Flow::plan`] checks a whole workflow before anything is written and resolves it into a
//! [`WorkflowPlan`]: every task's enqueue request and the ordered list of its parents (a chord's
//! callback gets its members in member order), parents first. A DAG's tasks have names, which
//! its tasks wait for by; a name holds within one run of the workflow, and each run's tasks get
//! fresh IDs unless the caller set one ([`TaskOptions::task_id`]), so one definition runs as often
//! as it is stored. Bad input (an empty chain, group or DAG, a task ID or name used twice, a
//! dependency on a task outside its DAG, a cycle, more tasks than the limit, options a waiting
//! task cannot have) is refused with [`Error::InvalidArgument`] naming the problem.
//!
//! Storing a plan and releasing its tasks as their parents settle is the brokers' part, the
//! [`Workflows`](crate::broker::Workflows) capability: every task of a plan carries the [`WORKFLOW_HEADER`], so that the
//! broker settling it knows to pass its outcome on.

use crate::{EnqueueRequest, Error, QueueName, StoredTask, Task, TaskId, TaskOptions, WorkflowId};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

mod plan;

/// The most tasks one workflow holds unless [`Flow::plan`] is given another limit.
pub const DEFAULT_MAX_WORKFLOW_TASKS: usize = 100_000;

/// The task header every task of a workflow carries, its value the workflow's ID. Go asynq
/// passes it through to its handlers like any header.
pub const WORKFLOW_HEADER: &str = "asynq-workflow";

/// How long the outcome of a workflow task that settled for good is kept for the tasks that
/// wait for it: a dependent released later than this after its parent settled sees that parent
/// as [`ParentOutcome::Unknown`].
pub const WORKFLOW_RESULT_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The error a waiting task is archived with when its whole workflow is cancelled
/// ([`Workflows::cancel_waiting`](crate::broker::Workflows::cancel_waiting)): it never ran, and the tasks waiting for it see it failed.
pub const WORKFLOW_CANCELLED_ERROR: &str = "workflow: cancelled before it ran";

/// The start of the error a task of a cancelled workflow is archived with when it was running as
/// the cancel came (or failed after it): this, `": "`, and the attempt's own error. A task of a
/// cancelled workflow is never retried.
pub const WORKFLOW_STOPPED_ERROR: &str = "workflow: cancelled while it ran";

/// Whether `error`, a task's last error, says that its workflow was cancelled: it is
/// [`WORKFLOW_CANCELLED_ERROR`] or starts with [`WORKFLOW_STOPPED_ERROR`].
pub fn is_cancelled_error(error: &str) -> bool {
    error == WORKFLOW_CANCELLED_ERROR || error.starts_with(WORKFLOW_STOPPED_ERROR)
}

/// The error a waiting task is archived with when a task it waits for failed for good under
/// [`OnParentFailure::FailWorkflow`]: it never ran, and the tasks waiting for it see it failed.
pub const PARENT_FAILED_ERROR: &str = "workflow: a task it waits for failed, so it did not run";

/// The start of the error a waiting task is archived with when a task it waits for vanished:
/// removed, unsettled, with its queue (an operator's forced queue removal, ours or Go's
/// `asynq queue rm --force`, deletes the queue's tasks but not the tasks waiting for them). Such
/// a task never runs, whatever its [`OnParentFailure`]; see [`parent_vanished_error`].
pub const PARENT_VANISHED_ERROR: &str = "workflow: a task it waits for vanished";

/// The error a waiting task is archived with when `parent` vanished (see
/// [`PARENT_VANISHED_ERROR`]), naming it.
pub fn parent_vanished_error(parent: &TaskRef) -> String {
    format!(
        "{PARENT_VANISHED_ERROR}: task {} of queue {:?} was removed with its queue before it settled, so it did not run",
        parent.id, parent.queue
    )
}

/// What a task does when a task it waits for fails for good (is archived).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnParentFailure {
    /// The workflow fails: this task, and every task waiting for it, is cancelled.
    #[default]
    FailWorkflow,
    /// The task runs anyway, once every parent has settled, and sees which parents failed.
    RunAnyway,
}

/// One task of a workflow: the task, its options, and its policy when a parent fails.
#[derive(Debug, Clone)]
pub struct Step {
    task: Task,
    options: TaskOptions,
    on_parent_failure: OnParentFailure,
}

impl Step {
    /// `task` with `options` over its own, failing the workflow if a parent fails.
    pub fn new(task: Task, options: TaskOptions) -> Self {
        Self { task, options, on_parent_failure: OnParentFailure::default() }
    }

    /// This step, with `policy` when a parent fails for good.
    pub fn on_parent_failure(mut self, policy: OnParentFailure) -> Self {
        self.on_parent_failure = policy;
        self
    }
}

/// A task of a [`Flow::dag`]: its name (which the others name to wait for it), its step, and
/// the names of the tasks of the same DAG it waits for, in the order its handler sees their
/// results.
///
/// The name holds within one run of the workflow; it is not the task's ID. Each run's task gets a
/// fresh ID (a UUID v4 when the client's `FlowProducer` stores it), unless `options` set one
/// ([`TaskOptions::task_id`]), which then holds for every run: storing the workflow again while
/// that task is kept is refused as a conflicting ID. The name → task map of a stored run is
/// [`WorkflowPlan::names`]. Names are unique within a workflow, across its DAGs.
#[derive(Debug, Clone)]
pub struct DagTask {
    name: String,
    step: Step,
    after: Vec<String>,
}

impl DagTask {
    /// Task `name` of a DAG, running `task` with `options`, waiting for nothing yet.
    pub fn new(name: impl Into<String>, task: Task, options: TaskOptions) -> Self {
        Self { name: name.into(), step: Step::new(task, options), after: Vec::new() }
    }

    /// This task, waiting for the tasks named `names` of its DAG too.
    pub fn after<I: Into<String>>(mut self, names: impl IntoIterator<Item = I>) -> Self {
        self.after.extend(names.into_iter().map(Into::into));
        self
    }

    /// This task, with `policy` when a parent fails for good.
    pub fn on_parent_failure(mut self, policy: OnParentFailure) -> Self {
        self.step = self.step.on_parent_failure(policy);
        self
    }
}

/// The shape of a workflow, or of a part of one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Flow {
    /// One task.
    Task(Box<Step>),
    /// Parts that run one after the other: each waits for the last tasks of the one before.
    Chain(Vec<Flow>),
    /// Parts that run side by side; what follows waits for the last tasks of every one.
    Group(Vec<Flow>),
    /// Tasks that name the tasks they wait for.
    Dag(Vec<DagTask>),
}

impl Flow {
    /// One task, `task` with `options` over its own.
    pub fn task(task: Task, options: TaskOptions) -> Self {
        Flow::Task(Box::new(Step::new(task, options)))
    }

    /// One step.
    pub fn step(step: Step) -> Self {
        Flow::Task(Box::new(step))
    }

    /// `parts` one after the other.
    pub fn chain(parts: impl IntoIterator<Item = Flow>) -> Self {
        Flow::Chain(parts.into_iter().collect())
    }

    /// `parts` side by side.
    pub fn group(parts: impl IntoIterator<Item = Flow>) -> Self {
        Flow::Group(parts.into_iter().collect())
    }

    /// The group `members`, then `callback`, which waits for them all and gets their results
    /// in member order (a chord).
    pub fn chord(members: impl IntoIterator<Item = Flow>, callback: Flow) -> Self {
        Flow::Chain(vec![Flow::group(members), callback])
    }

    /// `tasks`, each waiting for the tasks of this DAG it names.
    pub fn dag(tasks: impl IntoIterator<Item = DagTask>) -> Self {
        Flow::Dag(tasks.into_iter().collect())
    }

    /// This flow, then `next`.
    pub fn then(self, next: Flow) -> Self {
        match self {
            Flow::Chain(mut parts) => {
                parts.push(next);
                Flow::Chain(parts)
            }
            first => Flow::Chain(vec![first, next]),
        }
    }
}

/// Where a task is: its queue and its ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskRef {
    /// The task's queue.
    pub queue: QueueName,
    /// The task's ID.
    pub id: TaskId,
}

impl TaskRef {
    /// Where `message` is stored.
    pub fn of(message: &StoredTask) -> Self {
        Self { queue: message.queue.clone(), id: message.id.clone() }
    }
}

/// A checked workflow: its ID and its tasks, each after every task it waits for.
#[derive(Debug, Clone)]
pub struct WorkflowPlan {
    /// The workflow's ID, in every task's [`WORKFLOW_HEADER`].
    pub id: WorkflowId,
    /// Parents first.
    pub tasks: Vec<PlannedTask>,
}

impl WorkflowPlan {
    /// The tasks that wait for nothing: those a broker makes pending (or scheduled) at once.
    pub fn roots(&self) -> impl Iterator<Item = &PlannedTask> {
        self.tasks.iter().filter(|task| task.parents.is_empty())
    }

    /// What a broker keeps of this plan for operators ([`Workflows::workflow_tasks`](crate::broker::Workflows::workflow_tasks)): each
    /// task, in plan order, with its parents as positions in that order.
    pub fn nodes(&self) -> Vec<WorkflowNode> {
        let positions: HashMap<TaskRef, usize> =
            self.tasks.iter().enumerate().map(|(index, task)| (TaskRef::of(&task.request.message), index)).collect();
        self.tasks
            .iter()
            .map(|task| WorkflowNode {
                task: TaskRef::of(&task.request.message),
                parents: task.parents.iter().map(|parent| positions[parent]).collect(),
                name: task.name.clone(),
                type_name: Some(task.request.message.type_name.clone()),
            })
            .collect()
    }

    /// Each DAG task's name with where this run stored it.
    pub fn names(&self) -> BTreeMap<String, TaskRef> {
        self.tasks.iter().filter_map(|task| Some((task.name.clone()?, TaskRef::of(&task.request.message)))).collect()
    }
}

/// One task of a [`WorkflowPlan`].
#[derive(Debug, Clone)]
pub struct PlannedTask {
    /// Its name, for a task of a DAG ([`DagTask`]).
    pub name: Option<String>,
    /// What to store once its parents have settled (at once for a root).
    pub request: EnqueueRequest,
    /// The tasks it waits for, in the order its handler sees their results.
    pub parents: Vec<TaskRef>,
    /// The tasks that wait for it, in plan order.
    pub children: Vec<TaskRef>,
    /// What it does when a parent fails for good.
    pub on_parent_failure: OnParentFailure,
    /// The key that places it on a shard when its queue is sharded
    /// ([`TaskOptions::shard_key`](crate::TaskOptions::shard_key)), for a producer that places
    /// tasks on shards.
    pub shard_key: Option<String>,
}

/// One task of a stored workflow's record, as [`Workflows::workflow_tasks`](crate::broker::Workflows::workflow_tasks) lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowNode {
    /// Where the task is.
    pub task: TaskRef,
    /// The tasks it waits for, as positions in the same list, in the order its handler sees
    /// their results. The list is in plan order, parents first, so each is smaller than the
    /// task's own position.
    pub parents: Vec<usize>,
    /// Its name, for a task of a DAG ([`DagTask`]).
    pub name: Option<String>,
    /// Its task type, kept so that operators can tell what a task that is gone was; `None` in
    /// a record a version that kept no types wrote.
    pub type_name: Option<String>,
}

/// The refusal of an operator's action (run, archive, delete) on the workflow task `id` while it
/// waits for others: [`Error::FailedPrecondition`], pointing at cancelling the workflow.
pub fn waiting_task_refused(id: &TaskId) -> Error {
    Error::FailedPrecondition(format!(
        "task {id} waits for other tasks of its workflow; cancel the workflow instead (asynq workflow cancel)"
    ))
}

/// A stored workflow, as [`Workflows::list_workflows`](crate::broker::Workflows::list_workflows) lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowSummary {
    /// Its ID.
    pub id: WorkflowId,
    /// When it was stored, in whole seconds.
    pub created_at: SystemTime,
    /// How many tasks it has.
    pub tasks: usize,
    /// Whether it was cancelled ([`Workflows::mark_cancelled`](crate::broker::Workflows::mark_cancelled)).
    pub cancelled: bool,
}

/// What cancelling a workflow did, as the cancel that marked it recorded it
/// ([`Workflows::record_cancellation`](crate::broker::Workflows::record_cancellation)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkflowCancellation {
    /// Tasks archived without running further.
    pub archived: usize,
    /// Running tasks whose servers were asked to stop them (each is archived, not retried, once
    /// its attempt ends).
    pub stopping: usize,
}

/// What [`Workflows::mark_cancelled`](crate::broker::Workflows::mark_cancelled) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelMark {
    /// This call marked the workflow cancelled.
    Marked,
    /// An earlier call marked it and has not recorded what it did (it is under way, or it
    /// stopped half-way): the caller does the cancel's work again.
    Unfinished,
    /// An earlier cancel marked it and did this.
    Done(WorkflowCancellation),
}

/// How a task that another waits for settled for good, as its dependent sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParentOutcome {
    /// It succeeded, with the result its handler wrote, if any.
    Succeeded {
        /// What its handler wrote through its result writer.
        result: Option<Bytes>,
    },
    /// It failed for good (it was archived), with its last error; a task that never ran because
    /// one of its own parents failed has [`PARENT_FAILED_ERROR`].
    Failed {
        /// Its last error message.
        error: String,
    },
    /// Its outcome is not known: it settled more than [`WORKFLOW_RESULT_TTL`] ago, or (asked
    /// of a task still waiting) it has not settled yet.
    Unknown,
}

/// A parent of a workflow task and how it settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentResult {
    /// The parent.
    pub task: TaskRef,
    /// How it settled.
    pub outcome: ParentOutcome,
}
