//! The asynq producer: validates tasks and enqueues them into a broker.
//!
//! A producer depends on this crate and a broker crate only. Everything the client refuses is
//! refused before anything is written. A [`Tracker`] follows tasks after they are enqueued: it
//! waits for a task's outcome and cancels a running one. An [`Inspector`] is the operator's view:
//! queues, tasks, servers and schedulers, and the actions taken on them.
//!
//! ```
//! use asynq_client::{Client, Task, TaskOptions, TaskState};
//! use asynq_memory::MemoryBroker;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), asynq_client::Error> {
//! let client = Client::new(MemoryBroker::new());
//! let task = Task::new("email:welcome", r#"{"user_id":42}"#);
//! let info = client.enqueue(&task, TaskOptions::new().queue("critical").process_in(Duration::from_secs(60))).await?;
//! assert_eq!(info.state, TaskState::Scheduled);
//! assert_eq!(info.queue, "critical");
//! # Ok(())
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]

mod flow;
mod gather;
mod inspector;
mod shards;
mod signal;
mod spin;
mod tracker;

pub use asynq_core::broker::{GroupInfo, Page, SchedulerEnqueueEvent, SchedulerEntry};
pub use asynq_core::events::{EventCap, EventId, EventKind, EventPage, EventPosition, QueueEvent};
pub use asynq_core::task_metrics::{MetricsResolution, OTHER_TYPES, TypeCounts};
pub use asynq_core::workflow::{TaskRef, WorkflowSummary};
pub use asynq_core::{
    BackendInfo, BulkAction, BulkProgress, DailyStats, EvictionRisk, NodeInfo, QueueInfo, QueueLocation, ServerInfo,
    ServerStatus, TaskSet, WorkerInfo,
};
pub use asynq_core::{CANCEL_KEEP, CancelOutcome, MAX_KEPT_CANCELS};
pub use asynq_core::{
    Error, FailureKind, GroupName, Progress, QueueName, Result, Task, TaskId, TaskInfo, TaskOptions, TaskOutcome,
    TaskState,
};
#[cfg(feature = "json")]
pub use asynq_core::{Job, PayloadError};
pub use asynq_core::{ServerControl, ServerRequest};
pub use flow::{EnqueuedWorkflow, FlowProducer};
pub use inspector::{
    Inspector, ServerReport, TypeMetricsReport, TypeSeries, WorkflowCancellation, WorkflowReport, WorkflowState,
    WorkflowTask,
};
pub use shards::{MAX_SHARD_KEY_LEN, SHARD_KEPT_AT_MOST, SHARD_REFRESH};
pub use tracker::{TaskEvent, Tracker, WATCH_INTERVAL};

use asynq_core::broker::Enqueue;
use asynq_core::{Clock, EnqueueRequest, Placement, Replace, SystemClock, resolve_enqueue};
use gather::Gathering;
use spin::spin_wait;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// The name of the span of each enqueue (and of each batch), a child of the caller's span. Its
/// fields follow OpenTelemetry's messaging conventions: `messaging.system` (`asynq`),
/// `messaging.operation.type` (`send`), `messaging.destination.name` (the queue) and
/// `messaging.message.id` (the task ID), or `messaging.batch.message_count` for a batch; with
/// `otel.kind` `producer` and `otel.name` `send <queue>`. Built with the `opentelemetry`
/// feature, the client writes this span's context into each task's `traceparent` header when
/// the caller is inside a trace, so the worker's task span joins the trace; outside any span
/// nothing is written. [`FlowProducer::enqueue`] makes one such span per workflow
/// (`send workflow`), which every task of the workflow carries.
pub const ENQUEUE_SPAN_NAME: &str = "asynq.enqueue";

