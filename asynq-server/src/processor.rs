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
//! A handler starts only once the broker has recorded that it starts (the [`Starter`], one call
//! per queue for a fetch's tasks): until then the task is only taken, and an expired lease gives
//! it back uncharged. Tasks whose start cannot be recorded go back to their queue at once.
//!
//! An idle processor waits for the broker's wake-up signal, or polls every `task_check_interval`
//! (with jitter) when the broker has none; a fetch that got fewer tasks than it asked for goes
//! straight to that wait.
//!
//! Rate-limited queues and per-type concurrency limits are applied here; [`crate::limits`]
//! describes both. A task over a per-type or shared limit waits here for its turn, holding no
//! worker (see [`crate::limits`] and [`crate::shared_limits`]).

use crate::handler::{Handler, HandlerError, TaskContext};
use crate::journal::Suspension;
use crate::limits::{Admission, Fetched, TypeLimits, dequeue_within_rate_limits};
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
    /// Per-queue limits on tasks started per second, shared through the broker.
    pub rate_limits: BTreeMap<String, RateLimit>,
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

/// How one attempt ended, before it is written.
enum Attempt {
    Finished(Result<(), HandlerError>),
    LeaseLost,
    Abandoned,
}

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
        let shared = Shared {
            settler: Settler::spawn(Arc::clone(&broker)),
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

    /// Waits for a free slot, takes as many ready tasks as there are free slots and starts
    /// their handlers; reports how many started (0 when no task was ready) and whether the
    /// queues ran short.
    ///
    /// A rate-limited queue gives at most as many tasks as its bucket grants; a task over a
    /// per-type or shared concurrency limit waits for its turn without a worker, or goes back to
    /// its queue when as many tasks wait as the server has workers; neither is counted.
    ///
    /// Returns `None` when `stop` is cancelled while it waits for a slot. Once it has a slot, it
    /// is not cut short by `stop`: a dequeue whose tasks the broker has leased ends with them
    /// started or given back, never dropped half way (which would leave them to lease recovery).
    async fn fetch(&self, stop: &CancellationToken) -> asynq_core::Result<Option<FetchReport>> {
        let s = &self.shared;
        // While tasks taken ahead keep the workers busy, a fetch waits until a batch's worth of
        // holds is free, so that one broker call takes that many tasks rather than the one or
        // two whose slots just freed (as happens at low concurrency, where a slot frees up before
        // the tasks taken ahead queue for it). It never waits long: with nothing ahead, at least
        // `prefetch` holds are free once the finished tasks' outcomes are written.
        let batch = s.fetch_batch();
        if batch > 1 && s.ahead.load(Ordering::Relaxed) >= batch {
            tokio::select! {
                _ = stop.cancelled() => return Ok(None),
                // Released at once: the fetch below takes them one by one, and nothing else
                // takes holds.
                held = s.holds.acquire_many(u32::try_from(batch).unwrap_or(u32::MAX)) => {
                    drop(held.expect("the processor's semaphores are never closed"));
                }
            }
        }
        let first = tokio::select! {
            _ = stop.cancelled() => return Ok(None),
            permits = TaskPermits::acquire(&s.slots, &s.holds) => permits,
        };
        let mut slots = vec![first];
        while let Some(permits) = TaskPermits::try_acquire(&s.slots, &s.holds) {
            slots.push(permits);
        }
        let mut ahead = Vec::new();
        if s.prefetching() {
            while ahead.len() < s.config.prefetch
                && let Ok(hold) = Arc::clone(&s.holds).try_acquire_owned()
            {
                ahead.push(hold);
            }
        }
        let served = s.config.queues.now();
        let order = s.config.rng.with(|rng| served.priorities.order(rng));
        let now = s.clock.now();
        let wanted = slots.len() + ahead.len();
        // The tasks that take the slots run at once, unless a limit may make them wait: when the
        // configuration accepts the price (see `Config::start_with_fetch`), their starts are
        // recorded by the dequeue itself, saving a call before their handlers start.
        let start_with_fetch =
            s.config.start_with_fetch && s.type_limits.is_empty() && s.config.shared_limits.is_none();
        let start = if start_with_fetch { slots.len() } else { 0 };
        let Fetched { tasks, rate_limited_for } = dequeue_within_rate_limits(
            &*s.broker,
            s.rate_limiter.as_deref(),
            &s.config.rate_limits,
            &order,
            wanted,
            start,
            now,
        )
        .await?;
        let ran_short = tasks.len() < wanted;
        let mut started = 0;
        let mut gave_back = false;
        let mut slots = slots.into_iter();
        let mut taken: BTreeMap<QueueName, Vec<Taken>> = BTreeMap::new();
        for task in tasks {
            let Some(slot) = slots.next() else {
                // Taken ahead: `may_prefetch` rules out limits to admit it by.
                let hold = ahead.pop().expect("no more tasks are dequeued than slots and holds");
                started += 1;
                let counted = AheadCount::new(&s.ahead);
                taken.entry(task.message.queue.clone()).or_default().push(Taken::Ahead(task, hold, counted));
                continue;
            };
            let type_permit = match s.type_limits.admit(&task.message.type_name) {
                Admission::Unlimited => None,
                Admission::Admitted(permit) => Some(permit),
                Admission::Wait => {
                    match s.wait_for_turn(task, slot.hold, None) {
                        Some(waiting) => taken.entry(waiting.task().message.queue.clone()).or_default().push(waiting),
                        None => gave_back = true,
                    }
                    continue;
                }
            };
            let shared_slot = match &s.config.shared_limits {
                None => None,
                Some(limits) => match limits.admit(&task, now).await {
                    SharedAdmission::Unlimited => None,
                    SharedAdmission::Admitted(key) => Some(key),
                    SharedAdmission::Wait => {
                        match s.wait_for_turn(task, slot.hold, type_permit) {
                            Some(waiting) => {
                                taken.entry(waiting.task().message.queue.clone()).or_default().push(waiting)
                            }
                            None => gave_back = true,
                        }
                        continue;
                    }
                },
            };
            started += 1;
            let held = Held::new(&task, &s.clock);
            let queue = taken.entry(task.message.queue.clone()).or_default();
            queue.push(Taken::Now(Ready { task, permits: slot, type_permit, shared_slot, held }));
        }
        for (queue, tasks) in taken {
            let shared = Arc::clone(s);
            s.running.spawn(async move { shared.start_then_run(queue, tasks).await });
        }
        Ok(Some(FetchReport { started, ran_short, rate_limited_for, gave_back }))
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

    async fn fetch_loop(&self, stop: CancellationToken) {
        let s = &self.shared;
        let mut last_error_log: Option<tokio::time::Instant> = None;
        let mut queues = s.config.queues.clone();
        loop {
            let served = queues.now();
            if stop.is_cancelled() {
                return;
            }
            let Some(result) = self.fetch(&stop).await.transpose() else { return };
            match result {
                // Tasks over a limit found the waiting room full and went back to their queue:
                // fetching again would take them again. Wait until a waiter starts.
                Ok(FetchReport { gave_back: true, .. }) => {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = Arc::clone(&s.waiting).acquire_owned() => {}
                        _ = tokio::time::sleep(s.config.rng.jitter(s.config.task_check_interval)) => {}
                        _ = queues.changed() => {}
                    }
                    continue;
                }
                Ok(FetchReport { started: 0, rate_limited_for: Some(token_due), .. }) => {
                    // A rate-limited queue is out of tokens and nothing started: sleep until
                    // a token is due, waking early only for the unlimited queues.
                    let unlimited: Vec<QueueName> = served
                        .names
                        .iter()
                        .filter(|q| !s.config.rate_limits.contains_key(q.as_str()))
                        .cloned()
                        .collect();
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = s.broker.wait_for_tasks(&unlimited), if !unlimited.is_empty() => {}
                        _ = tokio::time::sleep(token_due) => {}
                        _ = queues.changed() => {}
                    }
                    continue;
                }
                // The queues gave fewer tasks than asked for: they are empty (for now), so
                // another fetch would find nothing. Wait; the wait returns at once if a task
                // became pending meanwhile.
                Ok(FetchReport { ran_short: true, rate_limited_for: None, .. }) => {}
                Ok(_) => continue,
                Err(e) => {
                    if last_error_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(3)) {
                        tracing::error!(error = %e, "dequeue failed");
                        last_error_log = Some(tokio::time::Instant::now());
                    }
                    // Back off without listening for wake-ups: the broker is failing.
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(s.config.task_check_interval) => continue,
                    }
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = s.broker.wait_for_tasks(&served.names), if !served.names.is_empty() => {}
                _ = tokio::time::sleep(s.config.rng.jitter(s.config.task_check_interval)) => {}
                _ = queues.changed() => {}
            }
        }
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

