//! Handlers: what runs a task, what it is told, and how it says a task failed.

use async_trait::async_trait;
use asynq_core::broker::Dequeue;
use asynq_core::broker::Workflows;
use asynq_core::workflow::{ParentResult, TaskRef, WORKFLOW_HEADER};
use asynq_core::{Clock, Progress, QueueName, StoredTask, SystemClock, Task, TaskId};
use bytes::Bytes;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Runs tasks.
///
/// Implement it for a type, wrap an async function or closure with [`handler_fn`], or route by
/// task type with a [`ServeMux`](crate::ServeMux).
///
/// The returned future is dropped before it completes when the task's timeout or deadline
/// passes, when its lease is lost, or when the server gives up waiting for it at shutdown.
/// The attempt's cancellation token ([`TaskContext::cancelled`]) fires at the same time, so work
/// the handler spawned can stop too.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Processes one task. `Ok` means success; see [`HandlerError`] for the ways to fail.
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError>;
}

#[async_trait]
impl<H: Handler + ?Sized> Handler for Arc<H> {
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        (**self).process_task(ctx, task).await
    }
}

/// A [`Handler`] made from an async function or closure; see [`handler_fn`].
#[derive(Clone, Copy)]
pub struct HandlerFn<F> {
    f: F,
}

/// Turns `f`, an async function or closure taking the context and the task, into a [`Handler`].
///
/// ```
/// use asynq_server::{handler_fn, HandlerError, TaskContext};
/// use asynq_core::Task;
///
/// let handler = handler_fn(|_ctx: TaskContext, task: Task| async move {
///     if task.payload().is_empty() {
///         return Err(HandlerError::skip_retry("empty payload"));
///     }
///     Ok(())
/// });
/// # let _ = handler;
/// ```
pub fn handler_fn<F, Fut>(f: F) -> HandlerFn<F>
where
    F: Fn(TaskContext, Task) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    HandlerFn { f }
}

#[async_trait]
impl<F, Fut> Handler for HandlerFn<F>
where
    F: Fn(TaskContext, Task) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        (self.f)(ctx, task).await
    }
}

impl<F> fmt::Debug for HandlerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFn").finish_non_exhaustive()
    }
}

/// Why a handler failed, and what the server should do about it.
///
/// Any error converts into a plain failure with `?` (the task is retried after the retry delay,
/// or archived once its retries are used up), except data that does not decode (a
/// `PayloadError`, feature `json`: a task's payload or a workflow parent's result), which
/// archives at once, as [`HandlerError::skip_retry`] does: the same bytes will not decode any
/// better on a retry. [`HandlerError::revoke`] deletes the task without counting a failure.
///
/// Like `anyhow::Error`, this type does not implement `std::error::Error` itself, so that any
/// error converts into it.
pub struct HandlerError {
    kind: Kind,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Failure,
    SkipRetry,
    Revoke,
    Panic,
    DeadlineExceeded,
    Cancelled,
    LeaseExpired,
    HandlerNotFound,
    Suspended,
}

impl HandlerError {
    fn of(kind: Kind, source: Option<Box<dyn StdError + Send + Sync>>) -> Self {
        Self { kind, source }
    }

    /// A failure: the task is retried, or archived when out of retries. A `PayloadError`
    /// (feature `json`) archives at once instead, as [`HandlerError::skip_retry`] does.
    pub fn new(err: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        let err = err.into();
        #[cfg(feature = "json")]
        if err.is::<asynq_core::PayloadError>() {
            return Self::of(Kind::SkipRetry, Some(err));
        }
        Self::of(Kind::Failure, Some(err))
    }

    /// A failure that retrying cannot fix: the task is archived at once (Go's `SkipRetry`).
    pub fn skip_retry(reason: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self::of(Kind::SkipRetry, Some(reason.into()))
    }

    /// The task should not run at all: it is deleted and counted as processed, not failed
    /// (Go's `RevokeTask`).
    pub fn revoke() -> Self {
        Self::of(Kind::Revoke, None)
    }

    pub(crate) fn panic(message: String) -> Self {
        Self::of(Kind::Panic, Some(message.into()))
    }

    pub(crate) fn deadline_exceeded() -> Self {
        Self::of(Kind::DeadlineExceeded, None)
    }

