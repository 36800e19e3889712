//! A processor takes tasks from the broker and runs their handlers, at most `concurrency` at
//! once.
//!
//! Each fetch takes as many tasks as there are free slots, trying the served queues (which may
//! change while the server runs: [`crate::served`]) in the order their
//! [`QueuePriorities`](asynq_core::queue::QueuePriorities) give. A task gives its slot back when
//! its handler returns, not when its outcome is written: the next fetch overlaps the write (which
//! the settler batches with other outcomes) instead of waiting a round trip for it. At most `concurrency` finished tasks wait
//! for their outcome to be written; while that many wait, fetching waits too.
//!
//! While attempts are short, a fetch also takes up to `prefetch` tasks ahead of the free
//! slots: they wait for a worker here, leased and cancellable like running tasks, so that under
//! load one broker call serves many tasks and the next batch is at hand when workers free up.
//! While tasks wait ahead, the next fetch waits until half the prefetch in holds is free, so that
//! it takes a batch even when workers free up one at a time (low concurrency).
//! Shutdown gives them back to their queue at once.
//!
//! A handler starts only once the broker has recorded that it starts: by the fetch itself for the
//! tasks it runs at once (`Config::start_with_fetch`, on by default, where no limit may make a
//! task wait), else by the [`Starter`], one call per queue for a fetch's other tasks. Until then
//! the task is only taken, and an expired lease gives it back uncharged. Tasks whose start cannot
//! be recorded go back to their queue at once.
//!
//! An idle processor waits for the broker's wake-up signal, or polls every `task_check_interval`
//! (with jitter) when the broker has none; a fetch that got fewer tasks than it asked for goes
//! straight to that wait.
//!
//! Rate-limited queues and per-type concurrency limits are applied here; [`crate::limits`]
//! describes both. A task over a per-type or shared limit waits here for its turn, holding no
//! worker (see [`crate::limits`] and [`crate::shared_limits`]).

mod attempt;
mod fetch;
mod held;
mod start;

use held::{AheadCount, Held, Ready, Taken, TaskPermits, Waiter};

use crate::handler::{Handler, HandlerError, TaskContext};
use crate::journal::Suspension;
use crate::limits::{Admission, Fetched, QueueLimits, TypeLimits, dequeue_within_rate_limits};
use crate::observe::{AttemptOutcome, AttemptReport, Observers, TASK_SPAN_NAME};
use crate::policy::{ErrorHandlerFn, FailurePolicy, panic_message};
use crate::rng::ServerRng;
use crate::served::ServedQueues;
use crate::settler::Settler;
use crate::shared_limits::{SharedAdmission, SharedLimits};
use crate::starter::Starter;
use crate::syncer::Syncer;
use crate::workers::{ActiveTask, ActiveTasks, Phase};
use asynq_core::WorkflowId;
use asynq_core::broker::RateLimiter;
use asynq_core::broker::Workflows;
use asynq_core::broker::{Dequeue, Dequeued, LeaseStage, Outcome};
use asynq_core::rate_limit::RateLimit;
use asynq_core::slots::SlotKey;
use asynq_core::workflow::{WORKFLOW_CANCELLED_ERROR, WORKFLOW_HEADER, WORKFLOW_STOPPED_ERROR};
use asynq_core::{Clock, Error, Lease, QueueName, StoredTask, Task, TaskId};
use futures::FutureExt;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// The processor's settings.
#[derive(Clone)]
pub(crate) struct ProcessorConfig {
    /// The most tasks run at once.
    pub concurrency: usize,
    /// The queues and the order to try them in.
    pub queues: ServedQueues,
    /// How often to poll when idle and the broker sends no wake-up.
    pub task_check_interval: Duration,
    /// How long shutdown waits for running tasks before requeueing them.
    pub shutdown_timeout: Duration,
    /// Retry or archive after a failure.
    pub failure_policy: FailurePolicy,
    /// Called with every handler error.
    pub error_handler: Option<ErrorHandlerFn>,
    /// Per-queue (or logical queue) limits on tasks started per second, shared through the broker.
    pub rate_limits: QueueLimits<RateLimit>,
    /// Per-type limits on tasks running at once on this server.
    pub type_concurrency: BTreeMap<String, usize>,
    /// Limits shared by every server, and the slots this server's tasks hold.
    pub shared_limits: Option<Arc<SharedLimits>>,
    /// The most tasks taken ahead of free slots (see the module docs).
    pub prefetch: usize,
    /// Whether a fetch records the start of the tasks it runs at once (see
    /// `Config::start_with_fetch`).
    pub start_with_fetch: bool,
    /// Told when each task starts and finishes.
    pub(crate) observers: Observers,
    /// Gives workflow tasks' handlers their parents' results, when the broker keeps workflows.
    pub(crate) workflows: Option<Arc<dyn Workflows>>,
    /// Orders the queues at each fetch and jitters the idle polls.
    pub(crate) rng: ServerRng,
    /// Keeps handlers' durable steps, when the broker has the capability.
    pub(crate) steps: Option<Arc<dyn asynq_core::broker::Steps>>,
}