impl Shared {
    /// How many free holds a fetch waits for while tasks taken ahead keep the workers busy: half
    /// the prefetch when taking tasks ahead, else 1 (no wait).
    fn fetch_batch(&self) -> usize {
        if self.prefetching() { (self.config.prefetch / 2).max(1) } else { 1 }
    }

    /// Whether a fetch should take tasks ahead now.
    fn prefetching(&self) -> bool {
        self.may_prefetch && self.average_attempt_nanos.load(Ordering::Relaxed) < PREFETCH_MAX_AVERAGE.as_nanos() as u64
    }

    /// Folds one attempt's duration into the average, weighing it 1/8.
    fn record_attempt(&self, duration: Duration) {
        let sample = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let average = self.average_attempt_nanos.load(Ordering::Relaxed);
        let updated = average - average / 8 + sample / 8;
        self.average_attempt_nanos.store(updated, Ordering::Relaxed);
    }

    /// Shows `task`, whose start is recorded and whose lease is renewed to `expiry`, as one that
    /// waits here for its turn: leased, renewed by the heartbeat and cancellable, holding no
    /// worker.
    fn hold_waiting(&self, task: &Dequeued, expiry: SystemTime) -> Held {
        let held = Held::new(task, &self.clock);
        held.lease.extend(expiry);
        let now = self.clock.now();
        self.active.insert(ActiveTask {
            message: task.message.clone(),
            started: now,
            deadline: task.message.handler_deadline(now),
            lease: held.lease.clone(),
            cancel: held.cancel.clone(),
            phase: Phase::Waiting,
        });
        held
    }

