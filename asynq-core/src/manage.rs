//! Operator actions on tasks and queues: run, archive or delete tasks one by one or all of a
//! state, change a scheduled task's payload, remove a queue.

use crate::{
    ArchiveLimits, ArchiveOutlook, ArchiveReport, Error, GroupName, QueueName, Result, TaskId, TaskInfo, TaskState,
};
use async_trait::async_trait;
use bytes::Bytes;
use std::fmt;

/// The tasks of one queue a bulk action applies to: every task in one state, or every task
/// waiting in one group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskSet {
    /// Every task of the queue in this state. Aggregating tasks are addressed by group instead.
    State(TaskState),
    /// Every task waiting in this group (state aggregating).
    Group(GroupName),
}

impl TaskSet {
    /// The state of the tasks in the set.
    pub fn state(&self) -> TaskState {
        match self {
            TaskSet::State(state) => *state,
            TaskSet::Group(_) => TaskState::Aggregating,
        }
    }
}

impl fmt::Display for TaskSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskSet::State(state) => write!(f, "{state} tasks"),
            TaskSet::Group(group) => write!(f, "aggregating tasks of group {group:?}"),
        }
    }
}

/// A bulk action of [`Manage`], for [`validate_bulk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BulkAction {
    /// Make the tasks pending ([`Manage::run_all`]).
    Run,
    /// Archive the tasks ([`Manage::archive_all`]).
    Archive,
    /// Delete the tasks ([`Manage::delete_all`]).
    Delete,
}

impl BulkAction {
    /// The states whose tasks the action applies to, besides groups (which every action
    /// accepts): Go asynq's `runall`, `archiveall` and `deleteall`.
    pub fn states(self) -> &'static [TaskState] {
        use TaskState::*;
        match self {
            BulkAction::Run => &[Scheduled, Retry, Archived],
            BulkAction::Archive => &[Pending, Scheduled, Retry],
            BulkAction::Delete => &[Pending, Scheduled, Retry, Archived, Completed],
        }
    }

    /// The action as a verb: "run", "archive" or "delete".
    pub fn verb(self) -> &'static str {
        match self {
            BulkAction::Run => "run",
            BulkAction::Archive => "archive",
            BulkAction::Delete => "delete",
        }
    }
}

/// How far a bulk action has come, reported after each of its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct BulkProgress {
    /// Tasks acted on so far.
    pub done: usize,
    /// Tasks the action means to act on: those the set held when it began, at least `done`. An
    /// action never acts on more, so tasks that join the set while it runs may be left.
    pub total: usize,
}

impl BulkProgress {
    /// Progress of `done` tasks out of `total` (raised to `done` when smaller).
    pub fn new(done: usize, total: usize) -> Self {
        Self { done, total: total.max(done) }
    }
}

/// Receives a bulk action's progress after each of its steps.
pub type OnProgress<'a> = &'a (dyn Fn(BulkProgress) + Send + Sync);

/// Refuses a bulk action on a set it does not apply to (active tasks are cancelled, not run,
/// archived or deleted; aggregating tasks are named by group), before anything is touched.
pub fn validate_bulk(action: BulkAction, set: &TaskSet) -> Result<()> {
    match set {
        TaskSet::Group(_) => Ok(()),
        TaskSet::State(TaskState::Aggregating) => {
            Err(Error::invalid("group", format!("to {} aggregating tasks, name their group", action.verb())))
        }
        TaskSet::State(state) if action.states().contains(state) => Ok(()),
        TaskSet::State(state) => {
            let allowed: Vec<&str> = action.states().iter().map(|s| s.as_str()).collect();
            let reason = format!(
                "cannot {} {state} tasks; the states it applies to are {} (and groups)",
                action.verb(),
                allowed.join(", ")
            );
            Err(Error::invalid("state", reason))
        }
    }
}

/// Acts on tasks and queues on behalf of an operator (Go asynq's Inspector actions).
///
/// Every method refuses an unknown queue with [`Error::QueueNotFound`] and a missing task with
/// [`Error::TaskNotFound`]; a task in the wrong state for the action gets
/// [`Error::FailedPrecondition`] and is left as it was.
#[async_trait]
pub trait Manage: Send + Sync {
    /// Makes a scheduled, retry, archived, completed or aggregating task pending now.
    ///
    /// Errors: [`Error::FailedPrecondition`] for an active or pending task.
    async fn run_task(&self, queue: &QueueName, id: &TaskId) -> Result<()>;

    /// Archives a pending, scheduled, retry, completed or aggregating task.
    ///
    /// Errors: [`Error::FailedPrecondition`] for an active task (cancel it instead) or one
    /// already archived.
    async fn archive_task(&self, queue: &QueueName, id: &TaskId) -> Result<()>;

    /// Deletes a task that is not active, releasing its uniqueness lock when it holds it.
    ///
    /// Errors: [`Error::FailedPrecondition`] for an active task (cancel it instead).
    async fn delete_task(&self, queue: &QueueName, id: &TaskId) -> Result<()>;

    /// Makes every task of `set` pending; returns how many. See [`BulkAction::Run`].
    ///
    /// Errors: [`Error::InvalidArgument`] for a set the action does not apply to.
    async fn run_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize>;