/// The enqueue span of `request` (see [`ENQUEUE_SPAN_NAME`]), its context written into the
/// request's headers with the `opentelemetry` feature.
fn enqueue_span(request: &mut EnqueueRequest) -> tracing::Span {
    let traced = caller_in_trace();
    let span = tracing::info_span!(
        ENQUEUE_SPAN_NAME,
        otel.name = %format_args!("send {}", request.queue()),
        otel.kind = "producer",
        messaging.system = "asynq",
        messaging.operation.type = "send",
        messaging.operation.name = "send",
        messaging.destination.name = %request.queue(),
        messaging.message.id = %request.id(),
    );
    propagate(&span, request, traced);
    span
}

/// The enqueue span of a batch of `count` tasks (see [`ENQUEUE_SPAN_NAME`]).
fn batch_span(count: usize) -> tracing::Span {
    tracing::info_span!(
        ENQUEUE_SPAN_NAME,
        otel.name = "send",
        otel.kind = "producer",
        messaging.system = "asynq",
        messaging.operation.type = "send",
        messaging.operation.name = "send",
        messaging.batch.message_count = count,
    )
}

/// Whether the caller is inside a trace (with the `opentelemetry` feature; never without it):
/// only then does an enqueue write a trace context.
pub(crate) fn caller_in_trace() -> bool {
    #[cfg(feature = "opentelemetry")]
    return asynq_core::trace_context::in_trace();
    #[cfg(not(feature = "opentelemetry"))]
    false
}

/// With the `opentelemetry` feature, writes `span`'s trace context into `request`'s headers
/// when the caller is `traced` ([`caller_in_trace`]), unless they carry one already.
#[cfg_attr(not(feature = "opentelemetry"), expect(unused_variables))]
pub(crate) fn propagate(span: &tracing::Span, request: &mut EnqueueRequest, traced: bool) {
    #[cfg(feature = "opentelemetry")]
    if traced {
        asynq_core::trace_context::inject_span(span, &mut request.message.headers);
    }
}

/// Enqueues tasks into a broker.
///
/// Cheap to clone; clones share the broker connection, and their enqueues are gathered: share
/// one client among many concurrent producers (the request handlers of a service, say) and
/// the single enqueues that arrive while a broker call is in flight go together in one batch
/// call when it returns (one script call per queue on Redis), each caller still getting its
/// own result. A lone producer's enqueue is sent at once; nothing waits for a timer.
#[derive(Clone)]
pub struct Client {
    gathering: Arc<Gathering>,
    clock: Arc<dyn Clock>,
    /// The largest payload accepted, in bytes.
    max_payload: usize,
    /// How long a call waits for its reply without sleeping ([`Client::with_spin_wait`]).
    spin_wait: Option<Duration>,
    /// The sharded queues' declarations, when the client places tasks on shards: the broker's
    /// own when it keeps them, or those of [`Client::with_sharded_queues`].
    shards: Option<Arc<shards::ShardRouter>>,
    /// Where signals go ([`Client::with_steps`], `signal.rs`).
    steps: Option<Arc<dyn asynq_core::broker::Steps>>,
}

/// The largest payload a [`Client`] accepts unless told otherwise ([`Client::with_max_payload`]):
/// 64 MiB, far above what a task queue should carry (store big data elsewhere and enqueue its
/// key) and far below Redis's limit on one value (`proto-max-bulk-len`, 512 MiB by default).
pub const DEFAULT_MAX_PAYLOAD: usize = 64 * 1024 * 1024;

impl Client {
    /// A client that enqueues into `broker`, reading time from the system clock.
    ///
    /// When the broker keeps sharded queues ([`as_sharded_queues`](asynq_core::broker::Capabilities::as_sharded_queues),
    /// as the memory and Redis brokers do), the client places a task enqueued to a sharded
    /// queue's logical name on one of its shards (see [`Client::with_sharded_queues`] and
    /// [`TaskOptions::shard_key`]); otherwise it sends every task to the queue it names.
    ///
    /// ```
    /// use asynq_client::{Client, Inspector, Task, TaskOptions};
    /// use asynq_memory::MemoryBroker;
    /// use std::sync::Arc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), asynq_client::Error> {
    /// let broker = Arc::new(MemoryBroker::new());
    /// Inspector::from_shared(broker.clone()).declare_sharded_queue("orders", 4).await?;
    /// let client = Client::from_shared(broker);
    /// let info = client.enqueue(&Task::new("ship", "o-1"), TaskOptions::new().queue("orders")).await?;
    /// assert_eq!(info.queue, "orders~0"); // the next task goes to orders~1
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(broker: impl Enqueue + 'static) -> Self {
        Self::from_shared(Arc::new(broker))
    }