    pub(crate) fn cancelled() -> Self {
        Self::of(Kind::Cancelled, None)
    }

    pub(crate) fn lease_expired() -> Self {
        Self::of(Kind::LeaseExpired, None)
    }

    pub(crate) fn handler_not_found(type_name: &str) -> Self {
        Self::of(Kind::HandlerNotFound, Some(format!("handler not found for task {type_name:?}").into()))
    }

    /// True for [`HandlerError::skip_retry`].
    pub fn is_skip_retry(&self) -> bool {
        self.kind == Kind::SkipRetry
    }

    /// True for [`HandlerError::revoke`].
    pub fn is_revoke(&self) -> bool {
        self.kind == Kind::Revoke
    }

    /// True when the handler panicked.
    pub fn is_panic(&self) -> bool {
        self.kind == Kind::Panic
    }

    /// True when the task's timeout or deadline passed before the handler finished.
    pub fn is_deadline_exceeded(&self) -> bool {
        self.kind == Kind::DeadlineExceeded
    }

    /// True when the task was cancelled while running.
    pub fn is_cancelled(&self) -> bool {
        self.kind == Kind::Cancelled
    }

    /// True when the worker's lease on the task expired (the recoverer's error).
    pub fn is_lease_expired(&self) -> bool {
        self.kind == Kind::LeaseExpired
    }

    /// True when no handler was registered for the task's type.
    pub fn is_handler_not_found(&self) -> bool {
        self.kind == Kind::HandlerNotFound
    }

    /// The attempt ends with its task parked (a durable sleep or a wait for a signal); see
    /// [`StepError::Suspended`](crate::StepError::Suspended).
    pub(crate) fn suspended(suspension: crate::journal::Suspension) -> Self {
        Self::of(Kind::Suspended, Some(Box::new(suspension)))
    }

    /// True when the handler parked its task (a durable sleep or a wait for a signal): not a
    /// failure; the task goes on later.
    pub fn is_suspended(&self) -> bool {
        self.kind == Kind::Suspended
    }

    /// Where and why the handler parked its task, when it did.
    pub(crate) fn suspension(&self) -> Option<&crate::journal::Suspension> {
        self.source.as_deref().filter(|_| self.is_suspended())?.downcast_ref()
    }

    /// The underlying error, if any.
    pub fn source(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl<E: Into<Box<dyn StdError + Send + Sync>>> From<E> for HandlerError {
    fn from(err: E) -> Self {
        HandlerError::new(err)
    }
}

/// The message stored as the task's last error; Go asynq's texts where it has one.
impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = self.source.as_ref();
        match (self.kind, source) {
            (Kind::Failure | Kind::HandlerNotFound, Some(e)) => write!(f, "{e}"),
            (Kind::Failure | Kind::HandlerNotFound, None) => f.write_str("task failed"),
            (Kind::SkipRetry, Some(e)) => write!(f, "{e}: skip retry for the task"),
            (Kind::SkipRetry, None) => f.write_str("skip retry for the task"),
            (Kind::Revoke, _) => f.write_str("revoke task"),
            (Kind::Panic, Some(e)) => write!(f, "panic error cause by: {e}"),
            (Kind::Panic, None) => f.write_str("panic error cause by: unknown panic"),
            (Kind::DeadlineExceeded, _) => f.write_str("context deadline exceeded"),
            (Kind::Cancelled, _) => f.write_str("context canceled"),
            (Kind::LeaseExpired, _) => f.write_str(asynq_core::LEASE_EXPIRED_MESSAGE),
            (Kind::Suspended, Some(e)) => write!(f, "{e}"),
            (Kind::Suspended, None) => f.write_str("parked"),
        }
    }
}

impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerError").field("kind", &self.kind).field("source", &self.source).finish()
    }
}

/// What a handler knows about the task it runs.
#[derive(Debug, Clone)]
pub struct TaskContext {
    id: TaskId,
    queue: QueueName,
    retry_count: u32,
    max_retry: u32,
    deadline: SystemTime,
    cancel: CancellationToken,
    result_writer: ResultWriter,
    progress: ProgressReporter,
    workflow: WorkflowAccess,
    /// The attempt's durable steps (`journal.rs`, run by `steps.rs`).
    pub(crate) steps: crate::journal::StepJournal,
}

