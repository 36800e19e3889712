//! Following tasks after they are enqueued: waiting for a task's outcome, and asking servers to
//! cancel a running one.

use crate::EnqueuedWorkflow;
use asynq_core::broker::{Cancel, Wait};
use asynq_core::{CancelOutcome, Error, Progress, QueueName, Result, TaskId, TaskOutcome, validate_wait};
use futures::stream::{self, BoxStream, StreamExt};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How often [`Tracker::watch`] looks for a new progress report while it waits for the outcome.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// What [`Tracker::watch`] sees of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskEvent {
    /// Its handler made a new progress report.
    Progress(Progress),
    /// It finished: the last event of a watch.
    Finished(TaskOutcome),
}

/// Follows tasks after they are enqueued: waits for a task's outcome, and asks servers to cancel
/// a running one.
///
/// A task is named by its queue and ID, so any process can follow any task: the one that
/// enqueued it, or a web request that came later with the ID, or an operator's tool. It is a
/// type of its own rather than part of [`Client`](crate::Client) because it needs other broker
/// capabilities ([`Wait`], [`Cancel`]) than enqueueing, which stays all a producer needs.
///
/// Cheap to clone; clones share the broker connection.
///
/// ```
/// use asynq_client::{Client, Error, Task, TaskOptions, TaskOutcome, Tracker};
/// use asynq_memory::MemoryBroker;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Error> {
/// let broker = MemoryBroker::new();
/// let (client, tracker) = (Client::new(broker.clone()), Tracker::new(broker));
/// // A retention keeps the task, and the result its handler writes, after it succeeds.
/// let options = TaskOptions::new().retention(Duration::from_secs(3600));
/// let info = client.enqueue(&Task::new("report:build", r#"{"quarter":3}"#), options).await?;
///
/// // No server runs here, so the wait times out.
/// match tracker.wait(&info.queue, &info.id, Duration::from_millis(50)).await {
///     Ok(TaskOutcome::Completed(task)) => println!("result: {:?}", task.result),
///     Ok(TaskOutcome::Archived(task)) => println!("failed for good: {:?}", task.last_error),
///     Ok(_deleted) => println!("finished, and nothing is left to read"),
///     Err(Error::WaitTimeout { .. }) => println!("not finished yet"),
///     Err(e) => return Err(e),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Tracker {
    wait: Arc<dyn Wait>,
    cancel: Arc<dyn Cancel>,
}

impl Tracker {
    /// A tracker over `broker`.
    pub fn new(broker: impl Wait + Cancel + 'static) -> Self {
        let broker = Arc::new(broker);
        Self::from_parts(broker.clone(), broker)
    }

    /// A tracker over a broker shared with other components, given as its two capabilities
    /// (pass the same `Arc` twice; it converts to each).
    pub fn from_parts(wait: Arc<dyn Wait>, cancel: Arc<dyn Cancel>) -> Self {
        Self { wait, cancel }
    }

    /// Waits up to `timeout` for task `id` of `queue` to finish, and says how it ended: completed
    /// (with the result its handler wrote), archived (with the last error), or deleted (it was
    /// there when the wait began and went: it succeeded without retention, was revoked, or was
    /// deleted; nothing is left to read). A result is readable only from a task enqueued with a
    /// retention ([`TaskOptions::retention`](crate::TaskOptions::retention)); without one, a
    /// task that finishes before the wait begins is gone, and the wait says it is not found.
    /// Returns at once for a task that already finished. Retries do not end the wait.
    ///
    /// The wait is told when the task finishes where the broker can tell (Redis tells when a
    /// Rust server finishes it, the memory broker always); otherwise it looks now and then.
    ///
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a name that is no
    /// [`QueueName`] or [`TaskId`], or a zero timeout;
    /// [`Error::QueueNotFound`](crate::Error::QueueNotFound) for a queue that never had a task;
    /// [`Error::TaskNotFound`](crate::Error::TaskNotFound) for a task that is not there when the
    /// wait begins (it never existed, or it is gone already);
    /// [`Error::WaitTimeout`](crate::Error::WaitTimeout) when the task has not finished in time;
    /// [`Error::Broker`](crate::Error::Broker) when the broker fails.
    pub async fn wait(&self, queue: &str, id: &str, timeout: Duration) -> Result<TaskOutcome> {
        let (queue, id) = (QueueName::new(queue)?, TaskId::new(id)?);
        validate_wait(timeout)?;
        self.wait.wait_for_outcome(&queue, &id, timeout).await
    }

