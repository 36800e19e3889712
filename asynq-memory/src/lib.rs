//! An in-memory asynq broker with the observable behaviour of Go asynq's Redis scripts, for
//! tests and for running producers and workers inside one process.
//!
//! [`MemoryBroker`] implements every trait of [`asynq_core::broker`]. It keeps each queue the
//! way Redis does (lists, sorted sets scored in whole Unix seconds, one record per task) and
//! reproduces the scripts' quirks, so that a conformance suite can hold it and the Redis broker
//! to the same cases. All wall-clock time is read from its [`Clock`]; give it a
//! [`SimulatedClock`](asynq_core::SimulatedClock) to control time in tests.
//!
//! ```
//! use asynq_core::broker::{Dequeue, Enqueue};
//! use asynq_core::{Clock, SystemClock, Task, TaskOptions, resolve_enqueue};
//! use asynq_memory::MemoryBroker;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> asynq_core::Result<()> {
//! let broker = MemoryBroker::new();
//! let task = Task::new("email:welcome", r#"{"user_id":42}"#);
//! let request = resolve_enqueue(&task, &TaskOptions::new(), SystemClock.now(), || "task-1".to_owned())?;
//! broker.enqueue(request).await?;
//!
//! let taken = broker.dequeue(&["default".to_owned()], 10).await?;
//! assert_eq!(taken.len(), 1);
//! assert_eq!(taken[0].message.id, "task-1");
//! # Ok(())
//! # }
//! ```

mod aggregate;
mod manage;
mod queue;
mod rate_limit;
mod schedulers;
mod servers;
mod signals;
mod stats;
mod zset;

use async_trait::async_trait;
use asynq_core::broker::{
    Aggregate, Cancel, Capabilities, Dequeue, Dequeued, Enqueue, Forward, Health, Inspect, Janitor, Outcome, Page,
    RateLimiter, Recover, SchedulerState, ServerState,
};
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{
    Clock, EnqueueRequest, Error, Placement, QueueInfo, Result, ServerInfo, SystemClock, TaskInfo, TaskMessage,
    TaskState, WorkerInfo, validate_queue_name,
};
use bytes::Bytes;
use queue::{Queue, lease_expiry};
use servers::Servers;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// A broker that keeps every queue in this process's memory.
///
/// Clones share the same queues. Every operation takes one lock for its whole duration, so each
/// is atomic, as the Redis scripts are.
///
/// Where it departs from Go asynq:
/// - a pending, scheduled or retry ID without a task record (which this broker never leaves
///   behind) is dropped by dequeue and forward, where Go would move it into active or pending
///   for good;
/// - [`Dequeue::write_result`] on a missing task fails with [`Error::TaskNotFound`], where Go
///   would create a record holding only the result;
/// - uniqueness-lock keys carry the payload in hex rather than its MD5, and expired locks are
///   dropped when the janitor runs.
#[derive(Clone)]
pub struct MemoryBroker {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Notified whenever a task may have become ready: enqueue or forward to pending, requeue,
    /// unpause.
    ready: Notify,
    /// Cancellation requests and finish notifications.
    signals: signals::Signals,
}

#[derive(Debug, Default)]
struct State {
    /// The queue names the inspector knows (Go's `asynq:queues`); added on every enqueue.
    known: BTreeSet<String>,
    queues: HashMap<String, Queue>,
    servers: Servers,
    /// Periodic-task schedulers' entries, enqueue history and fire marks.
    schedulers: schedulers::Schedulers,
    /// Per-queue rate-limit token buckets.
    rate_buckets: HashMap<String, asynq_core::rate_limit::TokenBucket>,
}

impl State {
    /// The queue `name` for an inspector call, which fails for a queue never enqueued to.
    fn known_queue(&self, name: &str) -> Result<&Queue> {
        self.queues
            .get(name)
            .filter(|_| self.known.contains(name))
            .ok_or_else(|| Error::QueueNotFound { queue: name.to_owned() })
    }
}