/// What a [`TaskContext`] knows of the task's workflow.
#[derive(Clone)]
struct WorkflowAccess {
    /// The workflow the task belongs to, from its [`WORKFLOW_HEADER`].
    id: Option<String>,
    /// Where its parents' outcomes are read.
    broker: Option<Arc<dyn Workflows>>,
}

impl fmt::Debug for WorkflowAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkflowAccess").field("id", &self.id).finish_non_exhaustive()
    }
}

impl TaskContext {
    /// The context of an attempt at `message` that must finish by `deadline`, is cancelled
    /// through `cancel`, and writes its result through `broker`. The server builds one per
    /// attempt; build one yourself to call a handler directly, e.g. in a unit test.
    pub fn new(
        message: &StoredTask,
        deadline: SystemTime,
        broker: Arc<dyn Dequeue>,
        cancel: CancellationToken,
    ) -> Self {
        Self::with_clock(message, deadline, broker, cancel, Arc::new(SystemClock))
    }

    /// As [`TaskContext::new`], with progress reports stamped by `clock` (the server's).
    pub(crate) fn with_clock(
        message: &StoredTask,
        deadline: SystemTime,
        broker: Arc<dyn Dequeue>,
        cancel: CancellationToken,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let steps =
            crate::journal::StepJournal::new(None, message.queue.clone(), message.id.clone(), Arc::clone(&clock));
        let progress = ProgressReporter::new(&broker, message, clock);
        let result_writer =
            ResultWriter { broker, queue: message.queue.clone(), id: message.id.clone(), cancel: cancel.clone() };
        Self {
            id: message.id.clone(),
            queue: message.queue.clone(),
            retry_count: message.retried,
            max_retry: message.max_retry,
            deadline,
            cancel,
            result_writer,
            progress,
            workflow: WorkflowAccess { id: message.headers.get(WORKFLOW_HEADER).cloned(), broker: None },
            steps,
        }
    }

    /// This context, reading the parents' results of a workflow task from `workflows` (the
    /// server sets it when its broker keeps workflows; set it yourself to call a handler directly
    /// in a test).
    pub fn with_workflows(mut self, workflows: Arc<dyn Workflows>) -> Self {
        self.workflow.broker = Some(workflows);
        self
    }

    /// The ID of the workflow this task belongs to, if it is a workflow task.
    pub fn workflow_id(&self) -> Option<&str> {
        self.workflow.id.as_deref()
    }

    /// The tasks this workflow task waited for and how each settled, in the order its workflow
    /// gave them (a chord's callback sees its members in member order); empty for a task that
    /// waited for nothing or is no workflow task.
    ///
    /// ```
    /// use asynq_core::workflow::ParentOutcome;
    /// use asynq_server::{HandlerError, TaskContext, handler_fn};
    ///
    /// /// A chord's callback: the sum of what its members wrote.
    /// async fn sum(ctx: &TaskContext) -> Result<u64, HandlerError> {
    ///     let mut total = 0;
    ///     for parent in ctx.parent_results().await.map_err(HandlerError::new)? {
    ///         if let ParentOutcome::Succeeded { result: Some(bytes) } = parent.outcome {
    ///             total += std::str::from_utf8(&bytes).ok().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    ///         }
    ///     }
    ///     Ok(total)
    /// }
    ///
    /// let callback = handler_fn(|ctx: TaskContext, _task| async move {
    ///     let total = sum(&ctx).await?;
    ///     ctx.result_writer().write(total.to_string()).await.map_err(HandlerError::new)?;
    ///     Ok(())
    /// });
    /// # let _ = callback;
    /// ```
    ///
    /// Errors: [`asynq_core::Error::Unsupported`] for a workflow task on a broker without
    /// workflows; [`asynq_core::Error::Broker`] when the broker fails (the attempt may retry).
    pub async fn parent_results(&self) -> asynq_core::Result<Vec<ParentResult>> {
        if self.workflow.id.is_none() {
            return Ok(Vec::new());
        }
        let Some(broker) = &self.workflow.broker else {
            return Err(asynq_core::Error::Unsupported { capability: "workflows" });
        };
        broker.parent_results(&TaskRef { queue: self.queue.clone(), id: self.id.clone() }).await
    }