    /// Archives every task of `set`; returns how many. See [`BulkAction::Archive`].
    ///
    /// Errors: [`Error::InvalidArgument`] for a set the action does not apply to.
    async fn archive_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize>;

    /// Deletes every task of `set`, releasing the uniqueness locks they hold; returns how many.
    /// See [`BulkAction::Delete`].
    ///
    /// Errors: [`Error::InvalidArgument`] for a set the action does not apply to.
    async fn delete_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize>;

    /// Applies `action` to every task of `set`, calling `progress` after each step; returns how
    /// many tasks it acted on.
    ///
    /// A backend whose action on a large set would block others (Redis runs a script
    /// atomically) acts in steps of bounded size, each step atomic: an interrupted action
    /// leaves every task acted on or untouched, and running it again finishes it. The action
    /// acts on at most as many tasks as the set held when it began. The default runs
    /// [`Manage::run_all`], [`Manage::archive_all`] or [`Manage::delete_all`] as one step.
    ///
    /// Errors: [`Error::InvalidArgument`] for a set the action does not apply to.
    async fn bulk_action(
        &self,
        queue: &QueueName,
        action: BulkAction,
        set: &TaskSet,
        progress: OnProgress<'_>,
    ) -> Result<usize> {
        let done = match action {
            BulkAction::Run => self.run_all(queue, set).await?,
            BulkAction::Archive => self.archive_all(queue, set).await?,
            BulkAction::Delete => self.delete_all(queue, set).await?,
        };
        progress(BulkProgress::new(done, done));
        Ok(done)
    }

    /// The archive limits this broker trims every queue's archive to (Go asynq's unless the
    /// backend was configured otherwise).
    fn archive_limits(&self) -> ArchiveLimits {
        ArchiveLimits::default()
    }

    /// What archiving `adding` more tasks into the archive of `queue` now would drop: its
    /// tasks past the age limit and those over the size limit. Reads only.
    ///
    /// The default says the backend cannot tell ([`Error::Unsupported`]).
    async fn archive_outlook(&self, queue: &QueueName, adding: usize) -> Result<ArchiveOutlook> {
        let _ = (queue, adding);
        Err(Error::Unsupported { capability: "previewing the archive's trim" })
    }

    /// [`Manage::bulk_action`] with [`BulkAction::Archive`], reporting how many tasks the
    /// archive's trims dropped, counted by the trims themselves.
    ///
    /// The default says the backend cannot count them ([`Error::Unsupported`]), having
    /// archived nothing.
    async fn archive_reporting(
        &self,
        queue: &QueueName,
        set: &TaskSet,
        progress: OnProgress<'_>,
    ) -> Result<ArchiveReport> {
        let _ = (queue, set, progress);
        Err(Error::Unsupported { capability: "counting what the archive's trim drops" })
    }

    /// [`Manage::archive_task`], reporting how many tasks the archive's trim dropped.
    ///
    /// The default says the backend cannot count them ([`Error::Unsupported`]), having
    /// archived nothing.
    async fn archive_task_reporting(&self, queue: &QueueName, id: &TaskId) -> Result<ArchiveReport> {
        let _ = (queue, id);
        Err(Error::Unsupported { capability: "counting what the archive's trim drops" })
    }

    /// Replaces the payload of a scheduled task and returns the updated task.
    ///
    /// Errors: [`Error::FailedPrecondition`] when the task is not scheduled.
    async fn update_task_payload(&self, queue: &QueueName, id: &TaskId, payload: Bytes) -> Result<TaskInfo>;

    /// Removes a queue: refused with [`Error::QueueNotEmpty`] while it holds tasks, unless
    /// `force`, which deletes its pending, scheduled, retry and archived tasks too. A queue with
    /// active tasks is never removed ([`Error::FailedPrecondition`]). As in Go asynq, completed
    /// and aggregating tasks, counters and the paused mark are left alone.
    async fn delete_queue(&self, queue: &QueueName, force: bool) -> Result<()>;

    /// [`Manage::delete_queue`], calling `progress` after each step of deleting the tasks of a
    /// forced removal; as [`Manage::bulk_action`], a backend may delete them in bounded steps,
    /// and an interrupted removal, run again, finishes. The default reports once, with no
    /// count, after [`Manage::delete_queue`].
    async fn delete_queue_with_progress(&self, queue: &QueueName, force: bool, progress: OnProgress<'_>) -> Result<()> {
        self.delete_queue(queue, force).await?;
        progress(BulkProgress::new(0, 0));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_actions_apply_to_go_asynqs_states_and_to_groups() {
        use TaskState::*;
        for action in [BulkAction::Run, BulkAction::Archive, BulkAction::Delete] {
            for state in [Pending, Active, Scheduled, Retry, Archived, Completed, Aggregating] {
                let result = validate_bulk(action, &TaskSet::State(state));
                assert_eq!(result.is_ok(), action.states().contains(&state), "{action:?} {state}");
            }
            assert!(validate_bulk(action, &TaskSet::Group(GroupName::from_static("daily"))).is_ok());
        }
        assert!(validate_bulk(BulkAction::Delete, &TaskSet::State(Active)).is_err());
    }
}
