//! The capability to store workflows and release their tasks as their parents settle.

use super::Capabilities;
#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::workflow::*;
use crate::{QueueName, Result, WorkflowId};
use async_trait::async_trait;

/// Workflows: stores them, releases each task once the tasks it waits for have settled, and
/// keeps a record of each (its tasks) for operators.
///
/// A workflow task that settles for good (it succeeds, with or without retention, or it is
/// archived, whether by [`Dequeue::finish`](crate::broker::Dequeue::finish),
/// [`Dequeue::finish_batch`](crate::broker::Dequeue::finish_batch) or
/// [`Recover::recover`](crate::broker::Recover::recover)) has its outcome kept for
/// [`WORKFLOW_RESULT_TTL`] and passed on to each task waiting for it, each at most once
/// (retries and requeues are not settling). A waiting task then:
/// - once every parent has settled, and none failed or it runs anyway
///   ([`OnParentFailure::RunAnyway`]), is released: made pending as an enqueue would, woken
///   servers included;
/// - as soon as one parent fails under [`OnParentFailure::FailWorkflow`], is archived with
///   [`PARENT_FAILED_ERROR`] without running or being counted as processed or failed, which
///   settles it in turn as failed, so the failure flows on down the workflow.
///
/// A backend may pass outcomes on in the same atomic step that settles the parent, or (for a
/// parent with many dependents, or dependents in other queues, which on a Redis Cluster live in
/// other hash slots) record the duty in that step and fulfil it in [`Workflows::relay`]: each
/// step is idempotent, so a crash between two repeats a step and never loses or doubles one.
/// The backend spawns nothing to fulfil them: a server's relayer does, woken by
/// [`Workflows::relay_wanted`], so that shutting the server down stops it.
///
/// Its supertrait [`Capabilities`] lets a workflow producer given this capability alone find
/// the others it uses: the declarations of sharded queues, to place tasks on their shards.
#[async_trait]
pub trait Workflows: Capabilities {
    /// Stores every task of `plan`: those that wait for nothing as an enqueue would, the others
    /// waiting, where no server takes them and Go asynq sees none of them.
    ///
    /// Errors: [`Error::TaskIdConflict`] when a task's ID is taken in its queue, with nothing
    /// stored; a [`Error::Broker`] failure may leave tasks stored that wait for tasks that were
    /// not (the backend documents what becomes of them).
    async fn store_workflow(&self, plan: &WorkflowPlan) -> Result<()>;

    /// One page of the workflows kept, newest first. A workflow's record (its ID and the list of
    /// its tasks) is kept for [`WORKFLOW_RESULT_TTL`] after it was stored.
    async fn list_workflows(&self, page: crate::broker::Page) -> Result<Vec<WorkflowSummary>>;

    /// How many workflows are kept: the ones [`Workflows::list_workflows`] pages through.
    async fn count_workflows(&self) -> Result<usize>;

    /// The tasks of workflow `id` with the edges between them ([`WorkflowPlan::nodes`]): in
    /// its plan's order, parents first, each naming its parents by their positions in the list.
    ///
    /// Errors: [`Error::WorkflowNotFound`] when no such workflow is kept.
    async fn workflow_tasks(&self, id: &WorkflowId) -> Result<Vec<WorkflowNode>>;

    /// Archives the waiting task `task` without running it, with [`WORKFLOW_CANCELLED_ERROR`],
    /// counted nowhere, and passes that on as a failure to the tasks waiting for it, as a
    /// parent's failure would be. Returns whether it was waiting (a task in any other state is
    /// left alone).
    async fn cancel_waiting(&self, task: &TaskRef) -> Result<bool>;

    /// Marks workflow `id` cancelled, for as long as its record is kept: from then on a server
    /// archives its tasks rather than run or retry them. Says whether this call marked it, or an
    /// earlier one did (and what that one recorded it did).
    ///
    /// Errors: [`Error::WorkflowNotFound`] when no such workflow is kept, with nothing written.
    async fn mark_cancelled(&self, id: &WorkflowId) -> Result<CancelMark>;

    /// Records what the cancel of workflow `id`, already marked, did, for a later cancel to
    /// report ([`CancelMark::Done`]). Does nothing for a workflow not marked.
    async fn record_cancellation(&self, id: &WorkflowId, done: WorkflowCancellation) -> Result<()>;

    /// Whether workflow `id` was cancelled ([`Workflows::mark_cancelled`]); `false` for one not
    /// kept.
    async fn is_cancelled(&self, id: &WorkflowId) -> Result<bool>;

    /// How each of `tasks`, workflow tasks, settled for good, as far as this broker saw it and
    /// keeps it ([`WORKFLOW_RESULT_TTL`] from when it settled), in order: operators read it to
    /// tell a task that succeeded without retention (and is gone) from one deleted. A task
    /// others wait for comes with its result, as [`Workflows::parent_results`] gives it; one
    /// that nothing waits for with none ([`ParentOutcome::Succeeded`] without a result). One
    /// that has not settled, settled longer ago, settled where the broker did not see it (a Go
    /// server ran it, and nothing waits for it) or was never a workflow task is
    /// [`ParentOutcome::Unknown`].
    async fn settled_outcomes(&self, tasks: &[TaskRef]) -> Result<Vec<ParentOutcome>>;

    /// The parents of the workflow task `task` and how each settled, in its plan's order; one
    /// whose outcome is not known is [`ParentOutcome::Unknown`]. Empty for a task that waits for
    /// nothing, or was never a workflow task.
    async fn parent_results(&self, task: &TaskRef) -> Result<Vec<ParentResult>>;

    /// Fulfils the duties that settling parents in `queues` left (see above), and passes on the
    /// outcomes of the tasks of `queues` that others wait for and that settled without this
    /// broker's settle path: a Go server ran them, or an operator archived or deleted them (one
    /// that is gone counts as succeeded without a result: a Go server deletes a task that
    /// succeeded without retention, and nothing tells that apart from a delete). Returns a
    /// count of what it did, for logs. Servers call it every
    /// second; the default does nothing, for a backend that passes every outcome on as it
    /// settles and where nothing else settles tasks.
    async fn relay(&self, queues: &[QueueName]) -> Result<usize> {
        let _ = queues;
        Ok(0)
    }

    /// Resolves once parents settled through this broker (in this process: a server's settles,
    /// a cancel, a relay's own cascade) left duties for [`Workflows::relay_settled`]; servers'
    /// relayers wait on it so that those dependents move at once rather than at the next
    /// [`Workflows::relay`]. Cancel-safe: dropping it loses nothing. The default never resolves,
    /// for a backend that passes every outcome on as it settles.
    async fn relay_wanted(&self) {
        std::future::pending::<()>().await
    }

    /// Fulfils, now, the duties that parents settled through this broker left (see
    /// [`Workflows::relay_wanted`]), each by one caller; does not look for tasks settled
    /// elsewhere (that is [`Workflows::relay`]'s). Returns a count of what it did, for logs; on
    /// a failure, what it could not do is left to [`Workflows::relay`]. The default does nothing.
    async fn relay_settled(&self) -> Result<usize> {
        Ok(0)
    }
}