    /// A client over a broker shared with other components, placing tasks on shards as
    /// [`Client::new`] does.
    pub fn from_shared(broker: Arc<dyn Enqueue>) -> Self {
        let shards = broker.clone().as_sharded_queues().map(|directory| Arc::new(shards::ShardRouter::new(directory)));
        Self {
            gathering: Gathering::new(broker),
            clock: Arc::new(SystemClock),
            max_payload: DEFAULT_MAX_PAYLOAD,
            spin_wait: None,
            shards,
            steps: None,
        }
    }

    /// Reads "now" from `clock` instead of the system clock (for tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Refuses tasks whose payload is longer than `bytes` (by default [`DEFAULT_MAX_PAYLOAD`])
    /// with [`Error::TooLarge`], before anything is sent.
    ///
    /// The limit keeps one oversized task from filling Redis's memory and from slowing every
    /// worker that dequeues it. Go's client has none. Whatever it is, the Redis broker refuses
    /// a task whose stored message would exceed Redis's limit on one value (512 MiB) the same
    /// way, before sending it: Redis would close the connection every role shares.
    ///
    /// ```
    /// use asynq_client::{Client, Error, Task, TaskOptions};
    /// use asynq_memory::MemoryBroker;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = Client::new(MemoryBroker::new()).with_max_payload(1024);
    /// let big = Task::new("upload", vec![0u8; 2048]);
    /// let refused = client.enqueue(&big, TaskOptions::new()).await;
    /// assert!(matches!(refused, Err(Error::TooLarge { what: "payload", size: 2048, limit: 1024, .. })));
    /// # }
    /// ```
    pub fn with_max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// Keeps a producer's thread busy waiting for a reply, for up to `budget` after each call
    /// it sends, instead of letting it sleep until the reply wakes it: Go's runtime does the
    /// same for Go asynq's producers. Off by default.
    ///
    /// A round trip to Redis is mostly the two wake-ups of sleeping threads, one at each end,
    /// and on a virtual machine whose idle CPUs halt, each wake-up costs tens of microseconds.
    /// Spinning saves the producer's one: the task polls its call again at once, and the
    /// runtime reads its sockets in between, so a reply that comes within the budget finds the
    /// thread awake. A budget a little over the round trip (100–200 µs) catches nearly every
    /// reply. It pays where the runtime reads the socket on the producer's own thread: a
    /// current-thread runtime, or a multi-thread one of one worker. In a multi-thread runtime
    /// with idle workers, one of them waits on the sockets, and its wake-up remains.
    ///
    /// The price is CPU: the thread is busy for the whole round trip. It applies to the calls
    /// a producer makes alone (`enqueue`, `replace`, `enqueue_batch`); single enqueues gathered
    /// into one batch call under load do not spin.
    ///
    /// ```
    /// use asynq_client::{Client, Task, TaskOptions};
    /// use asynq_memory::MemoryBroker;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), asynq_client::Error> {
    /// let client = Client::new(MemoryBroker::new()).with_spin_wait(Duration::from_micros(200));
    /// client.enqueue(&Task::new("ping", "p"), TaskOptions::new()).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_spin_wait(mut self, budget: Duration) -> Self {
        self.spin_wait = Some(budget);
        self
    }

    /// Validates `task` with `options` applied over its own options and stores it: as pending
    /// when it is ready now, scheduled when it is due later, aggregating when it has a group.
    ///
    /// With [`TaskOptions::debounce`], the task is scheduled its window ahead and takes the
    /// place of the task last enqueued with the same key in the queue while that one is still
    /// scheduled (see there).
    ///
    /// Errors: [`Error::InvalidArgument`] for bad input and [`Error::TooLarge`] for a payload
    /// over the limit (nothing is written), [`Error::DuplicateTask`] when a unique task with the same queue, type and payload exists,
    /// [`Error::TaskIdConflict`] when the queue already holds a task with the given ID, and
    /// [`Error::Broker`] when the broker fails.
    pub async fn enqueue(&self, task: &Task, options: TaskOptions) -> Result<TaskInfo> {
        let (mut request, mut info) = self.prepare(task, &options)?;
        self.place_on_shard(&mut request, &mut info, task, &options, false).await?;
        let span = enqueue_span(&mut request);
        self.gathering.enqueue(request, self.spin_wait).instrument(span).await?;
        Ok(info)
    }

    /// Enqueues `job` as a task of its type name ([`Job::TYPE_NAME`])
    /// with its JSON payload, as [`Client::enqueue`] enqueues a task: the worker's
    /// `ServeMux::handle_job` for the same type receives it decoded.
    ///
    /// ```
    /// use asynq_client::{Client, Job, TaskOptions};
    /// use asynq_memory::MemoryBroker;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Debug, PartialEq)]
    /// struct Welcome {
    ///     user_id: u64,
    /// }
    ///
    /// impl Job for Welcome {
    ///     const TYPE_NAME: &'static str = "email:welcome";
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), asynq_client::Error> {
    /// let client = Client::new(MemoryBroker::new());
    /// let info = client.enqueue_job(&Welcome { user_id: 42 }, TaskOptions::new().queue("critical")).await?;
    /// assert_eq!(info.type_name, "email:welcome");
    /// assert_eq!(info.job::<Welcome>().unwrap(), Welcome { user_id: 42 });
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: as [`Client::enqueue`], and [`Error::InvalidArgument`] (field `"payload"`)
    /// when `job` cannot be encoded as JSON.
    #[cfg(feature = "json")]
    pub async fn enqueue_job<J: asynq_core::Job>(&self, job: &J, options: TaskOptions) -> Result<TaskInfo> {
        self.enqueue(&Task::job(job)?, options).await
    }

    /// Replaces the waiting task `id` (pending or scheduled) in the queue `options` name with
    /// `task`, in one atomic step: the task keeps its ID and takes `task`'s type, payload and
    /// headers and `options` (retries, timeout, deadline, retention), placed as an enqueue with
    /// these options would place it: pending, or scheduled when it is due later. A uniqueness
    /// lock the old task held is released. A client waiting for the ID waits on for the
    /// replacement.
    ///
    /// ```
    /// use asynq_client::{Client, Task, TaskOptions, TaskState};
    /// use asynq_memory::MemoryBroker;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), asynq_client::Error> {
    /// let client = Client::new(MemoryBroker::new());
    /// let later = TaskOptions::new().process_in(Duration::from_secs(3600));
    /// let reminder = client.enqueue(&Task::new("remind", "v1"), later).await?;
    /// let sooner = TaskOptions::new().process_in(Duration::from_secs(60));
    /// let replaced = client.replace(&reminder.id, &Task::new("remind", "v2"), sooner).await?;
    /// assert_eq!((replaced.id, replaced.state), (reminder.id, TaskState::Scheduled));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`Error::TaskNotFound`]; [`Error::FailedPrecondition`] when the task is running
    /// or done, or has started: its handler parked it (a durable sleep or signal wait) or
    /// recorded a step, and goes on from those records (nothing is written);
    /// [`Error::InvalidArgument`] for bad input and for `unique`, `group` or `debounce`
    /// options, which a replacement cannot take;
    /// [`Error::Unsupported`] from a broker that cannot replace tasks.
    pub async fn replace(&self, id: &str, task: &Task, options: TaskOptions) -> Result<TaskInfo> {
        let options = options.task_id(id);
        let (mut request, mut info) = self.prepare(task, &options)?;
        self.place_on_shard(&mut request, &mut info, task, &options, true).await?;
        if request.replace.is_some() {
            return Err(Error::invalid("debounce", "a replacement by ID cannot be debounced"));
        }
        request.replace = Some(Replace::Waiting);
        request.check_replacement()?;
        let span = enqueue_span(&mut request);
        spin_wait(self.gathering.broker().enqueue(request), self.spin_wait).instrument(span).await?;
        Ok(info)
    }

    /// Enqueues many tasks, each with its own options, in as few round trips as the broker
    /// allows (one per queue on Redis). Each task succeeds or fails on its own, with the errors
    /// of [`Client::enqueue`]; the results are in the order of `tasks`. Invalid tasks are
    /// refused without being sent.
    ///
    /// ```
    /// use asynq_client::{Client, Task, TaskOptions};
    /// use asynq_memory::MemoryBroker;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = Client::new(MemoryBroker::new());
    /// let batch: Vec<_> = (0..100).map(|i| (Task::new("thumbnail", format!("{i}")), TaskOptions::new())).collect();
    /// let results = client.enqueue_batch(&batch).await;
    /// assert!(results.iter().all(Result::is_ok));
    /// # }
    /// ```
    pub async fn enqueue_batch(&self, tasks: &[(Task, TaskOptions)]) -> Vec<Result<TaskInfo>> {
        let mut results: Vec<Result<TaskInfo>> = Vec::with_capacity(tasks.len());
        let mut requests = Vec::with_capacity(tasks.len());
        let mut sent = Vec::with_capacity(tasks.len());
        let span = batch_span(tasks.len());
        let traced = caller_in_trace();
        for (index, (task, options)) in tasks.iter().enumerate() {
            let prepared = match self.prepare(task, options) {
                Ok((mut request, mut info)) => {
                    self.place_on_shard(&mut request, &mut info, task, options, false).await.map(|()| (request, info))
                }
                Err(e) => Err(e),
            };
            match prepared {
                Ok((mut request, info)) => {
                    propagate(&span, &mut request, traced);
                    requests.push(request);
                    sent.push(index);
                    results.push(Ok(info));
                }
                Err(e) => results.push(Err(e)),
            }
        }
        let stored = spin_wait(self.gathering.broker().enqueue_batch(requests), self.spin_wait).instrument(span).await;
        for (index, outcome) in sent.into_iter().zip(stored) {
            if let Err(e) = outcome {
                results[index] = Err(e);
            }
        }
        results
    }

    /// The broker request for `task` and the info the caller gets back if it is stored.
    fn prepare(&self, task: &Task, options: &TaskOptions) -> Result<(EnqueueRequest, TaskInfo)> {
        let size = task.payload().len();
        if size > self.max_payload {
            let limit_by = "Client::with_max_payload";
            return Err(Error::TooLarge { what: "payload", size, limit: self.max_payload, limit_by });
        }
        let now = self.clock.now();
        let request = resolve_enqueue(task, options, now, || uuid::Uuid::new_v4().to_string())?;
        let (state, next_process_at) = match &request.placement {
            Placement::Pending => (TaskState::Pending, Some(now)),
            Placement::Scheduled { process_at } => (TaskState::Scheduled, Some(*process_at)),
            Placement::Grouped { .. } => (TaskState::Aggregating, None),
        };
        let mut info = TaskInfo::new(&request.message, state, next_process_at, None);
        info.priority = request.priority;
        if let Some(Replace::Debounced(debounce)) = &request.replace {
            info.debounce_key = Some(debounce.key().to_owned());
        }
        Ok((request, info))
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("clock", &self.clock)
            .field("max_payload", &self.max_payload)
            .field("spin_wait", &self.spin_wait)
            .field("sharded_queues", &self.shards.is_some())
            .finish_non_exhaustive()
    }
}
