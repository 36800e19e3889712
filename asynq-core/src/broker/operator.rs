//! The operator's traits (the inspector, the CLI, the dashboard) and [`OperatorBroker`], both at once.

use super::{Capabilities, Page};
use crate::archive::{ArchiveLimits, ArchiveOutlook, ArchiveReport};
use crate::error::{Error, Result};
use crate::info::{BackendInfo, DailyStats, QueueInfo, QueueLocation, ServerInfo, WorkerInfo};
use crate::manage::{BulkAction, BulkProgress, OnProgress, TaskSet};
use crate::names::{GroupName, QueueName, TaskId};
use crate::state::TaskState;
use crate::task::TaskInfo;
use async_trait::async_trait;
use bytes::Bytes;

/// Looks at queues and tasks and acts on them. Used by operators' tools.
#[async_trait]
pub trait Inspect: Send + Sync {
    /// The names of every known queue, sorted.
    async fn queues(&self) -> Result<Vec<QueueName>>;

    /// Sizes and statistics of `queue`.
    ///
    /// Errors: [`Error::QueueNotFound`].
    async fn queue_info(&self, queue: &QueueName) -> Result<QueueInfo>;

    /// One task.
    ///
    /// Errors: [`Error::QueueNotFound`],
    /// [`Error::TaskNotFound`].
    async fn task_info(&self, queue: &QueueName, id: &TaskId) -> Result<TaskInfo>;

    /// The tasks of `queue` in `state`, one page: pending and active in processing order,
    /// the others by score (due time, archive time or expiry), aggregating across all groups.
    async fn list_tasks(&self, queue: &QueueName, state: TaskState, page: Page) -> Result<Vec<TaskInfo>>;

    /// The tasks waiting in `group` of `queue`, one page, oldest first.
    async fn list_group_tasks(&self, queue: &QueueName, group: &GroupName, page: Page) -> Result<Vec<TaskInfo>>;

    /// Processed and failed counts of `queue` for the last `days` days (UTC), today first.
    ///
    /// Errors: [`Error::InvalidArgument`] when `days` is 0,
    /// [`Error::QueueNotFound`].
    async fn history(&self, queue: &QueueName, days: usize) -> Result<Vec<DailyStats>>;

    /// The servers alive now, with their workers, as their heartbeats last wrote them
    /// ([`ServerState::write_server_state`](crate::broker::ServerState::write_server_state)).
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>>;

    /// What the backend says about itself (version, memory, clients, nodes), and the eviction
    /// policies in force that can drop tasks ([`BackendInfo::eviction_risks`]; none on a backend
    /// that never evicts).
    async fn backend_info(&self) -> Result<BackendInfo>;

    /// Where a sharded backend keeps `queue` (on a Redis Cluster, its hash slot); `None` on a
    /// backend that does not shard.
    async fn queue_location(&self, queue: &QueueName) -> Result<Option<QueueLocation>>;

    /// Stops workers from taking tasks from `queue`; its tasks stay where they are.
    ///
    /// Errors: [`Error::FailedPrecondition`] if already paused.
    async fn pause_queue(&self, queue: &QueueName) -> Result<()>;

    /// Lets workers take tasks from `queue` again.
    ///
    /// Errors: [`Error::FailedPrecondition`] if not paused.
    async fn unpause_queue(&self, queue: &QueueName) -> Result<()>;
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
    /// Errors: [`Error::FailedPrecondition`] when the task is not scheduled, or has started (its
    /// handler parked it: see [`started_task_refused`](crate::steps::started_task_refused)).
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

/// What an operator's tool (the inspector, the CLI, the dashboard) needs of its broker: reading
/// and acting on queues and tasks, plus the [`Capabilities`] it shows when present.
/// Implemented for every type that implements them.
pub trait OperatorBroker: Inspect + Manage + Capabilities {}

impl<T> OperatorBroker for T where T: Inspect + Manage + Capabilities {}
