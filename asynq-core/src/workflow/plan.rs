//! Planning a workflow ([`Flow::plan`]): every task resolved, the parents of each found by
//! position, the whole checked (names, IDs, dependencies, cycles, size, options) before anything
//! is written, and the tasks put in an order that has parents first.

use super::{DagTask, Flow, OnParentFailure, PlannedTask, Step, TaskRef, WORKFLOW_HEADER, WorkflowPlan};
use crate::{EnqueueRequest, Error, Placement, Result, TaskId, WorkflowId, resolve_enqueue};
use std::collections::{HashMap, VecDeque};
use std::time::SystemTime;

impl Flow {
    /// Checks the whole workflow and resolves it at `now`, at most `max_tasks` tasks, task IDs
    /// not given (in [`TaskOptions::task_id`](crate::TaskOptions::task_id)) taken from `new_id`, DAG tasks' names included.
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
                    shard_key: node.shard_key,
                }
            })
            .collect();
        Ok(WorkflowPlan { id, tasks })
    }
}

struct Node {
    /// Its DAG name, if any.
    name: Option<String>,
    request: EnqueueRequest,
    /// Indexes of the nodes it waits for, in order.
    parents: Vec<usize>,
    on_parent_failure: OnParentFailure,
    /// Its shard key, if its options give one.
    shard_key: Option<String>,
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
            shard_key: step
                .options
                .shard_key_option()
                .or_else(|| step.task.options().shard_key_option())
                .map(str::to_owned),
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
    use super::super::*;
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