    /// The task ID.
    pub fn task_id(&self) -> &str {
        &self.id
    }

    /// The queue the task came from.
    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// How many times the task has been retried before this attempt.
    pub fn retry_count(&self) -> u32 {
        self.retry_count
    }

    /// How many retries the task gets in all.
    pub fn max_retry(&self) -> u32 {
        self.max_retry
    }

    /// When this attempt must be finished (the earlier of its timeout and deadline).
    pub fn deadline(&self) -> SystemTime {
        self.deadline
    }

    /// Resolves when the attempt ends other than by the handler returning: its deadline passed,
    /// it was cancelled, its lease was lost, or the server gave up waiting for it at shutdown.
    /// Clone the context into work the handler spawns to stop that work too.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// True once the attempt is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Writes the task's result, kept with the task when it has a retention period.
    pub fn result_writer(&self) -> &ResultWriter {
        &self.result_writer
    }

    /// Reports how far the task has come, for the inspector, `asynq task inspect`, the
    /// dashboard and `Tracker` to show while it runs.
    pub fn progress(&self) -> &ProgressReporter {
        &self.progress
    }
}

/// Reports a running task's progress to the broker ([`TaskContext::progress`]), at most one
/// write per [`ProgressReporter::INTERVAL`] per attempt.
#[derive(Clone)]
pub struct ProgressReporter {
    inner: Arc<ReporterInner>,
}

struct ReporterInner {
    broker: Arc<dyn Dequeue>,
    queue: QueueName,
    id: TaskId,
    clock: Arc<dyn Clock>,
    state: Mutex<ReporterState>,
}

#[derive(Default)]
struct ReporterState {
    /// The report not written yet.
    latest: Option<Progress>,
    /// When the last write started.
    last_write: Option<tokio::time::Instant>,
    /// Whether a write of `latest` is on its way.
    scheduled: bool,
}

impl ProgressReporter {
    /// The shortest time between two writes of one attempt's progress.
    pub const INTERVAL: Duration = Duration::from_secs(1);

    fn new(broker: &Arc<dyn Dequeue>, message: &StoredTask, clock: Arc<dyn Clock>) -> Self {
        let inner = ReporterInner {
            broker: Arc::clone(broker),
            queue: message.queue.clone(),
            id: message.id.clone(),
            clock,
            state: Mutex::default(),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Reports `fraction` of the work done (0.0 to 1.0) with a short `message` (may be empty).
    ///
    /// Reports are coalesced: the first is written at once, and one made within
    /// [`ProgressReporter::INTERVAL`] of the last write waits for the interval to end, when the
    /// latest report so far is written. A report still waiting when the handler returns is
    /// written then, before the task's outcome, so that a task keeps its last report. Writing is
    /// best effort: a failed write (or a broker that keeps no progress) is
    /// logged at debug level, and the handler goes on. Call it from within the server's Tokio
    /// runtime, as a handler runs.
    ///
    /// Errors: [`asynq_core::Error::InvalidArgument`] for a fraction outside 0.0..=1.0 or a
    /// message over [`Progress::MAX_MESSAGE_LEN`] bytes or with control characters; nothing is
    /// reported.
    pub fn report(&self, fraction: f64, message: impl Into<String>) -> asynq_core::Result<()> {
        let progress = Progress::new(fraction, message, self.inner.clock.now())?;
        let mut state = self.inner.state();
        state.latest = Some(progress);
        if state.scheduled {
            return Ok(());
        }
        state.scheduled = true;
        let now = tokio::time::Instant::now();
        let due = state.last_write.map_or(now, |last| last + Self::INTERVAL);
        drop(state);
        if due <= now {
            let inner = Arc::clone(&self.inner);
            tokio::spawn(async move { inner.write_latest().await });
        } else {
            // Held weakly: once the attempt is over, the processor has written what was waiting.
            let inner = Arc::downgrade(&self.inner);
            tokio::spawn(async move {
                tokio::time::sleep_until(due).await;
                if let Some(inner) = Weak::upgrade(&inner) {
                    inner.write_latest().await;
                }
            });
        }
        Ok(())
    }
}

impl ProgressReporter {
    /// Writes a report still waiting for its interval, now. The processor calls it when the
    /// handler returns, before writing the task's outcome.
    pub(crate) async fn flush(&self) {
        if self.inner.state().latest.is_some() {
            self.inner.write_latest().await;
        }
    }
}

impl ReporterInner {
    fn state(&self) -> std::sync::MutexGuard<'_, ReporterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the latest report, if any.
    async fn write_latest(&self) {
        let progress = {
            let mut state = self.state();
            state.scheduled = false;
            state.last_write = Some(tokio::time::Instant::now());
            state.latest.take()
        };
        let Some(progress) = progress else { return };
        if let Err(e) = self.broker.write_progress(&self.queue, &self.id, &progress).await {
            tracing::debug!(queue = %self.queue, task_id = %self.id, error = %e, "could not write the task's progress");
        }
    }
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReporter")
            .field("queue", &self.inner.queue)
            .field("id", &self.inner.id)
            .finish_non_exhaustive()
    }
}

/// Stores a task's result in the broker (Go's `ResultWriter`).
#[derive(Clone)]
pub struct ResultWriter {
    broker: Arc<dyn Dequeue>,
    queue: QueueName,
    id: TaskId,
    cancel: CancellationToken,
}

impl ResultWriter {
    /// Stores `data` as the task's result, replacing any earlier one; returns its length.
    ///
    /// Fails once the attempt is cancelled.
    pub async fn write(&self, data: impl Into<Bytes>) -> asynq_core::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(asynq_core::Error::FailedPrecondition(
                "failed to write task result: context canceled".to_owned(),
            ));
        }
        let data = data.into();
        let len = data.len();
        self.broker.write_result(&self.queue, &self.id, data).await?;
        Ok(len)
    }

    /// The ID of the task whose result this writes.
    pub fn task_id(&self) -> &str {
        &self.id
    }
}

