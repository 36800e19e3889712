//! Workflows for [`MemoryBroker`]: a whole plan stored under one lock, and every outcome passed
//! on, down the whole workflow, in the same step that settles the parent; [`Workflows::relay`]
//! only notices the tasks an operator settled (archived or deleted), which pass nothing on.

use super::*;
use asynq_core::WorkflowId;
use asynq_core::broker::Workflows;
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::workflow::{
    CancelMark, ParentOutcome, ParentResult, TaskRef, WORKFLOW_CANCELLED_ERROR, WORKFLOW_HEADER, WORKFLOW_RESULT_TTL,
    WorkflowCancellation, WorkflowNode, WorkflowPlan, WorkflowSummary, parent_vanished_error,
};
use queue::Passed;
use std::collections::VecDeque;

/// A stored workflow's record: when it was stored and its tasks with their parents, parents
/// first.
#[derive(Debug)]
pub(crate) struct WorkflowRecord {
    id: WorkflowId,
    created_at: SystemTime,
    tasks: Vec<WorkflowNode>,
}

impl State {
    /// Drops the workflow records older than [`WORKFLOW_RESULT_TTL`] at `now`.
    fn forget_old_workflows(&mut self, now: SystemTime) {
        let kept_from = self.workflows.partition_point(|record| record.created_at + WORKFLOW_RESULT_TTL <= now);
        for record in self.workflows.drain(..kept_from) {
            self.cancelled_workflows.remove(&record.id);
        }
    }
}

#[async_trait]
impl Workflows for MemoryBroker {
    async fn store_workflow(&self, plan: &WorkflowPlan) -> Result<()> {
        let now = self.now();
        {
            let mut state = self.state();
            // Registered first, whatever the outcome, as an enqueue registers its queue.
            for task in &plan.tasks {
                state.known.insert(task.request.message.queue.clone());
            }
            for task in &plan.tasks {
                let TaskRef { queue, id } = TaskRef::of(&task.request.message);
                if state.queues.get(&queue).is_some_and(|q| q.holds_id(id.as_str())) {
                    return Err(Error::TaskIdConflict { queue, id });
                }
            }
            state.forget_old_workflows(now);
            let created_at = from_unix_secs(unix_secs(now));
            state.workflows.push(WorkflowRecord { id: plan.id.clone(), created_at, tasks: plan.nodes() });
            for task in &plan.tasks {
                let queue = task.request.message.queue.clone();
                state.queue_entry(&queue).store_workflow_task(
                    task.request.clone(),
                    &task.parents,
                    &task.children,
                    task.on_parent_failure,
                    now,
                )?;
            }
        }
        self.wake_waiters();
        Ok(())
    }

    async fn list_workflows(&self, page: Page) -> Result<Vec<WorkflowSummary>> {
        let mut state = self.state();
        state.forget_old_workflows(self.now());
        let state = &*state;
        Ok(state
            .workflows
            .iter()
            .rev()
            .skip(page.size.saturating_mul(page.number))
            .take(page.size)
            .map(|record| WorkflowSummary {
                id: record.id.clone(),
                created_at: record.created_at,
                tasks: record.tasks.len(),
                cancelled: state.cancelled_workflows.contains_key(&record.id),
            })
            .collect())
    }

    async fn count_workflows(&self) -> Result<usize> {
        let mut state = self.state();
        state.forget_old_workflows(self.now());
        Ok(state.workflows.len())
    }

    async fn workflow_tasks(&self, id: &WorkflowId) -> Result<Vec<WorkflowNode>> {
        let mut state = self.state();
        state.forget_old_workflows(self.now());
        let record = state.workflows.iter().find(|record| record.id == *id);
        record.map(|record| record.tasks.clone()).ok_or_else(|| Error::WorkflowNotFound { id: id.clone() })
    }

    async fn mark_cancelled(&self, id: &WorkflowId) -> Result<CancelMark> {
        let now = self.now();
        let mut state = self.state();
        state.forget_old_workflows(now);
        if !state.workflows.iter().any(|record| record.id == *id) {
            return Err(Error::WorkflowNotFound { id: id.clone() });
        }
        Ok(match state.cancelled_workflows.get(id) {
            None => {
                state.cancelled_workflows.insert(id.clone(), None);
                CancelMark::Marked
            }
            Some(None) => CancelMark::Unfinished,
            Some(Some(done)) => CancelMark::Done(*done),
        })
    }

    async fn record_cancellation(&self, id: &WorkflowId, done: WorkflowCancellation) -> Result<()> {
        let mut state = self.state();
        if let Some(recorded) = state.cancelled_workflows.get_mut(id) {
            *recorded = Some(done);
        }
        Ok(())
    }

    async fn is_cancelled(&self, id: &WorkflowId) -> Result<bool> {
        let now = self.now();
        let mut state = self.state();
        state.forget_old_workflows(now);
        Ok(state.cancelled_workflows.contains_key(id))
    }

    async fn cancel_waiting(&self, task: &TaskRef) -> Result<bool> {
        let now = self.now();
        {
            let mut state = self.state();
            let Some(queue) = state.queues.get_mut(&task.queue) else { return Ok(false) };
            if !queue.archive_unrun(task.id.as_str(), WORKFLOW_CANCELLED_ERROR, now) {
                return Ok(false);
            }
            let error = WORKFLOW_CANCELLED_ERROR.to_owned();
            state.pass_workflow_outcomes(vec![(task.clone(), ParentOutcome::Failed { error })], now)?;
        }
        self.wake_waiters();
        self.inner.signals.task_finished();
        Ok(true)
    }

