//! A queue's part of workflows: its tasks that wait for others, which tasks wait for each of its
//! tasks, and the outcomes of its tasks that settled for good, kept for their dependents.

use super::{Queue, TaskRecord};
use asynq_core::broker::Page;
use asynq_core::events::EventKind;
use asynq_core::steps::StepName;
use asynq_core::time::unix_secs;
use asynq_core::workflow::{OnParentFailure, PARENT_FAILED_ERROR, ParentOutcome, TaskRef, WORKFLOW_RESULT_TTL};
use asynq_core::{EnqueueRequest, Result, TaskInfo, TaskState};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

/// A task stored by a workflow that waits for its parents.
#[derive(Debug)]
pub(crate) struct WaitingTask {
    /// The order it was stored in, for listings.
    seq: u64,
    request: EnqueueRequest,
    /// Its parents that have not settled for good yet.
    unsettled: HashSet<TaskRef>,
    on_parent_failure: OnParentFailure,
    /// The signals sent to it while it waits, which it keeps once released or archived.
    signals: HashMap<StepName, Bytes>,
}

/// What becomes of a waiting task once a parent settled.
pub(crate) enum Passed {
    /// It still waits (or was no longer waiting, or had heard of this parent).
    Nothing,
    /// Every parent has settled: it was made pending.
    Released,
    /// A parent failed under [`OnParentFailure::FailWorkflow`]: it was archived without running,
    /// and its own dependents hear of it.
    Cancelled,
}

/// A queue's workflow records.
#[derive(Debug, Default)]
pub(crate) struct WorkflowRecords {
    waiting: HashMap<String, WaitingTask>,
    /// Per task, the tasks that wait for it, until it settles for good.
    children: HashMap<String, Vec<TaskRef>>,
    /// Per task, the tasks it waits for, in order, until it settles for good.
    parents: HashMap<String, Vec<TaskRef>>,
    /// Per task that settled for good, how, and when it is forgotten.
    outcomes: HashMap<String, (ParentOutcome, SystemTime)>,
    /// The size of `outcomes` at which its forgotten ones are swept next.
    sweep_at: usize,
    /// The number of the next waiting task stored.
    next_seq: u64,
}

impl Queue {
    /// Whether a task `id` is stored here, running or waiting.
    pub(crate) fn holds_id(&self, id: &str) -> bool {
        self.tasks.contains_key(id) || self.workflows.waiting.contains_key(id)
    }

    /// Keeps the workflow records of the task `request` stores: whom it waits for and who waits
    /// for it; a task that waits for others is held back until they settle, the others stored
    /// as an enqueue would. The caller checked that its ID is free.
    pub(crate) fn store_workflow_task(
        &mut self,
        request: EnqueueRequest,
        parents: &[TaskRef],
        children: &[TaskRef],
        on_parent_failure: OnParentFailure,
        now: SystemTime,
    ) -> Result<()> {
        let id = request.message.id.to_string();
        if !children.is_empty() {
            self.workflows.children.insert(id.clone(), children.to_vec());
        }
        if parents.is_empty() {
            return self.enqueue(request, now);
        }
        self.workflows.parents.insert(id.clone(), parents.to_vec());
        let unsettled = parents.iter().cloned().collect();
        let seq = self.workflows.next_seq;
        self.workflows.next_seq += 1;
        let signals = HashMap::new();
        self.workflows.waiting.insert(id, WaitingTask { seq, request, unsettled, on_parent_failure, signals });
        Ok(())
    }

    /// Records that the task `id` settled for good with `outcome`, kept for its dependents until
    /// [`WORKFLOW_RESULT_TTL`] from `now`; returns the tasks that wait for it.
    pub(crate) fn settle_workflow_task(&mut self, id: &str, outcome: ParentOutcome, now: SystemTime) -> Vec<TaskRef> {
        let records = &mut self.workflows;
        records.parents.remove(id);
        if records.outcomes.len() >= records.sweep_at {
            records.outcomes.retain(|_, (_, forget_at)| *forget_at > now);
            records.sweep_at = (records.outcomes.len() * 2).max(1024);
        }
        let children = records.children.remove(id).unwrap_or_default();
        // Only dependents read a result: a task nothing waits for keeps none (as on Redis).
        let kept = match outcome {
            ParentOutcome::Succeeded { .. } if children.is_empty() => ParentOutcome::Succeeded { result: None },
            outcome => outcome,
        };
        records.outcomes.insert(id.to_owned(), (kept, now + WORKFLOW_RESULT_TTL));
        children
    }

    /// Tells the waiting task `child` that its parent `parent` settled with `outcome`: once
    /// every parent has, it is made pending; on a failure it does not run past, it is archived
    /// with [`PARENT_FAILED_ERROR`], counted nowhere. A parent it heard of already is ignored.
    pub(crate) fn pass_outcome(
        &mut self,
        child: &str,
        parent: &TaskRef,
        outcome: &ParentOutcome,
        now: SystemTime,
    ) -> Result<Passed> {
        let Some(waiting) = self.workflows.waiting.get_mut(child) else { return Ok(Passed::Nothing) };
        if !waiting.unsettled.remove(parent) {
            return Ok(Passed::Nothing);
        }
        let failed = matches!(outcome, ParentOutcome::Failed { .. });
        if failed && waiting.on_parent_failure == OnParentFailure::FailWorkflow {
            self.archive_unrun(child, PARENT_FAILED_ERROR, now);
            return Ok(Passed::Cancelled);
        }
        if !waiting.unsettled.is_empty() {
            return Ok(Passed::Nothing);
        }
        let waiting = self.workflows.waiting.remove(child).expect("found above");
        self.enqueue(waiting.request, now)?;
        if let Some(record) = self.tasks.get_mut(child) {
            record.signals = waiting.signals;
        }
        Ok(Passed::Released)
    }