impl fmt::Debug for ResultWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResultWriter").field("queue", &self.queue).field("id", &self.id).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_go_asynq_writes_them() {
        assert_eq!(HandlerError::new("boom").to_string(), "boom");
        assert_eq!(HandlerError::skip_retry("bad input").to_string(), "bad input: skip retry for the task");
        assert_eq!(HandlerError::revoke().to_string(), "revoke task");
        assert_eq!(HandlerError::deadline_exceeded().to_string(), "context deadline exceeded");
        assert_eq!(HandlerError::lease_expired().to_string(), "asynq: task lease expired");
        assert_eq!(HandlerError::handler_not_found("x").to_string(), "handler not found for task \"x\"");
    }

    #[test]
    fn question_mark_turns_any_error_into_a_failure() {
        fn parse(s: &str) -> Result<u32, HandlerError> {
            Ok(s.parse::<u32>()?)
        }
        let err = parse("nope").unwrap_err();
        assert!(!err.is_skip_retry() && !err.is_revoke());
        assert_eq!(err.to_string(), "invalid digit found in string");
    }

    /// A payload and a parent's result that do not decode fail alike: for good, in the same words.
    #[cfg(feature = "json")]
    #[test]
    fn data_that_does_not_decode_skips_retries_however_it_is_returned() {
        use asynq_core::workflow::ParentOutcome;
        fn parent_width(parent: &ParentResult) -> Result<Option<u32>, HandlerError> {
            Ok(parent.json_result::<u32>()?)
        }
        fn own_width(task: &Task) -> Result<u32, HandlerError> {
            Ok(task.json_payload::<u32>()?)
        }
        let task = TaskRef { queue: QueueName::from_static("q"), id: TaskId::from_static("p") };
        let parent =
            ParentResult { task, outcome: ParentOutcome::Succeeded { result: Some(Bytes::from_static(b"x")) } };
        let from_parent = parent_width(&parent).unwrap_err();
        let from_payload = own_width(&Task::new("resize", "x")).unwrap_err();
        let wrapped = HandlerError::new(Task::new("resize", "x").json_payload::<u32>().unwrap_err());
        for err in [&from_parent, &from_payload, &wrapped] {
            assert!(err.is_skip_retry(), "{err:?}");
            assert!(err.to_string().ends_with(": skip retry for the task"), "{err}");
        }
        assert!(
            from_parent.to_string().starts_with(r#"result of parent task "p" in queue "q" does not decode as u32"#)
        );
        assert!(from_payload.to_string().starts_with(r#"payload of task type "resize" does not decode as u32"#));
    }
}