    /// Holds a task taken ahead (its start recorded, its lease renewed to `expiry`) until a
    /// worker slot frees up, then runs it; gives it back to its queue if shutdown begins first.
    /// Meanwhile it is leased and cancellable like a running task.
    async fn wait_for_slot(
        self: Arc<Self>,
        task: Dequeued,
        hold: OwnedSemaphorePermit,
        counted: AheadCount,
        expiry: SystemTime,
    ) {
        let held = self.hold_waiting(&task, expiry);
        let slot = tokio::select! {
            biased;
            _ = self.draining.cancelled() => None,
            slot = Arc::clone(&self.slots).acquire_owned() => Some(slot.expect("the processor's semaphores are never closed")),
        };
        drop(counted);
        match slot {
            // Its lease lapsed while it waited (the broker was out of reach): like a running task
            // whose lease lapses, it writes nothing and is left to lease recovery.
            Some(_) if !held.lease.is_valid() => {
                tracing::warn!(task_id = %task.message.id, queue = %task.message.queue, "the lease of a task taken ahead expired before it could run; leaving the task to the recoverer");
                self.active.remove(&task.message.id);
            }
            Some(slot) => {
                let permits = TaskPermits { slot, hold };
                self.run(Ready { task, permits, type_permit: None, shared_slot: None, held }).await;
            }
            None => {
                tracing::debug!(task_id = %task.message.id, queue = %task.message.queue, "shutting down; giving back a task taken ahead");
                self.write(&task.message, Outcome::Requeue, &held.lease).await;
                self.active.remove(&task.message.id);
            }
        }
    }

