//! Workflows in the model: storing a workflow's tasks, and passing a settled task's outcome on
//! to its dependents (breadth first within a queue), including the relay that follows every
//! operation.

use super::vocab::*;
use super::{Model, Task, Waiting};
use asynq_core::TaskState;
use std::collections::{BTreeSet, VecDeque};

impl Model {
    /// Stores the workflow `tasks` of `queue`: the roots pending (in order) or scheduled, the
    /// others waiting. Refused before anything is written when an ID is used twice; refused
    /// with nothing stored but the queue's name when an ID is taken in the queue.
    pub(super) fn store_workflow(&mut self, queue: &str, tasks: &[WorkflowTask]) -> Result<(), ErrorKind> {
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
                steps: BTreeSet::new(),
                parked: None,
                signals: BTreeSet::new(),
            };
            q.tasks.insert(task.id.to_owned(), stored);
        }
        Ok(())
    }

    /// Archives the waiting task `id` of `queue` unrun and passes its failure on; returns 1, or
    /// 0 when no such task waits.
    pub(super) fn cancel_waiting(&mut self, queue: &str, id: &str) -> usize {
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
    pub(super) fn pass_on(&mut self, queue: &str, settled: Vec<(String, bool)>) {
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
    pub(super) fn relay(&mut self) {
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
}
