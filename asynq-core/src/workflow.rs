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

use crate::{
    EnqueueRequest, Error, Placement, QueueName, Result, StoredTask, Task, TaskId, TaskOptions, WorkflowId,
    resolve_enqueue,
};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

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

    /// Checks the whole workflow and resolves it at `now`, at most `max_tasks` tasks, task IDs
    /// not given (in [`TaskOptions::task_id`]) taken from `new_id`, DAG tasks' names included.
    ///
    /// Errors: [`Error::InvalidArgument`] (field `"workflow"`, or the field of a task's bad
    /// option) naming the problem; nothing is resolved further once one is found.
    pub fn plan(&self, max_tasks: usize, now: SystemTime, mut new_id: impl FnMut() -> String) -> Result<WorkflowPlan> {
        let mut planner = Planner { nodes: Vec::new(), ids: HashMap::new(), names: HashMap::new(), max_tasks, now };
        planner.walk(self, "the workflow", &mut new_id)?;
        let order = planner.topological_order()?;
        let Planner { nodes, .. } = planner;
        for node in &nodes {
            check_options(node)?;
        }
        let id = WorkflowId::new(new_id()).map_err(|e| refused(format!("its generated ID: {e}")))?;
        let refs: Vec<TaskRef> = nodes.iter().map(|node| TaskRef::of(&node.request.message)).collect();
        let mut children: Vec<Vec<TaskRef>> = vec![Vec::new(); nodes.len()];
        for (index, node) in nodes.iter().enumerate() {
            for &parent in &node.parents {
                children[parent].push(refs[index].clone());
            }
        }
        let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
        let tasks = order
            .into_iter()
            .map(|index| {
                let mut node = slots[index].take().expect("each node is ordered once");
                node.request.message.headers.insert(WORKFLOW_HEADER.to_owned(), id.to_string());
                PlannedTask {
                    name: node.name,
                    parents: node.parents.iter().map(|&parent| refs[parent].clone()).collect(),
                    children: std::mem::take(&mut children[index]),
                    request: node.request,
                    on_parent_failure: node.on_parent_failure,
                }
            })
            .collect();
        Ok(WorkflowPlan { id, tasks })
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

struct Node {
    /// Its DAG name, if any.
    name: Option<String>,
    request: EnqueueRequest,
    /// Indexes of the nodes it waits for, in order.
    parents: Vec<usize>,
    on_parent_failure: OnParentFailure,
}

struct Planner {
    nodes: Vec<Node>,
    ids: HashMap<TaskId, usize>,
    /// The DAG names used, each once in a workflow.
    names: HashMap<String, usize>,
    max_tasks: usize,
    now: SystemTime,
}

/// The first and last tasks of a part of a flow: those that wait for what comes before it, and
/// those that what follows waits for.
struct Ends {
    first: Vec<usize>,
    last: Vec<usize>,
}

fn refused(reason: impl Into<String>) -> Error {
    Error::invalid("workflow", reason)
}

impl Planner {
    fn add(&mut self, step: &Step, name: Option<&str>, new_id: &mut dyn FnMut() -> String) -> Result<usize> {
        if self.nodes.len() == self.max_tasks {
            return Err(refused(format!("more than {} tasks, the limit of one workflow", self.max_tasks)));
        }
        let index = self.nodes.len();
        if let Some(name) = name
            && self.names.insert(name.to_owned(), index).is_some()
        {
            return Err(refused(format!("task name {name:?} is used twice")));
        }
        let request = resolve_enqueue(&step.task, &step.options, self.now, new_id)?;
        if self.ids.insert(request.message.id.clone(), index).is_some() {
            return Err(refused(format!("task ID {} is used twice", request.message.id)));
        }
        self.nodes.push(Node {
            name: name.map(str::to_owned),
            request,
            parents: Vec::new(),
            on_parent_failure: step.on_parent_failure,
        });
        Ok(index)
    }

    fn walk(&mut self, flow: &Flow, at: &str, new_id: &mut dyn FnMut() -> String) -> Result<Ends> {
        match flow {
            Flow::Task(step) => {
                let index = self.add(step, None, new_id)?;
                Ok(Ends { first: vec![index], last: vec![index] })
            }
            Flow::Chain(parts) => {
                if parts.is_empty() {
                    return Err(refused(format!("{at} is an empty chain")));
                }
                let mut ends: Option<Ends> = None;
                for (n, part) in parts.iter().enumerate() {
                    let next = self.walk(part, &format!("step {} of the chain in {at}", n + 1), new_id)?;
                    ends = Some(match ends {
                        None => next,
                        Some(before) => {
                            for &index in &next.first {
                                let parents = &mut self.nodes[index].parents;
                                parents.splice(0..0, before.last.iter().copied());
                            }
                            Ends { first: before.first, last: next.last }
                        }
                    });
                }
                Ok(ends.expect("a chain that is not empty has ends"))
            }
            Flow::Group(parts) => {
                if parts.is_empty() {
                    return Err(refused(format!("{at} is an empty group")));
                }
                let mut ends = Ends { first: Vec::new(), last: Vec::new() };
                for (n, part) in parts.iter().enumerate() {
                    let member = self.walk(part, &format!("member {} of the group in {at}", n + 1), new_id)?;
                    ends.first.extend(member.first);
                    ends.last.extend(member.last);
                }
                Ok(ends)
            }
            Flow::Dag(tasks) => self.walk_dag(tasks, at, new_id),
        }
    }

    fn walk_dag(&mut self, tasks: &[DagTask], at: &str, new_id: &mut dyn FnMut() -> String) -> Result<Ends> {
        if tasks.is_empty() {
            return Err(refused(format!("{at} is an empty DAG")));
        }
        let mut local: HashMap<&str, usize> = HashMap::with_capacity(tasks.len());
        for task in tasks {
            let index = self.add(&task.step, Some(&task.name), new_id)?;
            local.insert(task.name.as_str(), index);
        }
        let mut waited_for = vec![false; tasks.len()];
        let first_index = local[tasks[0].name.as_str()];
        for task in tasks {
            let index = local[task.name.as_str()];
            for parent in &task.after {
                let Some(&parent_index) = local.get(parent.as_str()) else {
                    return Err(refused(format!(
                        "task {} waits for {parent:?}, which is not a task of its DAG ({at})",
                        task.name
                    )));
                };
                waited_for[parent_index - first_index] = true;
                self.nodes[index].parents.push(parent_index);
            }
        }
        let indexes = tasks.iter().map(|task| local[task.name.as_str()]);
        Ok(Ends {
            first: indexes.clone().filter(|&index| self.nodes[index].parents.is_empty()).collect(),
            last: indexes.filter(|&index| !waited_for[index - first_index]).collect(),
        })
    }

    /// The nodes, each after its parents (Kahn's order), or the error naming a cycle.
    fn topological_order(&self) -> Result<Vec<usize>> {
        let count = self.nodes.len();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); count];
        let mut waiting: Vec<usize> = vec![0; count];
        for (index, node) in self.nodes.iter().enumerate() {
            for &parent in &node.parents {
                if parent == index {
                    return Err(refused(format!("task {} waits for itself", self.id(index))));
                }
                children[parent].push(index);
                waiting[index] += 1;
            }
        }
        let mut ready: VecDeque<usize> = (0..count).filter(|&index| waiting[index] == 0).collect();
        let mut order = Vec::with_capacity(count);
        while let Some(index) = ready.pop_front() {
            order.push(index);
            for &child in &children[index] {
                waiting[child] -= 1;
                if waiting[child] == 0 {
                    ready.push_back(child);
                }
            }
        }
        if order.len() == count {
            return Ok(order);
        }
        // Every node left waits for another node left: walking parents from one must come back.
        let start = (0..count).find(|&index| waiting[index] > 0).expect("a node is left");
        let mut path = vec![start];
        let mut at = start;
        loop {
            at = *self.nodes[at].parents.iter().find(|&&parent| waiting[parent] > 0).expect("a parent is left");
            if let Some(position) = path.iter().position(|&index| index == at) {
                // `path` runs from child to parent; the cycle reads in running order.
                let mut cycle: Vec<&str> = path[position..].iter().rev().map(|&index| self.id(index)).collect();
                cycle.push(cycle[0]);
                return Err(refused(format!("a cycle: {}", cycle.join(" → "))));
            }
            path.push(at);
        }
    }

    /// How errors call the task: its DAG name, or else its ID.
    fn id(&self, index: usize) -> &str {
        let node = &self.nodes[index];
        node.name.as_deref().unwrap_or(node.request.message.id.as_str())
    }
}