    /// A task over a per-type or shared limit, to wait here for its turn once its start is
    /// recorded ([`Shared::wait_to_start`]), holding `hold` and, when it has one, its type's
    /// permit; or, when as many tasks wait as the server has workers, `None`: the task goes
    /// back to the front of its queue, charged nothing.
    fn wait_for_turn(
        self: &Arc<Self>,
        task: Dequeued,
        hold: OwnedSemaphorePermit,
        type_permit: Option<OwnedSemaphorePermit>,
    ) -> Option<Taken> {
        match Arc::clone(&self.waiting).try_acquire_owned() {
            Ok(room) => Some(Taken::Waiting(task, Waiter { hold, room, type_permit })),
            Err(_) => {
                tracing::debug!(task_id = %task.message.id, task_type = %task.message.type_name, "over a concurrency limit with no room to wait; giving the task back to its queue");
                let shared = Arc::clone(self);
                self.running.spawn(async move {
                    let lease = Lease::new(task.lease_expiry, Arc::clone(&shared.clock));
                    shared.write(&task.message, Outcome::Requeue, &lease).await;
                    drop(hold);
                });
                None
            }
        }
    }

    /// Waits for the turn of a task whose start is recorded (its lease renewed to `expiry`):
    /// its type's permit (unless it holds it already), a slot of its shared limit, then a
    /// worker; then runs it. Meanwhile it is active, leased and renewed (shown as waiting, not
    /// as a worker), as a task taken ahead is: shutdown gives it back to its queue, charged
    /// nothing, and a cancellation is seen when it starts.
    async fn wait_to_start(self: Arc<Self>, task: Dequeued, waiter: Waiter, expiry: SystemTime) {
        let Waiter { hold, room, type_permit } = waiter;
        let held = self.hold_waiting(&task, expiry);
        tracing::debug!(task_id = %task.message.id, task_type = %task.message.type_name, "over a concurrency limit; waiting for a turn");
        let limit = self.config.shared_limits.as_ref().and_then(|limits| Some((limits, limits.limit_for(&task)?)));
        let turn = async {
            let type_permit = match type_permit {
                Some(permit) => Some(permit),
                None => self.type_limits.acquire(&task.message.type_name).await,
            };
            let shared_slot = match &limit {
                Some((limits, limit)) => {
                    let poll = self.config.task_check_interval;
                    Some(limits.wait_for_slot(limit, &task.message.id, &*self.clock, &held.lease, poll).await)
                }
                None => None,
            };
            let slot =
                Arc::clone(&self.slots).acquire_owned().await.expect("the processor's semaphores are never closed");
            (type_permit, shared_slot, slot)
        };
        let turn = tokio::select! {
            biased;
            _ = self.draining.cancelled() => None,
            _ = held.lease.expired() => None,
            turn = turn => Some(turn),
        };
        drop(room);
        match turn {
            Some((type_permit, shared_slot, slot)) if held.lease.is_valid() => {
                self.run(Ready { task, permits: TaskPermits { slot, hold }, type_permit, shared_slot, held }).await;
            }
            turn => {
                if self.draining.is_cancelled() && held.lease.is_valid() {
                    tracing::debug!(task_id = %task.message.id, queue = %task.message.queue, "shutting down; giving back a task waiting for its turn");
                    self.write(&task.message, Outcome::Requeue, &held.lease).await;
                } else {
                    tracing::warn!(task_id = %task.message.id, queue = %task.message.queue, "the lease of a task waiting for its turn expired; leaving the task to the recoverer");
                }
                // A slot taken as the wait was cut short would otherwise be held until the lease ran out.
                if let Some((limits, limit)) = &limit {
                    let key = turn.and_then(|(_, key, _)| key).unwrap_or_else(|| limit.key().clone());
                    limits.release(&key, &task.message.id).await;
                }
                self.active.remove(&task.message.id);
            }
        }
    }