    /// Waits up to `timeout` for every task of `workflow` to finish, and says how each ended, in
    /// the workflow's order (parents first). A task cancelled because a task it waited for
    /// failed ends archived with
    /// [`PARENT_FAILED_ERROR`](asynq_core::workflow::PARENT_FAILED_ERROR). A cancelled
    /// workflow ([`Inspector::cancel_workflow`](crate::Inspector::cancel_workflow)) ends once
    /// its running tasks have stopped: each task it did not finish ends archived with an error
    /// that says so ([`is_cancelled_error`](asynq_core::workflow::is_cancelled_error)).
    ///
    /// ```
    /// use asynq_client::{FlowProducer, Task, TaskOptions, Tracker};
    /// use asynq_core::workflow::Flow;
    /// use asynq_memory::MemoryBroker;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), asynq_client::Error> {
    /// let broker = MemoryBroker::new();
    /// let flow = Flow::task(Task::new("a", ""), TaskOptions::new()).then(Flow::task(Task::new("b", ""), TaskOptions::new()));
    /// let workflow = FlowProducer::new(broker.clone()).enqueue(&flow).await?;
    /// // No server runs it here: the wait runs out.
    /// let waited = Tracker::new(broker).wait_workflow(&workflow, Duration::from_millis(50)).await;
    /// assert!(matches!(waited, Err(asynq_client::Error::WaitTimeout { .. })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: as [`Tracker::wait`], [`Error::WaitTimeout`](crate::Error::WaitTimeout) naming
    /// the first task that had not finished in time.
    pub async fn wait_workflow(&self, workflow: &EnqueuedWorkflow, timeout: Duration) -> Result<Vec<TaskOutcome>> {
        validate_wait(timeout)?;
        // The timeout is real time, as each wait's is; the client depends on no runtime's clock.
        #[allow(clippy::disallowed_methods)]
        let started = std::time::Instant::now(); // allow: wall-clock
        let mut outcomes = Vec::with_capacity(workflow.tasks.len());
        for task in &workflow.tasks {
            let left = timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
            // The workflow stored every task: one not found has finished and gone meanwhile.
            outcomes.push(gone_is_deleted(self.wait.wait_for_outcome(&task.queue, &task.id, left).await)?);
        }
        Ok(outcomes)
    }