/// Refuses the options a workflow task cannot have: it must keep its ID (no debounce or
/// replace), stay a task of its own (no group), and is unique by its ID alone (no uniqueness
/// lock, which a task stored before it runs could not take in the same step as its workflow's
/// other tasks); it has the default priority (a released task joins Go's pending list); a task that waits for others is released when they settle, so it cannot also
/// be scheduled.
fn check_options(node: &Node) -> Result<()> {
    let request = &node.request;
    let id = node.name.as_deref().unwrap_or(request.message.id.as_str());
    let why = if request.replace.is_some() {
        Some("is debounced or replaces another task, but a workflow task keeps its ID")
    } else if matches!(request.placement, Placement::Grouped { .. }) {
        Some("is in a group, but aggregation would merge it away from its workflow")
    } else if request.unique_ttl.is_some() {
        Some("is unique, but a workflow task is unique by its ID alone")
    } else if !request.priority.is_default() {
        Some("has a priority, but a workflow task is released into its queue's pending list, of the default priority")
    } else if node.parents.is_empty() {
        None
    } else if matches!(request.placement, Placement::Scheduled { .. }) {
        Some("waits for other tasks, so it runs when they settle and cannot be scheduled too")
    } else {
        None
    };
    match why {
        Some(why) => Err(refused(format!("task {id} {why}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    fn t(id: &str) -> Flow {
        Flow::task(Task::new("t", id.to_owned()), TaskOptions::new().task_id(id))
    }

    fn plan(flow: &Flow) -> Result<WorkflowPlan> {
        let mut n = 0;
        flow.plan(DEFAULT_MAX_WORKFLOW_TASKS, now(), || {
            n += 1;
            format!("generated-{n}")
        })
    }

    /// Each task's DAG name (or else its ID) with its parents', in plan order.
    fn edges(plan: &WorkflowPlan) -> Vec<(String, Vec<String>)> {
        let label = |task: &PlannedTask| task.name.clone().unwrap_or_else(|| task.request.message.id.to_string());
        let by_ref: HashMap<TaskRef, String> =
            plan.tasks.iter().map(|task| (TaskRef::of(&task.request.message), label(task))).collect();
        plan.tasks
            .iter()
            .map(|task| {
                let parents = task.parents.iter().map(|p| by_ref[p].clone()).collect();
                (label(task), parents)
            })
            .collect()
    }

    fn edge(id: &str, parents: &[&str]) -> (String, Vec<String>) {
        (id.to_owned(), parents.iter().map(|p| (*p).to_owned()).collect())
    }

    fn reason(result: Result<WorkflowPlan>) -> String {
        match result {
            Err(Error::InvalidArgument { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_chain_runs_each_task_after_the_one_before() {
        let plan = plan(&t("a").then(t("b")).then(t("c"))).unwrap();
        assert_eq!(edges(&plan), [edge("a", &[]), edge("b", &["a"]), edge("c", &["b"])]);
        assert_eq!(plan.roots().count(), 1);
    }

    #[test]
    fn a_chord_callback_waits_for_every_member_in_member_order() {
        let plan = plan(&Flow::chord([t("m1"), t("m2"), t("m3")], t("sum"))).unwrap();
        let sum = plan.tasks.iter().find(|task| task.request.message.id == "sum").unwrap();
        let parents: Vec<&str> = sum.parents.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(parents, ["m1", "m2", "m3"]);
        let m2 = plan.tasks.iter().find(|task| task.request.message.id == "m2").unwrap();
        assert_eq!(m2.children, [TaskRef { queue: QueueName::default(), id: TaskId::new("sum").unwrap() }]);
        assert!(plan.tasks.iter().all(|task| task.request.message.headers[WORKFLOW_HEADER] == plan.id.as_str()));
        assert_eq!(plan.tasks.last().unwrap().request.message.id, "sum");
    }

    #[test]
    fn shapes_nest_and_generated_ids_fill_in() {
        // fetch, then (resize-a then thumb-a) beside resize-b, then archive, then notify.
        let per_image = Flow::group([t("resize-a").then(t("thumb-a")), t("resize-b")]);
        let notify = Flow::task(Task::new("notify", "done"), TaskOptions::new());
        let flow = Flow::chain([t("fetch"), per_image, t("archive"), notify]);
        let plan = plan(&flow).unwrap();
        assert_eq!(
            edges(&plan),
            [
                edge("fetch", &[]),
                edge("resize-a", &["fetch"]),
                edge("resize-b", &["fetch"]),
                edge("thumb-a", &["resize-a"]),
                edge("archive", &["thumb-a", "resize-b"]),
                edge("generated-1", &["archive"]),
            ]
        );
    }

    #[test]
    fn a_plan_s_nodes_name_their_parents_by_position() {
        let flow = Flow::chord([t("m1"), t("m2"), t("m3")], t("sum")).then(t("publish"));
        let nodes = plan(&flow).unwrap().nodes();
        let ids: Vec<&str> = nodes.iter().map(|node| node.task.id.as_str()).collect();
        assert_eq!(ids, ["m1", "m2", "m3", "sum", "publish"]);
        let parents: Vec<&[usize]> = nodes.iter().map(|node| node.parents.as_slice()).collect();
        assert_eq!(parents, [&[][..], &[], &[], &[0, 1, 2], &[3]]);
    }

    #[test]
    fn a_dag_task_waits_for_the_tasks_it_names_and_the_dag_for_what_comes_before() {
        let dag = Flow::dag([
            DagTask::new("left", Task::new("t", "l"), TaskOptions::new()),
            DagTask::new("right", Task::new("t", "r"), TaskOptions::new()),
            DagTask::new("join", Task::new("t", "j"), TaskOptions::new())
                .after(["right", "left"])
                .on_parent_failure(OnParentFailure::RunAnyway),
        ]);
        let plan = plan(&t("start").then(dag).then(t("end"))).unwrap();
        assert_eq!(
            edges(&plan),
            [
                edge("start", &[]),
                edge("left", &["start"]),
                edge("right", &["start"]),
                edge("join", &["right", "left"]),
                edge("end", &["join"]),
            ]
        );
        let join = plan.tasks.iter().find(|task| task.name.as_deref() == Some("join")).unwrap();
        assert_eq!(join.on_parent_failure, OnParentFailure::RunAnyway);
        assert_eq!(join.request.message.id, "generated-3", "a DAG name is no task ID");
        let names: Vec<(String, String)> =
            plan.names().into_iter().map(|(name, task)| (name, task.id.into_string())).collect();
        assert_eq!(
            names,
            [
                ("join".to_owned(), "generated-3".to_owned()),
                ("left".to_owned(), "generated-1".to_owned()),
                ("right".to_owned(), "generated-2".to_owned())
            ]
        );
    }

    #[test]
    fn a_dag_plans_fresh_ids_each_time_and_keeps_an_id_the_caller_set() {
        let dag = || {
            Flow::dag([
                DagTask::new("fetch", Task::new("t", ""), TaskOptions::new()),
                DagTask::new("fixed", Task::new("t", ""), TaskOptions::new().task_id("report-1")).after(["fetch"]),
            ])
        };
        let mut n = 0;
        let mut new_id = || {
            n += 1;
            format!("id-{n}")
        };
        let first = dag().plan(DEFAULT_MAX_WORKFLOW_TASKS, now(), &mut new_id).unwrap();
        let second = dag().plan(DEFAULT_MAX_WORKFLOW_TASKS, now(), &mut new_id).unwrap();
        let ids =
            |plan: &WorkflowPlan| plan.names().into_values().map(|task| task.id.into_string()).collect::<Vec<_>>();
        assert_eq!(
            (ids(&first), ids(&second)),
            (vec!["id-1".to_owned(), "report-1".to_owned()], vec!["id-3".to_owned(), "report-1".to_owned()])
        );
        assert_eq!(first.nodes()[1].name.as_deref(), Some("fixed"));
        let twice = Flow::group([
            Flow::dag([DagTask::new("a", Task::new("t", ""), TaskOptions::new())]),
            Flow::dag([DagTask::new("a", Task::new("t", ""), TaskOptions::new())]),
        ]);
        assert!(reason(plan(&twice)).contains("task name \"a\" is used twice"));
    }

    #[test]
    fn bad_shapes_are_refused_with_what_is_wrong() {
        assert!(reason(plan(&Flow::chain([]))).contains("the workflow is an empty chain"));
        let empty_group = Flow::chain([t("a"), Flow::group([])]);
        assert!(reason(plan(&empty_group)).contains("step 2 of the chain in the workflow is an empty group"));
        assert!(reason(plan(&Flow::dag([]))).contains("empty DAG"));
        assert!(reason(plan(&t("a").then(t("a")))).contains("task ID a is used twice"));
        let unknown = Flow::dag([DagTask::new("a", Task::new("t", ""), TaskOptions::new()).after(["ghost"])]);
        assert!(reason(plan(&unknown)).contains("task a waits for \"ghost\", which is not a task of its DAG"));
        let itself = Flow::dag([DagTask::new("a", Task::new("t", ""), TaskOptions::new()).after(["a"])]);
        assert!(reason(plan(&itself)).contains("task a waits for itself"));
        let cycle = Flow::dag([
            DagTask::new("a", Task::new("t", ""), TaskOptions::new()).after(["c"]),
            DagTask::new("b", Task::new("t", ""), TaskOptions::new()).after(["a"]),
            DagTask::new("c", Task::new("t", ""), TaskOptions::new()).after(["b"]),
        ]);
        let cycle = reason(plan(&cycle));
        assert!(["a → b → c → a", "b → c → a → b", "c → a → b → c"].iter().any(|c| cycle.contains(c)), "{cycle}");
        let big = Flow::group((0..3).map(|i| t(&format!("x{i}"))));
        assert!(reason(big.plan(2, now(), String::new)).contains("more than 2 tasks"));
    }

    #[test]
    fn options_a_workflow_task_cannot_have_are_refused() {
        let task = || Task::new("t", "x");
        let scheduled = Flow::task(task(), TaskOptions::new().task_id("s").process_in(Duration::from_secs(60)));
        assert!(reason(plan(&t("a").then(scheduled.clone()))).contains("task s waits for other tasks"));
        plan(&scheduled.then(t("b"))).expect("a root may be scheduled");
        let unique = Flow::task(task(), TaskOptions::new().task_id("u").unique(Duration::from_secs(60)));
        assert!(reason(plan(&t("a").then(unique.clone()))).contains("task u is unique"));
        assert!(reason(plan(&unique)).contains("task u is unique"), "a root too");
        let grouped = Flow::task(task(), TaskOptions::new().task_id("g").group("batch"));
        assert!(reason(plan(&grouped)).contains("task g is in a group"));
        let debounced = Flow::task(task(), TaskOptions::new().task_id("d").debounce("k", Duration::from_secs(5)));
        assert!(reason(plan(&debounced)).contains("task d is debounced"));
        let prioritized = Flow::task(task(), TaskOptions::new().task_id("p").priority(5));
        assert!(reason(plan(&prioritized)).contains("task p has a priority"));
        assert!(reason(plan(&t("a").then(prioritized))).contains("task p has a priority"));
        let blank = Flow::task(Task::new(" ", "x"), TaskOptions::new());
        assert!(matches!(plan(&blank), Err(Error::InvalidArgument { field: "task type", .. })));
    }

    proptest! {
        /// Any DAG whose tasks wait only for earlier ones plans, every task after its parents,
        /// with the parents it named in its order.
        #[test]
        fn every_acyclic_dag_plans_parents_first(
            after in proptest::collection::vec(proptest::collection::vec(any::<prop::sample::Index>(), 0..4), 1..40)
        ) {
            let tasks: Vec<DagTask> = after
                .iter()
                .enumerate()
                .map(|(i, parents)| {
                    let mut names: Vec<String> = Vec::new();
                    if i > 0 {
                        for p in parents {
                            let name = format!("n{}", p.index(i));
                            if !names.contains(&name) {
                                names.push(name);
                            }
                        }
                    }
                    DagTask::new(format!("n{i}"), Task::new("t", ""), TaskOptions::new()).after(names)
                })
                .collect();
            let wanted: HashMap<String, Vec<String>> = tasks.iter().map(|t| (t.name.clone(), t.after.clone())).collect();
            let plan = plan(&Flow::dag(tasks)).unwrap();
            let names: HashMap<TaskRef, String> = plan.names().into_iter().map(|(name, task)| (task, name)).collect();
            let mut seen = std::collections::HashSet::new();
            for task in &plan.tasks {
                let id = task.name.clone().unwrap();
                let parents: Vec<String> = task.parents.iter().map(|p| names[p].clone()).collect();
                prop_assert!(parents.iter().all(|p| seen.contains(p)), "{id} before a parent");
                prop_assert_eq!(&parents, &wanted[&id]);
                seen.insert(id);
            }
            prop_assert_eq!(seen.len(), wanted.len());
        }
    }
}
