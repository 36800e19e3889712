//! The operator's view of a broker: queues, tasks, servers and schedulers, and the actions an
//! operator takes on them. What Go asynq's `Inspector` does, on any broker.

use asynq_core::ServerRequest;
use asynq_core::broker::EventLog;
use asynq_core::broker::Workflows;
use asynq_core::broker::{GroupInfo, OperatorBroker, Page, SchedulerEnqueueEvent, SchedulerEntry};
use asynq_core::events::{EventCap, EventPage, EventPosition};
pub use asynq_core::workflow::WorkflowCancellation;
use asynq_core::workflow::{CancelMark, ParentOutcome, TaskRef, WorkflowSummary};
use asynq_core::{
    ArchiveLimits, ArchiveOutlook, ArchiveReport, BackendInfo, BulkAction, BulkProgress, CancelOutcome, DailyStats,
    Error, GroupName, QueueInfo, QueueLocation, QueueName, Result, ServerInfo, TaskId, TaskInfo, TaskSet, TaskState,
    WorkerInfo, WorkflowId,
};
use bytes::Bytes;
use futures::StreamExt as _;
use std::fmt;
use std::sync::Arc;

mod shards;
mod type_metrics;
pub use type_metrics::{TypeMetricsReport, TypeSeries};

/// A server, as its last heartbeat described it, with the tasks it was running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    /// The server.
    pub server: ServerInfo,
    /// The tasks it was running.
    pub workers: Vec<WorkerInfo>,
}

/// Looks at queues, tasks, servers and schedulers, and acts on them: Go asynq's `Inspector`.
///
/// Every operation works on any broker; on Redis it reads and writes what Go asynq does, so it
/// inspects queues written by Go asynq too. Operations on a queue refuse an unknown queue with
/// [`Error::QueueNotFound`](crate::Error::QueueNotFound); operations on a task refuse a missing
/// one with [`Error::TaskNotFound`](crate::Error::TaskNotFound).
///
/// Cheap to clone; clones share the broker connection.
///
/// ```
/// use asynq_client::{Client, Inspector, Task, TaskOptions, TaskSet, TaskState};
/// use asynq_memory::MemoryBroker;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), asynq_client::Error> {
/// let broker = MemoryBroker::new();
/// let (client, inspector) = (Client::new(broker.clone()), Inspector::new(broker));
/// let later = TaskOptions::new().process_in(Duration::from_secs(3600));
/// let info = client.enqueue(&Task::new("report:build", "q3"), later).await?;
///
/// assert_eq!(inspector.queue_info("default").await?.scheduled, 1);
/// inspector.run_task("default", &info.id).await?; // now pending
/// assert_eq!(inspector.task_info("default", &info.id).await?.state, TaskState::Pending);
/// assert_eq!(inspector.archive_all("default", &TaskSet::State(TaskState::Pending)).await?, 1);
/// assert_eq!(inspector.delete_all("default", &TaskSet::State(TaskState::Archived)).await?, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Inspector {
    broker: Arc<dyn OperatorBroker>,
}

impl fmt::Debug for Inspector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inspector").finish_non_exhaustive()
    }
}

/// Queue, task and group names are taken as strings, as an operator types them, and checked
/// once here ([`QueueName`], [`TaskId`], [`GroupName`]): a name that breaks its rules is an
/// [`Error::InvalidArgument`] stating the rule, and reaches no broker.
impl Inspector {
    /// An inspector over `broker`.
    ///
    /// The broker needs only what an operator uses ([`OperatorBroker`]); groups, scheduler
    /// entries and cancellation come from its
    /// [`Capabilities`](asynq_core::broker::Capabilities) when it has them.
    pub fn new(broker: impl OperatorBroker) -> Self {
        Self::from_shared(Arc::new(broker))
    }

    /// An inspector over a broker shared with other components.
    pub fn from_shared(broker: Arc<dyn OperatorBroker>) -> Self {
        Self { broker }
    }