impl fmt::Debug for ProcessorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessorConfig")
            .field("concurrency", &self.concurrency)
            .field("queues", &self.queues)
            .field("task_check_interval", &self.task_check_interval)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("rate_limits", &self.rate_limits)
            .field("type_concurrency", &self.type_concurrency)
            .field("shared_limits", &self.shared_limits)
            .field("prefetch", &self.prefetch)
            .field("start_with_fetch", &self.start_with_fetch)
            .field("observers", &self.observers)
            .finish_non_exhaustive()
    }
}

/// Takes tasks from the broker and runs them. Cheap to clone; clones share everything.
#[derive(Clone)]
pub(crate) struct Processor {
    shared: Arc<Shared>,
}

struct Shared {
    broker: Arc<dyn Dequeue>,
    handler: Arc<dyn Handler>,
    clock: Arc<dyn Clock>,
    config: ProcessorConfig,
    rate_limiter: Option<Arc<dyn RateLimiter>>,
    type_limits: TypeLimits,
    /// One permit per handler that may run.
    slots: Arc<Semaphore>,
    /// One permit per task this server holds (running, taken ahead, or finished with its
    /// outcome not yet written): twice the concurrency, plus the prefetch.
    holds: Arc<Semaphore>,
    /// One permit per task that may wait here for a per-type or shared limit: `concurrency`.
    waiting: Arc<Semaphore>,
    /// Whether tasks may be taken ahead: a prefetch is set, and no limit needs a decision
    /// at fetch time.
    may_prefetch: bool,
    /// How many tasks taken ahead have no worker slot yet ([`AheadCount`]).
    ahead: Arc<AtomicUsize>,
    /// The attempts' average duration in nanoseconds (an exponential moving average); tasks
    /// are taken ahead only while it is under [`PREFETCH_MAX_AVERAGE`].
    average_attempt_nanos: AtomicU64,
    active: Arc<ActiveTasks>,
    syncer: Syncer,
    settler: Settler,
    starter: Starter,
    running: TaskTracker,
    /// Cancelled when shutdown stops waiting for running tasks: they are requeued.
    abandon: CancellationToken,
    /// Cancelled when shutdown begins: tasks taken ahead go back to their queue.
    draining: CancellationToken,
}

/// Tasks are taken ahead only while attempts take less than this on average: long enough to
/// cover tasks that do a little IO, short enough that what waits here behind a slow task
/// (at most `prefetch` attempts) is never long.
const PREFETCH_MAX_AVERAGE: Duration = Duration::from_millis(10);