    /// Records that this server starts `tasks` (of one fetch, of `queue`), then runs those with
    /// a slot, holds the ones taken ahead until a slot frees up and lets those over a limit wait
    /// for their turn; gives them all back to the queue, uncharged, if the record cannot be
    /// written; those the dequeue itself recorded started ([`Dequeue::dequeue_starting`]) need no
    /// record. Tasks taken ahead or waiting count as started: the worker committed to them, and
    /// if it dies holding them, their first stall is forgiven (see [`asynq_core::FREE_STALLS`]).
    async fn start_then_run(self: Arc<Self>, queue: QueueName, tasks: Vec<Taken>) {
        // Those the dequeue recorded started need no call.
        let ids: Vec<TaskId> = tasks
            .iter()
            .filter(|taken| taken.task().stage == LeaseStage::Taken)
            .map(|taken| taken.task().message.id.clone())
            .collect();
        let recorded = if ids.is_empty() { Ok(None) } else { self.starter.start(&queue, ids).await.map(Some) };
        match recorded {
            Ok(recorded) => {
                for taken in tasks {
                    let shared = Arc::clone(&self);
                    let expiry = match taken.task().stage {
                        LeaseStage::Started => taken.task().lease_expiry,
                        LeaseStage::Taken => recorded.unwrap_or(taken.task().lease_expiry),
                    };
                    match taken {
                        Taken::Now(ready) => {
                            ready.held.lease.extend(expiry);
                            self.running.spawn(async move { shared.run(ready).await });
                        }
                        Taken::Ahead(task, hold, counted) => {
                            self.running.spawn(async move { shared.wait_for_slot(task, hold, counted, expiry).await });
                        }
                        Taken::Waiting(task, waiter) => {
                            self.running.spawn(async move { shared.wait_to_start(task, waiter, expiry).await });
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(queue = %queue, tasks = tasks.len(), error = %e, "could not record that handlers start; giving the tasks back to their queue");
                let this = &self;
                let give_back = tasks.iter().map(|taken| {
                    let task = taken.task();
                    let lease = Lease::new(task.lease_expiry, Arc::clone(&this.clock));
                    async move {
                        this.write(&task.message, Outcome::Requeue, &lease).await;
                        if let (Taken::Now(Ready { shared_slot: Some(key), .. }), Some(limits)) =
                            (taken, &this.config.shared_limits)
                        {
                            limits.release(key, &task.message.id).await;
                        }
                    }
                });
                futures::future::join_all(give_back).await;
            }
        }
    }

    /// Runs one task whose start is recorded, holding its worker slot and, for a type with a
    /// concurrency limit, its type permit until the handler returns, and its hold until the
    /// outcome is written. The attempt runs in a [`TASK_SPAN_NAME`] span.
    async fn run(self: Arc<Self>, ready: Ready) {
        let Ready { task, permits, type_permit, shared_slot, held } = ready;
        let id = task.message.id.clone();
        let span = tracing::info_span!(
            TASK_SPAN_NAME,
            task_type = %task.message.type_name,
            queue = %task.message.queue,
            task_id = %task.message.id,
            retry_count = task.message.retried,
            outcome = tracing::field::Empty,
            otel.name = %format_args!("process {}", task.message.queue),
            otel.kind = "consumer",
            messaging.system = "asynq",
            messaging.operation.type = "process",
            messaging.operation.name = "process",
            messaging.destination.name = %task.message.queue,
            messaging.message.id = %task.message.id,
        );
        #[cfg(feature = "opentelemetry")]
        asynq_core::trace_context::continue_trace(&task.message.headers, &span);
        if !self.config.observers.is_empty() {
            self.config.observers.task_started(&task.message, &span);
        }
        let TaskPermits { slot, hold } = permits;
        self.attempt(task.message, (slot, type_permit), held).instrument(span).await;
        if let (Some(key), Some(limits)) = (shared_slot, &self.config.shared_limits) {
            limits.release(&key, &id).await;
        }
        drop(hold);
    }

    /// One attempt of a task: runs the handler, gives back `running_permits`, then reports and
    /// writes the outcome.
    async fn attempt(
        &self,
        message: StoredTask,
        running_permits: (OwnedSemaphorePermit, Option<OwnedSemaphorePermit>),
        held: Held,
    ) {
        let Held { lease, cancel } = held;
        let started = self.clock.now();
        let timer = tokio::time::Instant::now();
        let deadline = message.handler_deadline(started);
        let active = ActiveTask {
            message: message.clone(),
            started,
            deadline,
            lease: lease.clone(),
            cancel: cancel.clone(),
            phase: Phase::Running,
        };
        self.active.insert(active);
        let mut ctx = TaskContext::with_clock(
            &message,
            deadline,
            Arc::clone(&self.broker),
            cancel.clone(),
            Arc::clone(&self.clock),
        );
        if let Some(workflows) = &self.config.workflows {
            ctx = ctx.with_workflows(Arc::clone(workflows));
        }
        if let Some(steps) = &self.config.steps {
            ctx = ctx.with_steps(Arc::clone(steps));
        }
        let progress = ctx.progress().clone();
        let task = Task::from_message(&message);
        let time_left = deadline.duration_since(self.clock.now()).unwrap_or_default();
        // A task of a cancelled workflow is archived rather than run.
        let cancelled_before = self.workflow_cancelled(&message).await;
        let attempt = if cancelled_before {
            Attempt::Finished(Err(HandlerError::cancelled()))
        } else {
            let handler = AssertUnwindSafe(self.handler.process_task(ctx, task.clone())).catch_unwind();
            tokio::select! {
                r = handler => Attempt::Finished(r.unwrap_or_else(|panic| Err(HandlerError::panic(panic_message(&*panic))))),
                _ = tokio::time::sleep(time_left) => Attempt::Finished(Err(HandlerError::deadline_exceeded())),
                _ = cancel.cancelled() => Attempt::Finished(Err(HandlerError::cancelled())),
                _ = lease.expired() => Attempt::LeaseLost,
                _ = self.abandon.cancelled() => Attempt::Abandoned,
            }
        };
        let duration = timer.elapsed();
        self.active.settling(&message.id, matches!(attempt, Attempt::Finished(_)));
        drop(running_permits);
        self.record_attempt(duration);
        cancel.cancel();
        // A handler that parked its task is charged nothing; should parking fail, the task
        // retries at its time, uncharged.
        let suspension = match &attempt {
            Attempt::Finished(Err(err)) => err.suspension().cloned(),
            _ => None,
        };
        let outcome = match &attempt {
            Attempt::Finished(Err(err)) if suspension.is_some() => {
                let retry_at = suspension.as_ref().map_or(started, |s| s.parked().until);
                Some(Outcome::Retry { retry_at, error: err.to_string(), is_failure: false })
            }
            Attempt::Finished(Ok(())) if message.retention.is_some() => Some(Outcome::Complete),
            Attempt::Finished(Ok(())) => Some(Outcome::Done),
            Attempt::Finished(Err(_)) if cancelled_before => {
                tracing::debug!(task_id = %message.id, queue = %message.queue, "its workflow was cancelled; archiving it unrun");
                Some(Outcome::Archive { error: WORKFLOW_CANCELLED_ERROR.to_owned() })
            }
            Attempt::Finished(Err(err)) => {
                if let Some(on_error) = &self.config.error_handler {
                    on_error(&task, err);
                }
                tracing::debug!(task_id = %message.id, queue = %message.queue, error = %err, "task failed");
                match self.config.failure_policy.outcome(&message, err, self.clock.now()) {
                    // A task of a workflow cancelled meanwhile is not retried.
                    Outcome::Retry { .. } if self.workflow_cancelled(&message).await => {
                        Some(Outcome::Archive { error: format!("{WORKFLOW_STOPPED_ERROR}: {err}") })
                    }
                    outcome => Some(outcome),
                }
            }
            Attempt::Abandoned => Some(Outcome::Requeue),
            Attempt::LeaseLost => None,
        };
        let report = attempt_report(&attempt, outcome.as_ref(), duration);
        tracing::Span::current().record("outcome", report.outcome.as_str());
        if !self.config.observers.is_empty() {
            self.config.observers.task_finished(&message, &report);
        }
        if matches!(attempt, Attempt::Finished(_)) {
            progress.flush().await;
        }
        match outcome {
            Some(outcome) if lease.is_valid() => match suspension {
                Some(suspension) => self.park(&message, suspension, outcome, &lease).await,
                None => self.write(&message, outcome, &lease).await,
            },
            _ => {
                tracing::warn!(task_id = %message.id, queue = %message.queue, "lease expired; leaving the task to the recoverer")
            }
        }
        self.active.remove(&message.id);
    }

    /// Whether `message` is a task of a workflow that was cancelled. A failure to read says no,
    /// as a server that cannot read the mark runs the task as it would without workflows.
    async fn workflow_cancelled(&self, message: &StoredTask) -> bool {
        let (Some(workflows), Some(workflow)) = (&self.config.workflows, message.headers.get(WORKFLOW_HEADER)) else {
            return false;
        };
        let Ok(workflow) = WorkflowId::new(workflow.as_str()) else { return false };
        match workflows.is_cancelled(&workflow).await {
            Ok(cancelled) => cancelled,
            Err(e) => {
                tracing::warn!(task_id = %message.id, %workflow, error = %e, "could not read whether the task's workflow was cancelled; running it");
                false
            }
        }
    }

    /// Parks `message` as its handler asked; writes `fallback` (an uncharged retry at the same
    /// time) when the broker keeps no steps or parking fails.
    async fn park(&self, message: &StoredTask, suspension: Suspension, fallback: Outcome, lease: &Lease) {
        if let Some(steps) = &self.config.steps {
            match steps.park(message, suspension.parked(), suspension.record.as_ref()).await {
                Ok(()) => return,
                Err(Error::TaskNotFound { .. }) => {
                    tracing::warn!(task_id = %message.id, queue = %message.queue, "task was no longer active when it was parked");
                    return;
                }
                Err(e) => {
                    tracing::warn!(task_id = %message.id, queue = %message.queue, error = %e, "parking failed; retrying the task at its time instead")
                }
            }
        }
        self.write(message, fallback, lease).await
    }

    async fn write(&self, message: &StoredTask, outcome: Outcome, lease: &Lease) {
        match self.settler.settle(message.clone(), outcome.clone()).await {
            Ok(()) => {}
            Err(Error::TaskNotFound { .. }) => {
                tracing::warn!(task_id = %message.id, queue = %message.queue, "task was no longer active when its outcome was written");
            }
            Err(e) => {
                tracing::warn!(task_id = %message.id, queue = %message.queue, error = %e, "writing the outcome failed; the syncer will retry");
                self.syncer.push(message.clone(), outcome, lease.expiry());
            }
        }
    }
}

/// What one fetch did.
struct FetchReport {
    /// How many tasks it started or took ahead (not those waiting for a limit).
    started: usize,
    /// Whether the queues gave fewer tasks than it asked for.
    ran_short: bool,
    /// How long a rate-limited queue asks to be left alone.
    rate_limited_for: Option<Duration>,
    /// Whether tasks over a limit went back to their queue for want of room to wait.
    gave_back: bool,
}

/// A task a fetch took, waiting for its start to be recorded: to run at once, held until a
/// worker slot frees up, or waiting for its turn under a concurrency limit.
enum Taken {
    Now(Ready),
    Ahead(Dequeued, OwnedSemaphorePermit, AheadCount),
    Waiting(Dequeued, Waiter),
}

impl Taken {
    fn task(&self) -> &Dequeued {
        match self {
            Taken::Now(ready) => &ready.task,
            Taken::Ahead(task, _, _) | Taken::Waiting(task, _) => task,
        }
    }
}

/// Counts a task taken ahead in [`Shared::ahead`] until it has a worker slot or goes back to
/// its queue: dropped, it uncounts it.
struct AheadCount(Arc<AtomicUsize>);

impl AheadCount {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(count))
    }
}

impl Drop for AheadCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a task waiting for its turn under a concurrency limit holds: its hold, its room in the
/// server's waiting room, and its type's permit once it has it.
struct Waiter {
    hold: OwnedSemaphorePermit,
    room: OwnedSemaphorePermit,
    type_permit: Option<OwnedSemaphorePermit>,
}

/// A task with what it needs to run.
struct Ready {
    task: Dequeued,
    permits: TaskPermits,
    type_permit: Option<OwnedSemaphorePermit>,
    /// The shared concurrency slot it holds, to give back when its outcome is written.
    shared_slot: Option<SlotKey>,
    held: Held,
}

/// A task's lease and cancellation, from the moment it is taken.
struct Held {
    lease: Lease,
    cancel: CancellationToken,
}

impl Held {
    fn new(task: &Dequeued, clock: &Arc<dyn Clock>) -> Self {
        Self { lease: Lease::new(task.lease_expiry, Arc::clone(clock)), cancel: CancellationToken::new() }
    }
}

/// The permits a task needs to start: a worker slot and a hold.
struct TaskPermits {
    slot: OwnedSemaphorePermit,
    hold: OwnedSemaphorePermit,
}

impl TaskPermits {
    /// Waits for a hold, then for a slot.
    async fn acquire(slots: &Arc<Semaphore>, holds: &Arc<Semaphore>) -> Self {
        const OPEN: &str = "the processor's semaphores are never closed";
        let hold = Arc::clone(holds).acquire_owned().await.expect(OPEN);
        let slot = Arc::clone(slots).acquire_owned().await.expect(OPEN);
        Self { slot, hold }
    }

