//! In which calls, and in which order, `workflow_store.lua` stores a workflow's tasks.
//!
//! A root (a task that waits for nothing) is pending the moment its call returns: a worker may
//! take it, run it and settle it before the next call runs, and its relay then tells its
//! dependents that it settled. A dependent not stored yet cannot hear it: `workflow_pass.lua`
//! takes back its decrement on a task that is missing, and the dependent, stored next, would
//! wait for good for a parent that already passed its outcome on (the relay passes each on once,
//! and the sweep looks only at parents that have not). So every task that waits is stored before
//! any root, unless one call stores the whole workflow at once.

use asynq_core::workflow::PlannedTask;
use std::collections::BTreeMap;

/// The calls that store `tasks`, in the order they are to run: each holds tasks of one queue
/// (the queue of its first task), at most `batch` of them. A workflow that one call can hold
/// is one call, all or nothing; otherwise the calls holding waiting tasks all come before those
/// holding roots, and no call holds both.
pub(super) fn store_calls(tasks: &[PlannedTask], batch: usize) -> Vec<Vec<&PlannedTask>> {
    let mut by_queue: BTreeMap<&str, Vec<&PlannedTask>> = BTreeMap::new();
    for task in tasks {
        by_queue.entry(task.request.message.queue.as_str()).or_default().push(task);
    }
    if by_queue.len() == 1 && tasks.len() <= batch {
        return by_queue.into_values().collect();
    }
    let (mut waiting, mut roots) = (Vec::new(), Vec::new());
    for queue_tasks in by_queue.into_values() {
        let (queue_roots, queue_waiting): (Vec<_>, Vec<_>) =
            queue_tasks.into_iter().partition(|task| task.parents.is_empty());
        waiting.extend(queue_waiting.chunks(batch).map(<[_]>::to_vec));
        roots.extend(queue_roots.chunks(batch).map(<[_]>::to_vec));
    }
    waiting.extend(roots);
    waiting
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::workflow::{DagTask, Flow};
    use asynq_core::{Task, TaskOptions};
    use std::time::SystemTime;

    /// A DAG of tasks named by `(queue, name, waits for)`, planned.
    fn plan(tasks: &[(&str, String, Vec<String>)]) -> Vec<PlannedTask> {
        let flow = Flow::dag(tasks.iter().map(|(queue, name, after)| {
            DagTask::new(name.clone(), Task::new("t", name.clone()), TaskOptions::new().queue(*queue).task_id(name))
                .after(after.iter().cloned())
        }));
        let mut ids = 0;
        let plan = flow.plan(1_000, SystemTime::UNIX_EPOCH, || {
            ids += 1;
            format!("id-{ids}")
        });
        plan.expect("a valid workflow").tasks
    }

    /// Checks what every order must hold: each task in exactly one call, each call of one queue
    /// and at most `batch` tasks.
    fn check_calls(tasks: &[PlannedTask], calls: &[Vec<&PlannedTask>], batch: usize) {
        let mut stored: Vec<&str> = calls.iter().flatten().map(|task| task.request.message.id.as_str()).collect();
        stored.sort_unstable();
        let mut planned: Vec<&str> = tasks.iter().map(|task| task.request.message.id.as_str()).collect();
        planned.sort_unstable();
        assert_eq!(stored, planned, "every task is stored once");
        for call in calls {
            assert!(!call.is_empty() && call.len() <= batch, "a call of {} tasks", call.len());
            let queue = &call[0].request.message.queue;
            assert!(call.iter().all(|task| &task.request.message.queue == queue), "a call spans queues");
        }
    }

    /// Whether every call that stores a waiting task runs before every call that stores a root,
    /// no call storing both unless it is the only one.
    fn waiting_tasks_first(calls: &[Vec<&PlannedTask>]) -> bool {
        if calls.len() == 1 {
            return true;
        }
        let mut root_stored = false;
        for call in calls {
            let holds_root = call.iter().any(|task| task.parents.is_empty());
            let holds_waiting = call.iter().any(|task| !task.parents.is_empty());
            if holds_waiting && (root_stored || holds_root) {
                return false;
            }
            root_stored |= holds_root;
        }
        true
    }

    #[test]
    fn a_workflow_one_call_holds_is_one_call() {
        let tasks = plan(&[
            ("q", "a".into(), vec![]),
            ("q", "b".into(), vec!["a".into()]),
            ("q", "c".into(), vec!["a".into(), "b".into()]),
        ]);
        let calls = store_calls(&tasks, 3);
        check_calls(&tasks, &calls, 3);
        assert_eq!(calls.len(), 1);
    }

    /// The order that lost dependents: two queues, each with a root whose dependent is in the
    /// other, used to be stored as one call per queue, each holding its queue's waiting task and
    /// root, so the first call's root could settle before the second call stored its dependent.
    #[test]
    fn every_waiting_task_of_every_queue_is_stored_before_any_root() {
        let tasks = plan(&[
            ("qa", "ra".into(), vec![]),
            ("qb", "rb".into(), vec![]),
            ("qa", "wa".into(), vec!["rb".into()]),
            ("qb", "wb".into(), vec!["ra".into()]),
        ]);
        let calls = store_calls(&tasks, 100);
        check_calls(&tasks, &calls, 100);
        assert!(waiting_tasks_first(&calls), "{:?}", ids(&calls));
    }

    #[test]
    fn a_large_workflow_of_one_queue_stores_its_waiting_tasks_first() {
        let mut spec = vec![("q", "root".to_owned(), vec![])];
        spec.extend((0..7).map(|n| ("q", format!("w{n}"), vec!["root".to_owned()])));
        spec.push(("q", "other-root".to_owned(), vec![]));
        let tasks = plan(&spec);
        let calls = store_calls(&tasks, 3);
        check_calls(&tasks, &calls, 3);
        assert!(waiting_tasks_first(&calls), "{:?}", ids(&calls));
    }

    #[test]
    fn large_workflows_across_queues_store_their_waiting_tasks_first() {
        for batch in [1, 2, 5, 100] {
            let mut spec = Vec::new();
            for (n, queue) in ["qa", "qb", "qc"].into_iter().cycle().take(12).enumerate() {
                // Every fourth task is a root (one in each queue); the others wait for the task
                // before them, in the queue before theirs.
                let after = if n % 4 == 0 { vec![] } else { vec![format!("t{}", n - 1)] };
                spec.push((queue, format!("t{n}"), after));
            }
            let tasks = plan(&spec);
            let calls = store_calls(&tasks, batch);
            check_calls(&tasks, &calls, batch);
            assert!(waiting_tasks_first(&calls), "batch {batch}: {:?}", ids(&calls));
        }
    }

    fn ids<'a>(calls: &[Vec<&'a PlannedTask>]) -> Vec<Vec<&'a str>> {
        calls.iter().map(|call| call.iter().map(|task| task.request.message.id.as_str()).collect()).collect()
    }
}