impl Processor {
    pub(crate) fn new(
        broker: Arc<dyn Dequeue>,
        handler: Arc<dyn Handler>,
        clock: Arc<dyn Clock>,
        active: Arc<ActiveTasks>,
        syncer: Syncer,
        rate_limiter: Option<Arc<dyn RateLimiter>>,
        config: ProcessorConfig,
    ) -> Self {
        let type_limits = TypeLimits::new(&config.type_concurrency);
        let slots = Arc::new(Semaphore::new(config.concurrency));
        let holds = Arc::new(Semaphore::new(config.concurrency.saturating_mul(2).saturating_add(config.prefetch)));
        let waiting = Arc::new(Semaphore::new(config.concurrency));
        let may_prefetch = config.prefetch > 0
            && config.rate_limits.is_empty()
            && config.type_concurrency.is_empty()
            && config.shared_limits.is_none();
        // The settler waits a few passes for the outcomes of attempts still running: while
        // a handler holds a slot.
        let running = {
            let (slots, concurrency) = (Arc::clone(&slots), config.concurrency);
            Box::new(move || slots.available_permits() < concurrency)
        };
        let shared = Shared {
            settler: Settler::spawn(Arc::clone(&broker), running),
            starter: Starter::spawn(Arc::clone(&broker)),
            broker,
            handler,
            clock,
            config,
            rate_limiter,
            type_limits,
            slots,
            holds,
            waiting,
            may_prefetch,
            ahead: Arc::new(AtomicUsize::new(0)),
            // Nothing is taken ahead until some attempts have shown to be short.
            average_attempt_nanos: AtomicU64::new(PREFETCH_MAX_AVERAGE.as_nanos() as u64),
            active,
            syncer,
            running: TaskTracker::new(),
            abandon: CancellationToken::new(),
            draining: CancellationToken::new(),
        };
        Self { shared: Arc::new(shared) }
    }
    /// Runs the fetch loop until `stop` is cancelled. Running tasks are left to
    /// [`Processor::shutdown`].
    pub(crate) fn spawn(&self, stop: CancellationToken) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move { this.fetch_loop(stop).await })
    }

    /// As [`Processor::spawn`], once `ready` is cancelled (the server can hear cancellation
    /// requests); stopping before then ends it without taking a task.
    pub(crate) fn spawn_when(&self, ready: CancellationToken, stop: CancellationToken) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = ready.cancelled() => this.fetch_loop(stop).await,
                _ = stop.cancelled() => {}
            }
        })
    }
    /// Waits up to the shutdown timeout for running tasks, then cancels the rest and gives
    /// them back to their queues, waiting for those writes until `deadline` at the latest (a
    /// broker that does not answer): what is not written by then is left to lease recovery,
    /// which gives the tasks back charged nothing. Call after the fetch loop has stopped.
    pub(crate) async fn shutdown(&self, deadline: tokio::time::Instant) {
        let s = &self.shared;
        s.draining.cancel();
        s.running.close();
        let drained = tokio::time::Instant::now() + s.config.shutdown_timeout;
        if tokio::time::timeout_at(drained.min(deadline), s.running.wait()).await.is_err() {
            tracing::warn!(running = s.active.len(), "shutdown timeout reached; requeueing unfinished tasks");
            s.abandon.cancel();
            if tokio::time::timeout_at(deadline, s.running.wait()).await.is_err() {
                tracing::warn!(
                    unwritten = s.active.snapshot().len(),
                    "the broker did not take the last outcomes in time; leaving those tasks to lease recovery"
                );
            }
        }
    }

    /// Cancels every running task at once; they are requeued. Used when the server is dropped
    /// without a shutdown.
    pub(crate) fn abandon(&self) {
        self.shared.draining.cancel();
        self.shared.abandon.cancel();
    }

    /// The number of tasks running now.
    pub(crate) fn running(&self) -> usize {
        self.shared.active.len()
    }
}

impl fmt::Debug for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Processor").field("config", &self.shared.config).field("running", &self.running()).finish()
    }
}