    /// Both permits if both are free now.
    fn try_acquire(slots: &Arc<Semaphore>, holds: &Arc<Semaphore>) -> Option<Self> {
        let hold = Arc::clone(holds).try_acquire_owned().ok()?;
        let slot = Arc::clone(slots).try_acquire_owned().ok()?;
        Some(Self { slot, hold })
    }
}

/// What observers are told about an attempt that ended as `attempt`, to be written as `outcome`.
fn attempt_report<'a>(attempt: &'a Attempt, outcome: Option<&Outcome>, duration: Duration) -> AttemptReport<'a> {
    let error = match attempt {
        Attempt::Finished(Err(err)) => Some(err),
        _ => None,
    };
    let (outcome, is_failure) = match (attempt, outcome) {
        (Attempt::LeaseLost, _) | (_, None) => (AttemptOutcome::LeaseLost, false),
        (Attempt::Abandoned, _) => (AttemptOutcome::Requeued, false),
        (Attempt::Finished(Ok(())), _) => (AttemptOutcome::Succeeded, false),
        (Attempt::Finished(Err(_)), Some(Outcome::Retry { is_failure, .. })) => (AttemptOutcome::Retried, *is_failure),
        (Attempt::Finished(Err(_)), Some(Outcome::Archive { .. })) => (AttemptOutcome::Archived, true),
        (Attempt::Finished(Err(_)), Some(_)) => (AttemptOutcome::Revoked, false),
    };
    AttemptReport { outcome, duration, error, is_failure }
}