    /// The signals kept for the waiting task `id`, if it waits.
    pub(crate) fn waiting_signals(&mut self, id: &str) -> Option<&mut HashMap<StepName, Bytes>> {
        self.workflows.waiting.get_mut(id).map(|waiting| &mut waiting.signals)
    }

    /// Logs at `now` that signal `name` was sent to the waiting task `id`.
    pub(crate) fn emit_waiting_signalled(&mut self, now: SystemTime, id: &str, name: &StepName) {
        if let (Some(log), Some(waiting)) = (&mut self.events, self.workflows.waiting.get(id)) {
            log.push_named(now, EventKind::Signalled, &waiting.request.message, None, None, Some(name.as_str()));
        }
    }

    /// The value of signal `name` sent to the waiting task `id`.
    pub(crate) fn waiting_signal_value(&self, id: &str, name: &StepName) -> Option<Bytes> {
        self.workflows.waiting.get(id)?.signals.get(name).cloned()
    }

    /// How many tasks wait.
    pub(crate) fn waiting_count(&self) -> usize {
        self.workflows.waiting.len()
    }

    /// The waiting task `id`, if there is one.
    pub(crate) fn waiting_task_info(&self, id: &str) -> Option<TaskInfo> {
        let waiting = self.workflows.waiting.get(id)?;
        Some(TaskInfo::new(&waiting.request.message, TaskState::Waiting, None, None))
    }

    /// One page of the waiting tasks, in the order they were stored.
    pub(crate) fn list_waiting(&self, page: Page) -> Vec<TaskInfo> {
        let mut waiting: Vec<&WaitingTask> = self.workflows.waiting.values().collect();
        waiting.sort_unstable_by_key(|task| task.seq);
        waiting
            .into_iter()
            .skip(page.size.saturating_mul(page.number))
            .take(page.size)
            .map(|task| TaskInfo::new(&task.request.message, TaskState::Waiting, None, None))
            .collect()
    }

    /// The tasks others wait for that settled without [`Queue::settle_workflow_task`] (an
    /// operator archived or deleted them), with their outcomes, in ID order: one that is gone
    /// counts as succeeded without a result, as on Redis, where a Go server deletes a task that
    /// succeeded.
    pub(crate) fn settled_elsewhere(&self) -> Vec<(String, ParentOutcome)> {
        let mut settled: Vec<(String, ParentOutcome)> = self
            .workflows
            .children
            .keys()
            .filter(|id| !self.workflows.waiting.contains_key(*id))
            .filter_map(|id| {
                let outcome = match self.tasks.get(id) {
                    None => ParentOutcome::Succeeded { result: None },
                    Some(record) if record.state == TaskState::Completed => {
                        ParentOutcome::Succeeded { result: record.result.clone() }
                    }
                    Some(record) if record.state == TaskState::Archived => {
                        ParentOutcome::Failed { error: record.msg.last_error.clone().unwrap_or_default() }
                    }
                    Some(_) => return None,
                };
                Some((id.clone(), outcome))
            })
            .collect();
        settled.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        settled
    }

    /// The tasks that wait for the task `id`, if any do and it has not settled.
    pub(crate) fn workflow_children(&self, id: &str) -> Option<Vec<TaskRef>> {
        self.workflows.children.get(id).cloned()
    }

    /// The result the task `id` wrote, if any.
    pub(crate) fn result_of(&self, id: &str) -> Option<bytes::Bytes> {
        self.tasks.get(id).and_then(|record| record.result.clone())
    }

    /// Archives the waiting task `id` without running it, with `error`, counted nowhere;
    /// returns whether it was waiting.
    pub(crate) fn archive_unrun(&mut self, id: &str, error: &str, now: SystemTime) -> bool {
        let Some(waiting) = self.workflows.waiting.remove(id) else { return false };
        let msg = waiting.request.message.archived(error, now);
        self.archived.insert(id, unix_secs(now));
        self.trim_archive(now);
        self.emit_failure(now, EventKind::Archived, &msg, error);
        let mut record = TaskRecord::new(msg, TaskState::Archived);
        record.signals = waiting.signals;
        self.tasks.insert(id.to_owned(), record);
        true
    }

    /// The tasks the workflow task `id` waits for, in order, while it has not settled for good.
    pub(crate) fn workflow_parents(&self, id: &str) -> Vec<TaskRef> {
        self.workflows.parents.get(id).cloned().unwrap_or_default()
    }

    /// How the task `id` settled, while that is kept.
    pub(crate) fn workflow_outcome(&self, id: &str, now: SystemTime) -> ParentOutcome {
        match self.workflows.outcomes.get(id) {
            Some((outcome, forget_at)) if *forget_at > now => outcome.clone(),
            _ => ParentOutcome::Unknown,
        }
    }
}