impl MemoryBroker {
    /// An empty broker that reads the operating system's clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty broker that reads `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        let inner =
            Inner { clock, state: Mutex::new(State::default()), ready: Notify::new(), signals: Default::default() };
        Self { inner: Arc::new(inner) }
    }

    fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().expect("memory broker lock poisoned")
    }

    fn wake_waiters(&self) {
        self.inner.ready.notify_waiters();
    }
}

impl Default for MemoryBroker {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryBroker {
    // Not derived: the state may hold millions of tasks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBroker").field("clock", &self.inner.clock).finish_non_exhaustive()
    }
}

#[async_trait]
impl Enqueue for MemoryBroker {
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()> {
        validate_queue_name(&request.message.queue)?;
        let now = self.now();
        let to_pending = request.placement == Placement::Pending;
        {
            let mut state = self.state();
            // Registered even when the enqueue then fails, as Go's `SADD` runs first.
            state.known.insert(request.message.queue.clone());
            state.queues.entry(request.message.queue.clone()).or_default().enqueue(request, now)?;
        }
        if to_pending {
            self.wake_waiters();
        }
        Ok(())
    }
}

#[async_trait]
impl Dequeue for MemoryBroker {
    async fn dequeue(&self, queues: &[String], max: usize) -> Result<Vec<Dequeued>> {
        let now = self.now();
        let mut state = self.state();
        let mut taken = Vec::new();
        for name in queues {
            let remaining = max - taken.len();
            if remaining == 0 {
                break;
            }
            if let Some(queue) = state.queues.get_mut(name) {
                taken.extend(queue.dequeue(remaining, now));
            }
        }
        Ok(taken)
    }

    async fn wait_for_tasks(&self, queues: &[String]) {
        // A `Notified` receives every `notify_waiters` made after its creation, polled or not:
        // creating it before looking means a task enqueued after the look wakes this waiter.
        // Wake-ups for other queues are looked at and slept through.
        loop {
            let notified = self.inner.ready.notified();
            let ready = {
                let state = self.state();
                queues.iter().any(|name| state.queues.get(name).is_some_and(Queue::has_ready))
            };
            if ready {
                return;
            }
            notified.await;
        }
    }

    async fn finish(&self, message: &TaskMessage, outcome: Outcome) -> Result<()> {
        let now = self.now();
        let requeue = outcome == Outcome::Requeue;
        let finished_for_good = matches!(outcome, Outcome::Done | Outcome::Complete | Outcome::Archive { .. });
        {
            let mut state = self.state();
            let queue = state
                .queues
                .get_mut(&message.queue)
                .ok_or_else(|| Error::TaskNotFound { queue: message.queue.clone(), id: message.id.clone() })?;
            queue.finish(message, outcome, now)?;
        }
        if requeue {
            self.wake_waiters();
        }
        if finished_for_good {
            self.inner.signals.task_finished();
        }
        Ok(())
    }

    async fn extend_leases(&self, queue: &str, ids: &[String]) -> Result<SystemTime> {
        let expiry = lease_expiry(self.now());
        if let Some(queue) = self.state().queues.get_mut(queue) {
            queue.extend_leases(ids, expiry);
        }
        Ok(from_unix_secs(expiry))
    }

    async fn write_result(&self, queue: &str, id: &str, result: Bytes) -> Result<()> {
        let written = self.state().queues.get_mut(queue).is_some_and(|q| q.write_result(id, result));
        if written { Ok(()) } else { Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }) }
    }
}

#[async_trait]
impl Forward for MemoryBroker {
    async fn forward_ready(&self, queues: &[String]) -> Result<usize> {
        let now = self.now();
        let moved: usize = {
            let mut state = self.state();
            queues.iter().map(|name| state.queues.get_mut(name).map_or(0, |queue| queue.forward(now))).sum()
        };
        // Some may have gone to a group rather than to pending; waking for nothing is allowed.
        if moved > 0 {
            self.wake_waiters();
        }
        Ok(moved)
    }
}

#[async_trait]
impl Recover for MemoryBroker {
    async fn list_lease_expired(&self, queues: &[String], cutoff: SystemTime) -> Result<Vec<TaskMessage>> {
        let cutoff = unix_secs(cutoff);
        let state = self.state();
        Ok(queues
            .iter()
            .filter_map(|name| state.queues.get(name))
            .flat_map(|queue| queue.lease_expired(cutoff))
            .collect())
    }
}