    async fn settled_outcomes(&self, tasks: &[TaskRef]) -> Result<Vec<ParentOutcome>> {
        let now = self.now();
        let state = self.state();
        Ok(tasks
            .iter()
            .map(|task| {
                state
                    .queues
                    .get(&task.queue)
                    .map_or(ParentOutcome::Unknown, |q| q.workflow_outcome(task.id.as_str(), now))
            })
            .collect())
    }

    async fn parent_results(&self, task: &TaskRef) -> Result<Vec<ParentResult>> {
        let now = self.now();
        let state = self.state();
        let parents = state.queues.get(&task.queue).map(|q| q.workflow_parents(task.id.as_str())).unwrap_or_default();
        Ok(parents
            .into_iter()
            .map(|parent| {
                let outcome = state
                    .queues
                    .get(&parent.queue)
                    .map_or(ParentOutcome::Unknown, |q| q.workflow_outcome(parent.id.as_str(), now));
                ParentResult { task: parent, outcome }
            })
            .collect())
    }

    async fn relay(&self, queues: &[QueueName]) -> Result<usize> {
        self.relay_settled_elsewhere(queues)
    }
}

impl MemoryBroker {
    /// What [`Workflows::relay`] does: passes on the outcomes of the tasks of `queues` that
    /// others wait for and that an operator settled; returns how many it found.
    fn relay_settled_elsewhere(&self, queues: &[QueueName]) -> Result<usize> {
        let now = self.now();
        let (found, changed) = {
            let mut state = self.state();
            let mut settled = Vec::new();
            for queue in queues {
                let Some(q) = state.queues.get(queue) else { continue };
                for (id, outcome) in q.settled_elsewhere() {
                    let id = asynq_core::TaskId::new(id).expect("stored IDs are valid");
                    settled.push((TaskRef { queue: queue.clone(), id }, outcome));
                }
            }
            let found = settled.len();
            (found, state.pass_workflow_outcomes(settled, now)?)
        };
        if changed {
            self.wake_waiters();
            self.inner.signals.task_finished();
        }
        Ok(found)
    }
}

impl State {
    /// Settles `parents`, tasks others wait for that vanished (deleted unsettled with their
    /// queue), as failed, in the order given: each task still waiting for one is archived unrun
    /// with [`parent_vanished_error`] naming the first of them it waits for, whatever its policy;
    /// then those failures flow on, once all are archived (as the Redis broker's sweep archives
    /// before its relay passes anything on). Returns whether a task was archived or released.
    /// Does nothing for tasks that no task waits for.
    pub(crate) fn pass_vanished(&mut self, parents: Vec<TaskRef>, now: SystemTime) -> Result<bool> {
        let mut settled = Vec::new();
        let mut archived = false;
        for parent in parents {
            let Some(children) = self.queues.get(&parent.queue).and_then(|q| q.workflow_children(parent.id.as_str()))
            else {
                continue;
            };
            let error = parent_vanished_error(&parent);
            settled.push((parent, ParentOutcome::Failed { error: error.clone() }));
            for child in children {
                if self.queues.get_mut(&child.queue).is_some_and(|q| q.archive_unrun(child.id.as_str(), &error, now)) {
                    archived = true;
                    settled.push((child, ParentOutcome::Failed { error: error.clone() }));
                }
            }
        }
        Ok(self.pass_workflow_outcomes(settled, now)? || archived)
    }

    /// Passes the outcomes of `settled`, workflow tasks that settled for good, in order, to the
    /// tasks that wait for them, and on down the workflow through those it cancels, breadth
    /// first (as the Redis broker's settle and relay do): every dependent of the settled tasks
    /// hears before any task a cancelled one waits for. Returns whether a task was released or
    /// cancelled (so that servers and waits look again).
    pub(crate) fn pass_workflow_outcomes(
        &mut self,
        settled: Vec<(TaskRef, ParentOutcome)>,
        now: SystemTime,
    ) -> Result<bool> {
        let mut changed = false;
        let mut settling = VecDeque::from(settled);
        while let Some((parent, outcome)) = settling.pop_front() {
            let Some(queue) = self.queues.get_mut(&parent.queue) else { continue };
            for child in queue.settle_workflow_task(parent.id.as_str(), outcome.clone(), now) {
                let Some(queue) = self.queues.get_mut(&child.queue) else { continue };
                match queue.pass_outcome(child.id.as_str(), &parent, &outcome, now)? {
                    Passed::Nothing => {}
                    Passed::Released => changed = true,
                    Passed::Cancelled => {
                        changed = true;
                        let error = asynq_core::workflow::PARENT_FAILED_ERROR.to_owned();
                        settling.push_back((child, ParentOutcome::Failed { error }));
                    }
                }
            }
        }
        Ok(changed)
    }
}

/// Whether `message` is a workflow task.
pub(crate) fn in_workflow(message: &StoredTask) -> bool {
    message.headers.contains_key(WORKFLOW_HEADER)
}