    /// The names of every known queue, sorted.
    pub async fn queues(&self) -> Result<Vec<QueueName>> {
        self.broker.queues().await
    }

    /// Sizes per state, memory use, latency of the oldest pending task, processed and failed
    /// counts (today and in total), and whether the queue is paused. For a sharded queue's
    /// logical name, the sums over its shards, which [`QueueInfo::shards`] lists.
    pub async fn queue_info(&self, queue: &str) -> Result<QueueInfo> {
        let queue = QueueName::new(queue)?;
        match self.logical_queue_info(&queue).await? {
            Some(logical) => Ok(logical),
            None => self.broker.queue_info(&queue).await,
        }
    }

    /// Processed and failed counts for the last `days` days (UTC), today first.
    pub async fn history(&self, queue: &str, days: usize) -> Result<Vec<DailyStats>> {
        DailyStats::validate_days(days)?;
        self.broker.history(&QueueName::new(queue)?, days).await
    }

    /// The groups of `queue` with tasks waiting to be aggregated, and their sizes; none on a
    /// broker that does not aggregate groups.
    pub async fn groups(&self, queue: &str) -> Result<Vec<GroupInfo>> {
        match self.broker.clone().as_aggregate() {
            Some(aggregate) => aggregate.groups(&QueueName::new(queue)?).await,
            None => Ok(Vec::new()),
        }
    }

    /// The names of the groups [`Inspector::groups`] lists, sorted, without reading their sizes
    /// (none on a broker that does not aggregate groups); see
    /// [`Aggregate::group_names`](asynq_core::broker::Aggregate::group_names).
    pub async fn group_names(&self, queue: &str) -> Result<Vec<GroupName>> {
        match self.broker.clone().as_aggregate() {
            Some(aggregate) => aggregate.group_names(&QueueName::new(queue)?).await,
            None => Ok(Vec::new()),
        }
    }

    /// How many tasks wait in `group` of `queue`, reading that group only (0 on a broker that
    /// does not aggregate groups); see
    /// [`Aggregate::group_size`](asynq_core::broker::Aggregate::group_size).
    pub async fn group_size(&self, queue: &str, group: &str) -> Result<usize> {
        match self.broker.clone().as_aggregate() {
            Some(aggregate) => aggregate.group_size(&QueueName::new(queue)?, &GroupName::new(group)?).await,
            None => Ok(0),
        }
    }

    /// Removes `queue`. Refused while it holds tasks unless `force`; never while tasks of it
    /// run; never for a shard of a declared sharded queue ([`Error::FailedPrecondition`]: reshard
    /// it instead). See [`Manage::delete_queue`](asynq_core::broker::Manage::delete_queue).
    pub async fn delete_queue(&self, queue: &str, force: bool) -> Result<()> {
        let queue = QueueName::new(queue)?;
        self.refuse_removing_a_shard(&queue).await?;
        self.broker.delete_queue(&queue, force).await
    }

    /// [`Inspector::delete_queue`], calling `progress` as the tasks of a forced removal are
    /// deleted. On Redis they are deleted in bounded steps, so that Redis serves others
    /// meanwhile; an interrupted removal leaves each task whole or gone, and running it again
    /// finishes it. See
    /// [`Manage::delete_queue_with_progress`](asynq_core::broker::Manage::delete_queue_with_progress).
    pub async fn delete_queue_with_progress(
        &self,
        queue: &str,
        force: bool,
        progress: impl Fn(BulkProgress) + Send + Sync,
    ) -> Result<()> {
        let queue = QueueName::new(queue)?;
        self.refuse_removing_a_shard(&queue).await?;
        self.broker.delete_queue_with_progress(&queue, force, &progress).await
    }

    /// Stops servers from taking tasks from `queue`.
    pub async fn pause_queue(&self, queue: &str) -> Result<()> {
        self.broker.pause_queue(&QueueName::new(queue)?).await
    }