#[async_trait]
impl Janitor for MemoryBroker {
    async fn delete_expired_completed(&self, queue: &str, batch_size: usize) -> Result<usize> {
        let now = self.now();
        Ok(self.state().queues.get_mut(queue).map_or(0, |queue| queue.delete_expired_completed(batch_size, now)))
    }
}

#[async_trait]
impl ServerState for MemoryBroker {
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()> {
        let expires_at =
            self.now().checked_add(ttl).ok_or_else(|| Error::invalid("ttl", format!("{ttl:?} is too long")))?;
        self.state().servers.write(server, workers, expires_at);
        Ok(())
    }

    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()> {
        self.state().servers.clear(server);
        Ok(())
    }
}

/// Every capability: the memory broker has them all.
impl Capabilities for MemoryBroker {
    fn as_cancel(self: Arc<Self>) -> Option<Arc<dyn Cancel>> {
        Some(self)
    }

    fn as_aggregate(self: Arc<Self>) -> Option<Arc<dyn Aggregate>> {
        Some(self)
    }

    fn as_rate_limiter(self: Arc<Self>) -> Option<Arc<dyn RateLimiter>> {
        Some(self)
    }

    fn as_scheduler_state(self: Arc<Self>) -> Option<Arc<dyn SchedulerState>> {
        Some(self)
    }
}

#[async_trait]
impl Health for MemoryBroker {
    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Inspect for MemoryBroker {
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>> {
        let now = self.now();
        Ok(self.state().servers.alive(now))
    }

    async fn queues(&self) -> Result<Vec<String>> {
        Ok(self.state().known.iter().cloned().collect())
    }

    async fn queue_info(&self, queue: &str) -> Result<QueueInfo> {
        let now = self.now();
        Ok(self.state().known_queue(queue)?.info(queue, now))
    }

    async fn task_info(&self, queue: &str, id: &str) -> Result<TaskInfo> {
        let now = self.now();
        self.state()
            .known_queue(queue)?
            .task_info(id, now)
            .ok_or_else(|| Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() })
    }

    async fn list_tasks(&self, queue: &str, state: TaskState, page: Page) -> Result<Vec<TaskInfo>> {
        let now = self.now();
        Ok(self.state().known_queue(queue)?.list(state, page, now))
    }

    async fn list_group_tasks(&self, queue: &str, group: &str, page: Page) -> Result<Vec<TaskInfo>> {
        Ok(self.state().known_queue(queue)?.group_tasks(group, page))
    }

    async fn history(&self, queue: &str, days: usize) -> Result<Vec<asynq_core::DailyStats>> {
        asynq_core::DailyStats::validate_days(days)?;
        let now = self.now();
        Ok(self.state().known_queue(queue)?.history(queue, days, now))
    }

    /// Kind `memory`, with the fields `queues` (known queues) and `tasks` (task records in
    /// them, in any state); no nodes.
    async fn backend_info(&self) -> Result<asynq_core::BackendInfo> {
        let state = self.state();
        let tasks: usize = state.known.iter().filter_map(|name| state.queues.get(name)).map(Queue::task_count).sum();
        let fields = [("queues", state.known.len()), ("tasks", tasks)]
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.to_string()))
            .collect();
        Ok(asynq_core::BackendInfo::new("memory", fields, Vec::new()))
    }

    /// Always `None`: there is no cluster.
    async fn queue_location(&self, _queue: &str) -> Result<Option<asynq_core::QueueLocation>> {
        Ok(None)
    }

    async fn pause_queue(&self, queue: &str) -> Result<()> {
        let now = self.now();
        self.state().queues.entry(queue.to_owned()).or_default().pause(queue, now)
    }

    async fn unpause_queue(&self, queue: &str) -> Result<()> {
        let unpaused = match self.state().queues.get_mut(queue) {
            Some(q) => q.unpause(queue),
            None => Err(Error::FailedPrecondition(format!("queue {queue:?} is not paused"))),
        };
        if unpaused.is_ok() {
            self.wake_waiters();
        }
        unpaused
    }
}