    /// Follows task `id` of `queue` for up to `timeout`: yields each new progress report its
    /// handler makes (looked for every [`WATCH_INTERVAL`], so reports made within one interval
    /// show as the latest of them), then [`TaskEvent::Finished`] with how it ended, and ends. A
    /// task that has not finished by `timeout` ends the stream with
    /// [`Error::WaitTimeout`](crate::Error::WaitTimeout); any other error ends it too.
    ///
    /// Errors (at once, before anything is read): [`Error::InvalidArgument`] for a name that is
    /// no [`QueueName`] or [`TaskId`], or a zero timeout.
    pub fn watch(&self, queue: &str, id: &str, timeout: Duration) -> Result<BoxStream<'static, Result<TaskEvent>>> {
        let (queue, id) = (QueueName::new(queue)?, TaskId::new(id)?);
        validate_wait(timeout)?;
        let watch = Watch { wait: Arc::clone(&self.wait), queue, id, timeout, left: timeout, last: None };
        Ok(stream::unfold(Some(watch), |watch| async move {
            let mut watch = watch?;
            let event = watch.next().await;
            let more = matches!(event, Ok(TaskEvent::Progress(_)));
            Some((event, more.then_some(watch)))
        })
        .boxed())
    }

    /// Asks the servers to cancel task `id` (Go asynq's `Inspector.CancelProcessing`): its
    /// handler's cancellation token fires, and the attempt fails, so the task goes to retry, or
    /// to the archive when its retries are used up.
    ///
    /// The request is kept for [`CANCEL_KEEP`](crate::CANCEL_KEEP), so that a server that runs
    /// the task but was not listening at this moment (it was starting, or reconnecting), or that
    /// takes the task within that time, cancels it too; the first server to cancel it settles
    /// it, so the next attempt runs. Returns what the request found: the servers that report
    /// running the task, or the task's queue and state, or that no task has this ID. Nothing
    /// confirms the cancellation itself.
    ///
    /// ```
    /// use asynq_client::{CancelOutcome, Client, Error, Task, TaskOptions, TaskState, Tracker};
    /// use asynq_memory::MemoryBroker;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Error> {
    /// let broker = MemoryBroker::new();
    /// let (client, tracker) = (Client::new(broker.clone()), Tracker::new(broker));
    /// let info = client.enqueue(&Task::new("report:build", "{}"), TaskOptions::new()).await?;
    /// // No server runs it yet: a server that takes it within the next 30 s cancels it.
    /// match tracker.cancel(&info.id).await? {
    ///     CancelOutcome::Running { servers } => println!("cancelling on {servers:?}"),
    ///     CancelOutcome::NotRunning { queue, state } => assert_eq!((queue.as_str(), state), ("default", TaskState::Pending)),
    ///     CancelOutcome::UnknownTask => println!("no such task"),
    ///     other => println!("{other:?}"),
    /// }
    /// // An ID that breaks the rules is refused, and no request is kept.
    /// assert!(matches!(tracker.cancel("").await, Err(Error::InvalidArgument { .. })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an ID that is no
    /// [`TaskId`] (nothing is written); [`Error::Broker`](crate::Error::Broker) when the broker
    /// fails.
    pub async fn cancel(&self, id: &str) -> Result<CancelOutcome> {
        self.cancel.cancel(&TaskId::new(id)?).await
    }
}

/// A wait's answer for a task known to have existed: not found means it went.
fn gone_is_deleted(waited: Result<TaskOutcome>) -> Result<TaskOutcome> {
    match waited {
        Err(Error::TaskNotFound { .. }) => Ok(TaskOutcome::Deleted),
        other => other,
    }
}

/// The state of one [`Tracker::watch`].
struct Watch {
    wait: Arc<dyn Wait>,
    queue: QueueName,
    id: TaskId,
    timeout: Duration,
    /// The time left to wait; reading progress counts for nothing.
    left: Duration,
    /// The last report yielded.
    last: Option<Progress>,
}

impl Watch {
    /// The next event: a new progress report, the outcome, or the error that ends the watch.
    async fn next(&mut self) -> Result<TaskEvent> {
        loop {
            if let Some(progress) = self.wait.task_progress(&self.queue, &self.id).await?
                && self.last.as_ref() != Some(&progress)
            {
                self.last = Some(progress.clone());
                return Ok(TaskEvent::Progress(progress));
            }
            if self.left.is_zero() {
                let (queue, id, timeout) = (self.queue.clone(), self.id.clone(), self.timeout);
                return Err(Error::WaitTimeout { queue, id, timeout });
            }
            let slice = self.left.min(WATCH_INTERVAL);
            let waited = self.wait.wait_for_outcome(&self.queue, &self.id, slice).await;
            // Past the first slice the task was seen: one not found now has gone.
            let waited = if self.left < self.timeout { gone_is_deleted(waited) } else { waited };
            match waited {
                Ok(outcome) => return Ok(TaskEvent::Finished(outcome)),
                Err(Error::WaitTimeout { .. }) => self.left -= slice,
                Err(e) => return Err(e),
            }
        }
    }
}

impl fmt::Debug for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracker").finish_non_exhaustive()
    }
}