    /// Lets servers take tasks from `queue` again.
    pub async fn unpause_queue(&self, queue: &str) -> Result<()> {
        self.broker.unpause_queue(&QueueName::new(queue)?).await
    }

    /// One task, with its result, last error and next process time.
    pub async fn task_info(&self, queue: &str, id: &str) -> Result<TaskInfo> {
        self.broker.task_info(&QueueName::new(queue)?, &TaskId::new(id)?).await
    }

    /// One page of the workflows kept, newest first (a workflow's record is kept for
    /// [`WORKFLOW_RESULT_TTL`](asynq_core::workflow::WORKFLOW_RESULT_TTL) after it was stored).
    ///
    /// Errors: [`Error::Unsupported`] on a broker without workflows.
    pub async fn workflows(&self, page: Page) -> Result<Vec<WorkflowSummary>> {
        self.workflow_store()?.list_workflows(page).await
    }

    /// How many workflows are kept: those [`Inspector::workflows`] pages through.
    ///
    /// Errors: [`Error::Unsupported`] on a broker without workflows.
    pub async fn workflow_count(&self) -> Result<usize> {
        self.workflow_store()?.count_workflows().await
    }

    /// Workflow `id`: each of its tasks, parents first, with the tasks it waits for and what the
    /// broker holds of it now (`None` for a task that is gone: it succeeded without retention,
    /// or was deleted).
    ///
    /// Errors: [`Error::WorkflowNotFound`] when no such workflow is kept;
    /// [`Error::Unsupported`] on a broker without workflows.
    pub async fn workflow(&self, id: &str) -> Result<WorkflowReport> {
        let id = WorkflowId::new(id)?;
        let workflows = self.workflow_store()?;
        let nodes = workflows.workflow_tasks(&id).await?;
        let refs: Vec<TaskRef> = nodes.iter().map(|node| node.task.clone()).collect();
        let cancelled = workflows.is_cancelled(&id).await?;
        // Each read owns its task, so that the future stays `Send` for callers that spawn it.
        let infos: Vec<Result<Option<TaskInfo>>> = futures::stream::iter(refs.iter().cloned())
            .map(|task| async move {
                match self.broker.task_info(&task.queue, &task.id).await {
                    Ok(info) => Ok(Some(info)),
                    Err(Error::TaskNotFound { .. } | Error::QueueNotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            })
            .buffered(WORKFLOW_READS_AT_ONCE)
            .collect()
            .await;
        let infos = infos.into_iter().collect::<Result<Vec<_>>>()?;
        // How the tasks that are gone settled, as far as the broker keeps it.
        let gone: Vec<TaskRef> =
            refs.iter().zip(&infos).filter(|(_, info)| info.is_none()).map(|(task, _)| task.clone()).collect();
        let mut settled =
            if gone.is_empty() { Vec::new() } else { workflows.settled_outcomes(&gone).await? }.into_iter();
        let tasks = nodes
            .into_iter()
            .zip(infos)
            .map(|(node, info)| WorkflowTask {
                settled: if info.is_none() {
                    settled.next().unwrap_or(ParentOutcome::Unknown)
                } else {
                    ParentOutcome::Unknown
                },
                type_name: info.as_ref().map(|info| info.type_name.clone()).or(node.type_name),
                task: node.task,
                name: node.name,
                parents: node.parents,
                info,
            })
            .collect();
        Ok(WorkflowReport { id, tasks, cancelled })
    }

    /// Cancels workflow `id`. The workflow is marked cancelled first
    /// ([`Workflows::mark_cancelled`]; its state reads [`WorkflowState::Cancelled`] from then on),
    /// so that a server archives each of its tasks rather than run or retry it, whenever it
    /// picks one up. Then each task still waiting is archived without running
    /// ([`WORKFLOW_CANCELLED_ERROR`](asynq_core::workflow::WORKFLOW_CANCELLED_ERROR)), each
    /// pending, scheduled, aggregating or to be retried is archived as [`Inspector::archive_task`]
    /// would, and servers are asked to stop each running one ([`Inspector::cancel`]): its
    /// handler sees its context cancelled, and the attempt ends archived, never retried, with
    /// [`WORKFLOW_STOPPED_ERROR`](asynq_core::workflow::WORKFLOW_STOPPED_ERROR) before its error
    /// (a handler that succeeds anyway succeeds). Tasks that settled are left as they are.
    ///
    /// Idempotent: cancelling a workflow cancelled before writes nothing and reports what the
    /// first cancel did; one whose cancel stopped half-way (its process died) is cancelled
    /// again. A task that a Go server runs is stopped the same way but, as Go knows nothing of
    /// workflows, a Go server may retry it (a Rust server taking the retry archives it).
    ///
    /// Errors: [`Error::WorkflowNotFound`] when no such workflow is kept;
    /// [`Error::Unsupported`] on a broker without workflows.
    pub async fn cancel_workflow(&self, id: &str) -> Result<WorkflowCancellation> {
        let workflows = self.workflow_store()?;
        let workflow = WorkflowId::new(id)?;
        if let CancelMark::Done(earlier) = workflows.mark_cancelled(&workflow).await? {
            return Ok(earlier);
        }
        let report = self.workflow(id).await?;
        let mut done = WorkflowCancellation::default();
        // Children first, so that each waiting task is archived as cancelled before a parent's
        // failure reaches it.
        for task in report.tasks.iter().rev() {
            let Some(info) = &task.info else { continue };
            let (queue, id) = (&task.task.queue, &task.task.id);
            let archive = match info.state {
                // Released meanwhile: archived as the pending task it now is.
                TaskState::Waiting => !workflows.cancel_waiting(&task.task).await?,
                TaskState::Pending | TaskState::Scheduled | TaskState::Retry | TaskState::Aggregating => true,
                TaskState::Active => {
                    let _found = self.cancel(id.as_str()).await?;
                    done.stopping += 1;
                    false
                }
                TaskState::Completed | TaskState::Archived => false,
            };
            if !archive {
                if info.state == TaskState::Waiting {
                    done.archived += 1;
                }
                continue;
            }
            match self.broker.archive_task(queue, id).await {
                Ok(()) => done.archived += 1,
                Err(Error::TaskNotFound { .. }) => {}
                // Taken by a server meanwhile: stopped as a running one is.
                Err(Error::FailedPrecondition(_)) => {
                    if self.broker.task_info(queue, id).await.is_ok_and(|now| now.state == TaskState::Active) {
                        self.cancel(id.as_str()).await?;
                        done.stopping += 1;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        workflows.record_cancellation(&workflow, done).await?;
        Ok(done)
    }

    fn workflow_store(&self) -> Result<Arc<dyn Workflows>> {
        self.broker.clone().as_workflows().ok_or(Error::Unsupported { capability: "workflows" })
    }

    /// One page of the tasks of `queue` in `state`: pending and active in processing order,
    /// scheduled and retry by due time, archived oldest first, completed by expiry, and
    /// aggregating across all groups.
    pub async fn list_tasks(&self, queue: &str, state: TaskState, page: Page) -> Result<Vec<TaskInfo>> {
        self.broker.list_tasks(&QueueName::new(queue)?, state, page).await
    }

    /// One page of the tasks waiting in `group` of `queue`.
    pub async fn list_group_tasks(&self, queue: &str, group: &str, page: Page) -> Result<Vec<TaskInfo>> {
        self.broker.list_group_tasks(&QueueName::new(queue)?, &GroupName::new(group)?, page).await
    }

    /// Makes a task that is not active or pending pending now.
    pub async fn run_task(&self, queue: &str, id: &str) -> Result<()> {
        self.broker.run_task(&QueueName::new(queue)?, &TaskId::new(id)?).await
    }

    /// Archives a task that is not active.
    pub async fn archive_task(&self, queue: &str, id: &str) -> Result<()> {
        self.broker.archive_task(&QueueName::new(queue)?, &TaskId::new(id)?).await
    }

    /// Deletes a task that is not active, releasing its uniqueness lock.
    pub async fn delete_task(&self, queue: &str, id: &str) -> Result<()> {
        self.broker.delete_task(&QueueName::new(queue)?, &TaskId::new(id)?).await
    }

    /// Makes every scheduled, retry or archived task, or every task of a group, pending;
    /// returns how many.
    pub async fn run_all(&self, queue: &str, set: &TaskSet) -> Result<usize> {
        asynq_core::validate_bulk(asynq_core::BulkAction::Run, set)?;
        self.broker.run_all(&QueueName::new(queue)?, set).await
    }

    /// Archives every pending, scheduled or retry task, or every task of a group; returns how
    /// many.
    pub async fn archive_all(&self, queue: &str, set: &TaskSet) -> Result<usize> {
        asynq_core::validate_bulk(asynq_core::BulkAction::Archive, set)?;
        self.broker.archive_all(&QueueName::new(queue)?, set).await
    }

    /// Deletes every task of a state other than active, or of a group; returns how many.
    pub async fn delete_all(&self, queue: &str, set: &TaskSet) -> Result<usize> {
        asynq_core::validate_bulk(asynq_core::BulkAction::Delete, set)?;
        self.broker.delete_all(&QueueName::new(queue)?, set).await
    }

    /// Runs, archives or deletes every task of `set` (as [`Inspector::run_all`],
    /// [`Inspector::archive_all`] and [`Inspector::delete_all`]), calling `progress` after each
    /// step; returns how many tasks it acted on.
    ///
    /// On Redis the action goes in steps of a few hundred tasks, each one atomic script call,
    /// so that a set of millions never blocks Redis for long. It acts on at most as many tasks
    /// as the set held when it began; an interrupted action leaves each task acted on or
    /// untouched, and running it again finishes it. See
    /// [`Manage::bulk_action`](asynq_core::broker::Manage::bulk_action).
    pub async fn bulk_action(
        &self,
        queue: &str,
        action: BulkAction,
        set: &TaskSet,
        progress: impl Fn(BulkProgress) + Send + Sync,
    ) -> Result<usize> {
        asynq_core::validate_bulk(action, set)?;
        self.broker.bulk_action(&QueueName::new(queue)?, action, set, &progress).await
    }

    /// The archive limits the broker trims each queue's archive to.
    pub fn archive_limits(&self) -> ArchiveLimits {
        self.broker.archive_limits()
    }

    /// What archiving `adding` more tasks into the archive of `queue` now would drop: the
    /// archived tasks past the age limit and those over the size limit (see
    /// [`ArchiveOutlook`]). Reads only.
    pub async fn archive_outlook(&self, queue: &str, adding: usize) -> Result<ArchiveOutlook> {
        self.broker.archive_outlook(&QueueName::new(queue)?, adding).await
    }

    /// What archiving every task of `set` (as [`Inspector::archive_all`]) would drop: the
    /// outlook for as many tasks as the set holds now. Reads only.
    pub async fn archive_all_outlook(&self, queue: &str, set: &TaskSet) -> Result<ArchiveOutlook> {
        asynq_core::validate_bulk(BulkAction::Archive, set)?;
        let adding = match set {
            TaskSet::Group(group) => {
                self.groups(queue).await?.into_iter().find(|g| &g.group == group).map_or(0, |g| g.size)
            }
            TaskSet::State(state) => {
                let info = self.queue_info(queue).await?;
                match state {
                    TaskState::Pending => info.pending,
                    TaskState::Scheduled => info.scheduled,
                    TaskState::Retry => info.retry,
                    _ => 0,
                }
            }
        };
        self.archive_outlook(queue, adding).await
    }

    /// Archives every task of `set` as [`Inspector::bulk_action`] does, calling `progress`
    /// after each step, and reports how many tasks it archived and how many the archive's
    /// trims dropped, counted as they dropped them.
    pub async fn archive_all_reporting(
        &self,
        queue: &str,
        set: &TaskSet,
        progress: impl Fn(BulkProgress) + Send + Sync,
    ) -> Result<ArchiveReport> {
        asynq_core::validate_bulk(BulkAction::Archive, set)?;
        self.broker.archive_reporting(&QueueName::new(queue)?, set, &progress).await
    }

    /// Archives a task that is not active, as [`Inspector::archive_task`], and reports how many
    /// archived tasks the archive's trim dropped.
    pub async fn archive_task_reporting(&self, queue: &str, id: &str) -> Result<ArchiveReport> {
        self.broker.archive_task_reporting(&QueueName::new(queue)?, &TaskId::new(id)?).await
    }

    /// Replaces the payload of a scheduled task.
    ///
    /// Errors: [`Error::FailedPrecondition`] when the task is not scheduled, or its handler parked
    /// it (a durable sleep or signal wait), to go on with the payload it has.
    pub async fn update_task_payload(&self, queue: &str, id: &str, payload: impl Into<Bytes>) -> Result<TaskInfo> {
        self.broker.update_task_payload(&QueueName::new(queue)?, &TaskId::new(id)?, payload.into()).await
    }

    /// Asks the server running task `id` to cancel it (its handler's cancellation token fires;
    /// the task goes to retry), as [`Tracker::cancel`](crate::Tracker::cancel) does: the request
    /// is kept for [`CANCEL_KEEP`](crate::CANCEL_KEEP) for a server that runs or takes the task
    /// but did not hear it, and the answer says what it found.
    ///
    /// Errors: [`Error::InvalidArgument`] for an ID that is no [`TaskId`] (nothing is written);
    /// [`Error::Unsupported`] on a broker that does not carry cancellation requests.
    pub async fn cancel(&self, id: &str) -> Result<CancelOutcome> {
        let cancel = self.broker.clone().as_cancel().ok_or(Error::Unsupported { capability: "cancelling tasks" })?;
        cancel.cancel(&TaskId::new(id)?).await
    }

    /// Asks the live server `server_id` to quiet: to finish the tasks it runs and take no new
    /// one, reporting itself `stopped` (what SIGTSTP does, and Sidekiq's "quiet"). The server
    /// reads the request on its next heartbeat ([`ServerControl`](crate::ServerControl)); Go
    /// asynq's servers never read it, and it expires.
    ///
    /// Errors, with nothing written: [`Error::InvalidArgument`] for a malformed ID,
    /// [`Error::ServerNotFound`] when no live server has it, [`Error::Unsupported`] on a broker
    /// that does not carry server requests.
    pub async fn quiet_server(&self, server_id: &str) -> Result<()> {
        self.request_server(server_id, ServerRequest::Quiet).await
    }

    /// Asks the live server `server_id` to stop: to shut down gracefully, as on SIGTERM (take
    /// nothing new, let running tasks finish within its shutdown timeout, give back the others),
    /// which ends its `Server::run`. Read on its next heartbeat, as [`Inspector::quiet_server`].
    ///
    /// Errors: as [`Inspector::quiet_server`].
    pub async fn stop_server(&self, server_id: &str) -> Result<()> {
        self.request_server(server_id, ServerRequest::Stop).await
    }

    /// Asks the live server `server_id` to act on `request`; see [`Inspector::quiet_server`]
    /// and [`Inspector::stop_server`].
    ///
    /// Errors: as [`Inspector::quiet_server`].
    pub async fn request_server(&self, server_id: &str, request: ServerRequest) -> Result<()> {
        let control = self
            .broker
            .clone()
            .as_server_control()
            .ok_or(Error::Unsupported { capability: "requests to quiet or stop servers" })?;
        control.request_server(server_id, request).await
    }

    /// The live servers and the tasks each is running.
    pub async fn servers(&self) -> Result<Vec<ServerReport>> {
        let servers = self.broker.servers().await?;
        Ok(servers.into_iter().map(|(server, workers)| ServerReport { server, workers }).collect())
    }

    /// The entries of every live scheduler; none on a broker that keeps no scheduler records.
    pub async fn scheduler_entries(&self) -> Result<Vec<SchedulerEntry>> {
        match self.broker.clone().as_scheduler_state() {
            Some(schedulers) => schedulers.scheduler_entries().await,
            None => Ok(Vec::new()),
        }
    }

    /// One page of the tasks scheduler entry `entry_id` enqueued, newest first; none on a broker
    /// that keeps no scheduler records.
    pub async fn scheduler_history(&self, entry_id: &str, page: Page) -> Result<Vec<SchedulerEnqueueEvent>> {
        match self.broker.clone().as_scheduler_state() {
            Some(schedulers) => schedulers.scheduler_history(entry_id, page).await,
            None => Ok(Vec::new()),
        }
    }

    /// The tasks holding a slot of the shared concurrency limit `key` now (by the system clock),
    /// with when each hold expires, soonest first: what `Config::shared_type_concurrency`
    /// (key `type:<type name>`) or `Config::shared_limit` counts. None on a broker without
    /// shared limits.
    pub async fn slot_holders(&self, key: &str) -> Result<Vec<(TaskId, std::time::SystemTime)>> {
        let key = asynq_core::slots::SlotKey::new(key)?;
        match self.broker.clone().as_concurrency_slots() {
            Some(slots) => slots.slot_holders(&key, asynq_core::Clock::now(&asynq_core::SystemClock)).await,
            None => Ok(Vec::new()),
        }
    }

    /// Starts keeping a log of `queue`'s task events (enqueued, started, progress, succeeded,
    /// retried, requeued, archived, deleted, and durable steps' step, parked, signalled), about
    /// `cap` of the newest, or changes the cap of
    /// the log it keeps. Writers in other processes follow within
    /// [`EVENT_SETTINGS_DELAY`](asynq_core::events::EVENT_SETTINGS_DELAY). See
    /// [`asynq_core::events`].
    ///
    /// Errors: [`Error::Unsupported`](crate::Error::Unsupported) from a broker without event
    /// logs.
    pub async fn enable_events(&self, queue: &str, cap: EventCap) -> Result<()> {
        let queue = QueueName::new(queue)?;
        self.event_log()?.set_event_cap(&queue, Some(cap)).await
    }

    /// Stops keeping `queue`'s event log and drops it.
    ///
    /// Errors: [`Error::Unsupported`](crate::Error::Unsupported) from a broker without event
    /// logs.
    pub async fn disable_events(&self, queue: &str) -> Result<()> {
        let queue = QueueName::new(queue)?;
        self.event_log()?.set_event_cap(&queue, None).await
    }

    /// The queues that keep event logs, with their caps, by name; none on a broker without
    /// event logs.
    pub async fn event_caps(&self) -> Result<Vec<(QueueName, EventCap)>> {
        match self.broker.clone().as_event_log() {
            Some(log) => log.event_caps().await,
            None => Ok(Vec::new()),
        }
    }

    /// Up to `max` events of `queue`'s log from `from`, oldest first, and where to read next.
    /// To follow a log, read again from [`EventPage::next`] (after a pause when a read returns
    /// nothing); a reader that comes back within the cap misses nothing, and one that fell
    /// further behind is told so by [`EventPage::missed`]. A queue without a log (or a broker
    /// without event logs) reads as an empty log.
    pub async fn read_events(&self, queue: &str, from: EventPosition, max: usize) -> Result<EventPage> {
        let queue = QueueName::new(queue)?;
        match self.broker.clone().as_event_log() {
            Some(log) => log.read_events(&queue, from, max).await,
            None => Ok(EventPage { events: Vec::new(), next: from, missed: false }),
        }
    }

    fn event_log(&self) -> Result<Arc<dyn EventLog>> {
        self.broker.clone().as_event_log().ok_or(crate::Error::Unsupported { capability: "task event logs" })
    }

    /// What the backend says about itself: version, memory, clients, nodes, and whether its
    /// eviction policy can drop tasks ([`BackendInfo::eviction_risks`]).
    pub async fn backend_info(&self) -> Result<BackendInfo> {
        self.broker.backend_info().await
    }

    /// Where `queue`'s keys live on a Redis Cluster (hash slot and nodes); `None` elsewhere.
    pub async fn queue_location(&self, queue: &str) -> Result<Option<QueueLocation>> {
        self.broker.queue_location(&QueueName::new(queue)?).await
    }
}

/// How many tasks [`Inspector::workflow`] reads at once.
const WORKFLOW_READS_AT_ONCE: usize = 64;

/// A workflow as [`Inspector::workflow`] finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowReport {
    /// Its ID.
    pub id: WorkflowId,
    /// Its tasks, parents first.
    pub tasks: Vec<WorkflowTask>,
    /// Whether it was cancelled ([`Inspector::cancel_workflow`]).
    pub cancelled: bool,
}

/// One task of a [`WorkflowReport`].
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowTask {
    /// Where it is.
    pub task: TaskRef,
    /// Its name in its DAG, for a task of a DAG
    /// ([`DagTask`](asynq_core::workflow::DagTask)).
    pub name: Option<String>,
    /// The tasks it waits for, as positions in [`WorkflowReport::tasks`] (each before its own),
    /// in the order its handler sees their results.
    pub parents: Vec<usize>,
    /// What the broker holds of it; `None` once it is gone (it succeeded without retention, or
    /// was deleted).
    pub info: Option<TaskInfo>,
    /// Its task type: from [`WorkflowTask::info`], or for a task that is gone from the
    /// workflow's record (`None` in a record a version that kept no types wrote).
    pub type_name: Option<String>,
    /// For a task that is gone, how it settled while the broker keeps that
    /// ([`Workflows::settled_outcomes`]): [`ParentOutcome::Succeeded`] for one that succeeded
    /// without retention, [`ParentOutcome::Failed`] for one archived and then removed,
    /// [`ParentOutcome::Unknown`] for one whose outcome was never recorded (a Go server ran it
    /// while nothing waited for it, or it was deleted) or settled too long ago. Always
    /// [`ParentOutcome::Unknown`] for a task that is not gone.
    pub settled: ParentOutcome,
}

/// Where a whole workflow stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowState {
    /// Some task has yet to settle: it waits, is pending, scheduled, running or to be retried.
    Running,
    /// Every task settled, and some failed for good (or never ran because a task it waited
    /// for failed), whether it is still stored or only its recorded outcome says so.
    Failed,
    /// Every task succeeded (or is gone, as a task that succeeded without retention is).
    Succeeded,
    /// It was cancelled ([`Inspector::cancel_workflow`]); tasks that were running may still
    /// be stopping.
    Cancelled,
}

impl WorkflowState {
    /// Its name: `running`, `failed`, `succeeded` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowState::Running => "running",
            WorkflowState::Failed => "failed",
            WorkflowState::Succeeded => "succeeded",
            WorkflowState::Cancelled => "cancelled",
        }
    }
}

impl WorkflowReport {
    /// Where the workflow stands: cancelled once it was cancelled, otherwise from its tasks' states.
    pub fn state(&self) -> WorkflowState {
        let states = || self.tasks.iter().filter_map(|task| task.info.as_ref().map(|info| info.state));
        if self.cancelled {
            WorkflowState::Cancelled
        } else if states().any(|state| !matches!(state, TaskState::Completed | TaskState::Archived)) {
            WorkflowState::Running
        } else if states().any(|state| state == TaskState::Archived)
            || self.tasks.iter().any(|task| task.info.is_none() && matches!(task.settled, ParentOutcome::Failed { .. }))
        {
            WorkflowState::Failed
        } else {
            WorkflowState::Succeeded
        }
    }
}
