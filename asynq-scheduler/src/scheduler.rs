//! A scheduler enqueues periodic tasks: each entry pairs a cron spec with a task, and whenever
//! the spec matches, the scheduler enqueues the task through a [`Client`].
//!
//! Like Go asynq's scheduler it publishes its entries every heartbeat (10 s, living 20 s) where
//! Go's does, records what each entry enqueued (the newest 1000 events), and on shutdown removes
//! both, so Go's `asynq cron ls` and `asynq cron history` show it.
//!
//! Unlike Go's, several replicas of one scheduler may run at once (Go asynq issue #1013): they
//! enqueue each fire once between them. Every fire is enqueued under a task ID derived from the
//! entry's spec, task, options and time zone and the fire time, which every replica computes
//! alike; the replicas that come second get a task ID conflict and take it as "already
//! enqueued". A task ID is unique only while its task exists, though: a handler that finishes
//! before a lagging replica fires would let that replica enqueue the fire again. So the replica
//! that enqueues a fire also marks it in the broker for [`SchedulerConfig::dedup_window`], and
//! every replica looks for the mark before enqueueing. What remains open is a replica that looks
//! in the instant between another's enqueue and its mark while the task also completes in that
//! instant, and replicas whose clocks disagree by more than the dedup window.
//!
//! Fire times are the same on every replica: cron specs match wall-clock instants, and `@every`
//! periods are counted from the Unix epoch (`@every 30s` fires at :00 and :30 of each minute).
//! This differs from Go, whose first `@every` fire comes one period after the scheduler starts.
//! The first heartbeat is written at start rather than one interval later, so that a new
//! scheduler is listed at once.

use crate::schedule::{Schedule, SpecError};
use asynq_client::Client;
use asynq_core::broker::{Enqueue, SchedulerEnqueueEvent, SchedulerEntry, SchedulerState};
use asynq_core::time::unix_secs;
use asynq_core::{Clock, Error, SystemClock, Task, TaskInfo, TaskOptions, resolve_enqueue};
use asynq_runtime::{FirstRun, run_every};
use asynq_runtime::{Role, hostname};
use chrono_tz::Tz;
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Called before the scheduler enqueues a fire, with the task and the options it was registered
/// with; not called for a fire another replica already marked as enqueued.
pub type PreEnqueueFn = Arc<dyn Fn(&Task, &TaskOptions) + Send + Sync>;
/// Called after the scheduler tried to enqueue a fire, with the result. A
/// [`Error::TaskIdConflict`] on the fire's own ID means another replica enqueued it.
pub type PostEnqueueFn = Arc<dyn Fn(Result<&TaskInfo, &Error>) + Send + Sync>;

/// How a [`Scheduler`] behaves. Start from [`SchedulerConfig::default`] and change what you need.
#[derive(Clone)]
pub struct SchedulerConfig {
    /// How often the scheduler publishes its entries; they live twice as long. Default: 10 s.
    pub heartbeat_interval: Duration,
    /// The IANA time zone cron fields are read in, unless a spec names its own with `CRON_TZ=`
    /// or `TZ=`. Default: `"UTC"`.
    pub location: String,
    /// How long the mark of an enqueued fire lasts, during which other replicas skip that fire.
    /// Replicas' clocks must agree within it. Default: 5 min.
    pub dedup_window: Duration,
    /// Called before each enqueue. Default: none.
    pub pre_enqueue: Option<PreEnqueueFn>,
    /// Called after each enqueue with its result. Default: none.
    pub post_enqueue: Option<PostEnqueueFn>,
    /// The wall clock fire times are computed from. Default: the system clock; tests use one
    /// that follows tokio's paused time.
    pub clock: Arc<dyn Clock>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            heartbeat_interval: Duration::from_secs(10),
            location: "UTC".to_owned(),
            dedup_window: Duration::from_secs(5 * 60),
            pre_enqueue: None,
            post_enqueue: None,
            clock: Arc::new(SystemClock),
        }
    }
}

impl fmt::Debug for SchedulerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulerConfig")
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("location", &self.location)
            .field("dedup_window", &self.dedup_window)
            .field("pre_enqueue", &self.pre_enqueue.is_some())
            .field("post_enqueue", &self.post_enqueue.is_some())
            .field("clock", &self.clock)
            .finish()
    }
}

impl SchedulerConfig {
    /// Checks the configuration and returns its time zone.
    fn validate(&self) -> Result<Tz, SchedulerError> {
        let invalid = |field, reason: &str| SchedulerError::InvalidConfig { field, reason: reason.to_owned() };
        if self.heartbeat_interval.is_zero() {
            return Err(invalid("heartbeat interval", "must be positive"));
        }
        if self.dedup_window < Duration::from_secs(1) {
            return Err(invalid("dedup window", "must be at least one second"));
        }
        self.location
            .parse()
            .map_err(|_| invalid("location", &format!("unknown time zone {:?} (expected an IANA name)", self.location)))
    }
}

/// Everything a [`Scheduler`] or a
/// [`PeriodicTaskManager`](crate::PeriodicTaskManager) refuses or fails at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchedulerError {
    /// The cron spec cannot be used; nothing was registered.
    #[error("invalid cron spec {spec:?}: {reason}")]
    InvalidSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        #[source]
        reason: SpecError,
    },
    /// The task or its options would be refused by the client; nothing was registered.
    #[error("invalid periodic task: {0}")]
    InvalidTask(#[source] Error),
    /// The configuration cannot be used.
    #[error("invalid scheduler configuration: {field}: {reason}")]
    InvalidConfig {
        /// The setting at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// No entry with this ID is registered.
    #[error("no scheduler entry with ID {id:?}")]
    EntryNotFound {
        /// The entry ID.
        id: String,
    },
    /// `start` was called on a running scheduler.
    #[error("the scheduler is already running")]
    AlreadyStarted,
    /// `start` was called on a scheduler that was shut down.
    #[error("the scheduler has been shut down")]
    ShutDown,
    /// Enqueueing a fire failed.
    #[error("could not enqueue the periodic task: {0}")]
    Enqueue(#[source] Error),
    /// The periodic task config provider failed.
    #[error("the periodic task config provider failed: {0}")]
    ConfigProvider(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What became of one fire of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FireOutcome {
    /// This scheduler enqueued the task.
    Enqueued(Box<TaskInfo>),
    /// Another replica had already enqueued this fire; nothing was enqueued.
    AlreadyEnqueued {
        /// The fire's ID, which is also the task ID it was enqueued under (unless the task's
        /// options name one).
        fire_id: String,
    },
}

/// A scheduler that enqueues tasks on cron specs. See the [module docs](self) for how it
/// behaves, and [`PeriodicTaskManager`](crate::PeriodicTaskManager) to keep its entries in
/// sync with a configuration source.
///
/// ```no_run
/// use asynq_core::{Task, TaskOptions};
/// use asynq_memory::MemoryBroker;
/// use asynq_scheduler::{Scheduler, SchedulerConfig};
///
/// # #[tokio::main] async fn main() -> Result<(), asynq_scheduler::SchedulerError> {
/// let scheduler = Scheduler::new(MemoryBroker::new(), SchedulerConfig::default())?;
/// scheduler.register("@every 30s", Task::new("metrics:flush", ""), TaskOptions::new())?;
/// scheduler.register("CRON_TZ=Europe/Paris 0 9 * * 1-5", Task::new("report:daily", ""), TaskOptions::new().queue("low"))?;
/// scheduler.run().await // until SIGTERM or Ctrl-C
/// # }
/// ```
pub struct Scheduler {
    shared: Arc<Shared>,
    heartbeat: Option<Role>,
}

impl Scheduler {
    /// A scheduler that enqueues into `broker` and publishes its state there, not yet started.
    /// When the broker keeps sharded queues, a task registered for a sharded queue's logical
    /// name goes to one of its shards, as a [`Client`] places it: each fire by its task ID (the
    /// fire's, unless the task names one), so that replicas send one fire to one shard and its
    /// ID conflicts there; a unique task by its type and payload.
    ///
    /// Errors: [`SchedulerError::InvalidConfig`].
    pub fn new<B>(broker: B, config: SchedulerConfig) -> Result<Self, SchedulerError>
    where
        B: Enqueue + SchedulerState + 'static,
    {
        let broker = Arc::new(broker);
        let client = Client::from_shared(broker.clone()).with_clock(Arc::clone(&config.clock));
        Self::from_parts(client, broker, config)
    }

    /// A scheduler that enqueues through `client` and publishes its state to `state`. Fire
    /// times and enqueue events read `config.clock`; give `client` the same clock.
    ///
    /// Errors: [`SchedulerError::InvalidConfig`].
    pub fn from_parts(
        client: Client,
        state: Arc<dyn SchedulerState>,
        config: SchedulerConfig,
    ) -> Result<Self, SchedulerError> {
        let zone = config.validate()?;
        let id = format!("{}:{}:{}", hostname(), std::process::id(), uuid::Uuid::new_v4());
        let clock = Arc::clone(&config.clock);
        let shared = Shared { id, client, state, clock, zone, config, registry: Mutex::default() };
        Ok(Self { shared: Arc::new(shared), heartbeat: None })
    }

    /// The scheduler's ID, `<host>:<pid>:<uuid>` as in Go asynq.
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// Registers `task` to be enqueued with `options` whenever `spec` matches, and returns the
    /// new entry's ID. Works before and after [`Scheduler::start`].
    ///
    /// Errors: [`SchedulerError::InvalidSpec`] for a spec that does not parse or never fires,
    /// [`SchedulerError::InvalidTask`] for a task or options the client would refuse.
    pub fn register(&self, spec: &str, task: Task, options: TaskOptions) -> Result<String, SchedulerError> {
        let entry = self.shared.prepare(spec, task, options)?;
        Ok(self.shared.add(entry))
    }

    /// Stops entry `entry_id` from firing; a fire under way finishes.
    ///
    /// Errors: [`SchedulerError::EntryNotFound`].
    pub fn unregister(&self, entry_id: &str) -> Result<(), SchedulerError> {
        self.shared.remove(entry_id)
    }

    /// The registered entries, in the order they were registered, as the heartbeat publishes
    /// them.
    pub fn entries(&self) -> Vec<SchedulerEntry> {
        self.shared.registry().entries.iter().map(|e| e.snapshot()).collect()
    }

    /// Publishes the entries once, living twice the heartbeat interval (the heartbeat's step).
    pub async fn write_entries(&self) -> asynq_core::Result<()> {
        self.shared.write_entries().await
    }

    /// Enqueues entry `entry_id` as its fire at `at` would, deduplicated with other replicas.
    /// The timers call this at each fire time; call it to trigger an entry by hand.
    ///
    /// Errors: [`SchedulerError::EntryNotFound`], [`SchedulerError::Enqueue`].
    pub async fn fire(&self, entry_id: &str, at: SystemTime) -> Result<FireOutcome, SchedulerError> {
        let entry = self.shared.entry(entry_id)?;
        self.shared.fire(&entry, at).await
    }

    /// Starts the timers and the heartbeat in the background (on the current tokio runtime).
    ///
    /// Errors: [`SchedulerError::AlreadyStarted`], [`SchedulerError::ShutDown`].
    pub fn start(&mut self) -> Result<(), SchedulerError> {
        self.shared.start_timers()?;
        let shared = Arc::clone(&self.shared);
        self.heartbeat = Some(Role::spawn(|stop| {
            tokio::spawn(async move {
                run_every(shared.config.heartbeat_interval, FirstRun::Immediately, &stop, || async {
                    if let Err(e) = shared.write_entries().await {
                        tracing::warn!(scheduler_id = %shared.id, error = %e, "could not write the scheduler entries");
                    }
                })
                .await;
                if let Err(e) = shared.state.clear_scheduler_entries(&shared.id).await {
                    tracing::error!(scheduler_id = %shared.id, error = %e, "could not clear the scheduler entries");
                }
            })
        }));
        tracing::info!(scheduler_id = %self.shared.id, location = %self.shared.zone, "scheduler started");
        Ok(())
    }

    /// Stops the scheduler: no fire starts after this, fires under way finish, and its entries
    /// and their histories are removed from the broker.
    pub async fn shutdown(&mut self) {
        let Some(heartbeat) = self.heartbeat.take() else { return };
        let (timers, entries) = self.shared.close();
        // Go asynq's order: the heartbeat stops first and removes the entries, so no tool lists
        // a scheduler that fires no more; then the timers stop and the fires under way finish;
        // last, each entry's history goes.
        heartbeat.stop().await;
        if let Some(timers) = timers {
            timers.stop().await;
        }
        for entry in entries {
            if let Err(e) = self.shared.state.clear_scheduler_history(&entry.id).await {
                tracing::warn!(entry_id = %entry.id, error = %e, "could not clear the scheduler history");
            }
        }
        tracing::info!(scheduler_id = %self.shared.id, "scheduler shut down");
    }

    /// Starts the scheduler and runs it until SIGTERM or Ctrl-C (SIGINT), then shuts it down.
    pub async fn run(mut self) -> Result<(), SchedulerError> {
        self.start()?;
        asynq_runtime::wait_for_shutdown(|| {}).await;
        self.shutdown().await;
        Ok(())
    }

    /// The state a [`PeriodicTaskManager`](crate::PeriodicTaskManager) registers through.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// Dropping a started scheduler without [`Scheduler::shutdown`] stops its timers and heartbeat
/// at once, without waiting for fires under way; the heartbeat removes the entries as it stops,
/// and the entries' histories stay.
impl Drop for Scheduler {
    fn drop(&mut self) {
        if let Some(heartbeat) = self.heartbeat.take() {
            heartbeat.stop.cancel();
            if let (Some(timers), _) = self.shared.close() {
                timers.stop.cancel();
            }
        }
    }
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("id", &self.shared.id)
            .field("config", &self.shared.config)
            .field("entries", &self.shared.registry().entries.len())
            .finish_non_exhaustive()
    }
}

/// What identifies a periodic task across replicas and configuration syncs: SHA-256 over the
/// spec, the scheduler's time zone, the task's type, payload and headers, and the Go strings of
/// its options (its own merged with the registered ones), each length-prefixed.
pub(crate) fn fingerprint(spec: &str, task: &Task, options: &TaskOptions, zone: Tz) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(bytes);
    };
    field(spec.as_bytes());
    field(zone.name().as_bytes());
    field(task.type_name().as_bytes());
    field(task.payload());
    let mut headers: Vec<(&String, &String)> = task.headers().iter().collect();
    headers.sort();
    field(&(headers.len() as u64).to_be_bytes());
    for (key, value) in headers {
        field(key.as_bytes());
        field(value.as_bytes());
    }
    let mut option_strings = task.options().merge(options).go_option_strings();
    option_strings.sort();
    field(&(option_strings.len() as u64).to_be_bytes());
    for option in &option_strings {
        field(option.as_bytes());
    }
    hasher.finalize().into()
}

/// One registered entry.
pub(crate) struct Entry {
    id: String,
    spec: String,
    schedule: Schedule,
    task: Task,
    options: TaskOptions,
    identity: [u8; 32],
    times: Mutex<FireTimes>,
    /// Cancelled when the entry is unregistered: its timer stops.
    removed: CancellationToken,
}

#[derive(Debug, Clone, Copy, Default)]
struct FireTimes {
    next: Option<SystemTime>,
    prev: Option<SystemTime>,
}

impl Entry {
    fn times(&self) -> FireTimes {
        *self.times.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_times(&self, times: FireTimes) {
        *self.times.lock().unwrap_or_else(PoisonError::into_inner) = times;
    }

    /// The ID of the fire at `at`: a UUID (version 8) made of the first 16 bytes of SHA-256 over
    /// the entry's identity and the fire's Unix second, the same on every replica.
    fn fire_id(&self, at: SystemTime) -> String {
        let digest = Sha256::new().chain_update(self.identity).chain_update(unix_secs(at).to_be_bytes()).finalize();
        let bytes: [u8; 16] = digest[..16].try_into().expect("a SHA-256 digest has 32 bytes");
        uuid::Builder::from_custom_bytes(bytes).into_uuid().to_string()
    }

    fn snapshot(&self) -> SchedulerEntry {
        let FireTimes { next, prev } = self.times();
        SchedulerEntry {
            id: self.id.clone(),
            spec: self.spec.clone(),
            task_type: self.task.type_name().to_owned(),
            task_payload: self.task.payload().clone(),
            options: self.options.go_option_strings(),
            next,
            prev,
        }
    }
}

/// The lifecycle of a scheduler, as Go asynq's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Status {
    #[default]
    New,
    Active,
    Closed,
}

/// The registered entries and, while the scheduler runs, the timers that fire them.
#[derive(Default)]
struct Registry {
    entries: Vec<Arc<Entry>>,
    status: Status,
    timers: Option<Timers>,
}

/// The running timers: one task per entry, and the fires they started.
#[derive(Clone)]
struct Timers {
    stop: CancellationToken,
    runtime: Handle,
    loops: TaskTracker,
    fires: TaskTracker,
}

impl Timers {
    /// Stops every timer and waits for them and for the fires under way.
    async fn stop(self) {
        self.stop.cancel();
        self.loops.close();
        self.loops.wait().await;
        self.fires.close();
        self.fires.wait().await;
    }
}

/// The scheduler's state, shared by its handle, its timers, its heartbeat and a periodic task
/// manager.
pub(crate) struct Shared {
    id: String,
    client: Client,
    state: Arc<dyn SchedulerState>,
    clock: Arc<dyn Clock>,
    zone: Tz,
    config: SchedulerConfig,
    registry: Mutex<Registry>,
}

impl Shared {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The time zone specs are read in.
    pub(crate) fn zone(&self) -> Tz {
        self.zone
    }

    /// Validates a registration and builds its entry, without registering it.
    pub(crate) fn prepare(&self, spec: &str, task: Task, options: TaskOptions) -> Result<Entry, SchedulerError> {
        let invalid_spec = |reason| SchedulerError::InvalidSpec { spec: spec.to_owned(), reason };
        let schedule = Schedule::parse(spec, self.zone).map_err(invalid_spec)?;
        let now = self.clock.now();
        resolve_enqueue(&task, &options, now, || "validation".to_owned()).map_err(SchedulerError::InvalidTask)?;
        if schedule.next_after(now).is_none() {
            return Err(invalid_spec(SpecError::NeverFires));
        }
        Ok(Entry {
            id: uuid::Uuid::new_v4().to_string(),
            spec: spec.to_owned(),
            identity: fingerprint(spec, &task, &options, self.zone),
            schedule,
            task,
            options,
            times: Mutex::default(),
            removed: CancellationToken::new(),
        })
    }

    /// Registers `entry` (starting its timer if the scheduler runs) and returns its ID.
    pub(crate) fn add(self: &Arc<Self>, entry: Entry) -> String {
        let entry = Arc::new(entry);
        let mut registry = self.registry();
        if let Some(timers) = &registry.timers {
            self.spawn_timer(Arc::clone(&entry), timers);
        }
        registry.entries.push(Arc::clone(&entry));
        entry.id.clone()
    }

    /// Unregisters entry `id`, stopping its timer.
    pub(crate) fn remove(&self, id: &str) -> Result<(), SchedulerError> {
        let mut registry = self.registry();
        let index = registry
            .entries
            .iter()
            .position(|e| e.id == id)
            .ok_or_else(|| SchedulerError::EntryNotFound { id: id.to_owned() })?;
        registry.entries.remove(index).removed.cancel();
        Ok(())
    }

    fn entry(&self, id: &str) -> Result<Arc<Entry>, SchedulerError> {
        self.registry()
            .entries
            .iter()
            .find(|e| e.id == id)
            .cloned()
            .ok_or_else(|| SchedulerError::EntryNotFound { id: id.to_owned() })
    }

    /// Marks the scheduler active and starts a timer per entry.
    fn start_timers(self: &Arc<Self>) -> Result<(), SchedulerError> {
        let mut registry = self.registry();
        match registry.status {
            Status::Active => return Err(SchedulerError::AlreadyStarted),
            Status::Closed => return Err(SchedulerError::ShutDown),
            Status::New => {}
        }
        let timers = Timers {
            stop: CancellationToken::new(),
            runtime: Handle::current(),
            loops: TaskTracker::new(),
            fires: TaskTracker::new(),
        };
        for entry in &registry.entries {
            self.spawn_timer(Arc::clone(entry), &timers);
        }
        registry.status = Status::Active;
        registry.timers = Some(timers);
        Ok(())
    }

    /// Marks the scheduler closed; returns its timers, if it ran, and its entries.
    fn close(&self) -> (Option<Timers>, Vec<Arc<Entry>>) {
        let mut registry = self.registry();
        registry.status = Status::Closed;
        (registry.timers.take(), registry.entries.clone())
    }

    /// Computes the entry's first fire now, so the first heartbeat already shows it, and starts
    /// its timer.
    fn spawn_timer(self: &Arc<Self>, entry: Arc<Entry>, timers: &Timers) {
        let next = entry.schedule.next_after(self.clock.now());
        entry.set_times(FireTimes { next, ..entry.times() });
        timers.loops.spawn_on(Arc::clone(self).run_timer(entry, timers.clone()), &timers.runtime);
    }

    /// Fires `entry` at each of its times until it is unregistered or the scheduler stops.
    async fn run_timer(self: Arc<Self>, entry: Arc<Entry>, timers: Timers) {
        while let Some(at) = entry.times().next {
            if !self.sleep_until(at, &timers.stop, &entry.removed).await {
                return;
            }
            // A timer that woke late (a busy runtime, a clock jump) skips the times it missed.
            let next = entry.schedule.next_after(self.clock.now().max(at));
            entry.set_times(FireTimes { next, prev: Some(at) });
            let (shared, fired) = (Arc::clone(&self), Arc::clone(&entry));
            timers.fires.spawn_on(async move { shared.fire_and_log(&fired, at).await }, &timers.runtime);
        }
        tracing::warn!(entry_id = %entry.id, spec = %entry.spec, "the scheduler entry will not fire again");
    }

    /// Sleeps until the clock reads `at` or later; false when stopped first. Sleeps in tokio
    /// time, and looks at the clock again on waking, in case it moved otherwise.
    async fn sleep_until(&self, at: SystemTime, stop: &CancellationToken, removed: &CancellationToken) -> bool {
        loop {
            let wait = at.duration_since(self.clock.now()).unwrap_or_default();
            if wait.is_zero() {
                return true;
            }
            tokio::select! {
                biased;
                _ = stop.cancelled() => return false,
                _ = removed.cancelled() => return false,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn fire_and_log(&self, entry: &Entry, at: SystemTime) {
        match self.fire(entry, at).await {
            Ok(FireOutcome::Enqueued(info)) => {
                tracing::debug!(entry_id = %entry.id, task_id = %info.id, queue = %info.queue, "scheduler enqueued a task");
            }
            Ok(FireOutcome::AlreadyEnqueued { fire_id }) => {
                tracing::debug!(entry_id = %entry.id, fire_id = %fire_id, "another scheduler enqueued this fire");
            }
            Err(e) => {
                tracing::warn!(entry_id = %entry.id, spec = %entry.spec, error = %e, "scheduler could not enqueue a task");
            }
        }
    }

    /// Enqueues the fire of `entry` at `at`, unless another replica did.
    async fn fire(&self, entry: &Entry, at: SystemTime) -> Result<FireOutcome, SchedulerError> {
        let fire_id = entry.fire_id(at);
        match self.state.fire_enqueued(&fire_id).await {
            Ok(true) => return Ok(FireOutcome::AlreadyEnqueued { fire_id }),
            Ok(false) => {}
            Err(e) => tracing::warn!(
                fire_id = %fire_id,
                error = %e,
                "cannot tell whether another scheduler enqueued this fire; enqueueing it (its task ID keeps it once while it exists)"
            ),
        }
        if let Some(pre_enqueue) = &self.config.pre_enqueue {
            pre_enqueue(&entry.task, &entry.options);
        }
        // The fire ID is the task ID unless the task or the registration names one.
        let options = TaskOptions::new().task_id(&fire_id).merge(entry.task.options()).merge(&entry.options);
        let result = self.client.enqueue(&entry.task, options).await;
        if let Some(post_enqueue) = &self.config.post_enqueue {
            post_enqueue(result.as_ref());
        }
        match result {
            Ok(info) => {
                self.mark_fire(&fire_id).await;
                let event = SchedulerEnqueueEvent { task_id: info.id.to_string(), enqueued_at: self.clock.now() };
                if let Err(e) = self.state.record_scheduler_enqueue(&entry.id, &event).await {
                    tracing::warn!(entry_id = %entry.id, task_id = %info.id, error = %e, "could not record the enqueue event");
                }
                Ok(FireOutcome::Enqueued(Box::new(info)))
            }
            Err(Error::TaskIdConflict { id, .. }) if id == fire_id => {
                self.mark_fire(&fire_id).await;
                Ok(FireOutcome::AlreadyEnqueued { fire_id })
            }
            Err(e) => Err(SchedulerError::Enqueue(e)),
        }
    }

    async fn mark_fire(&self, fire_id: &str) {
        if let Err(e) = self.state.mark_fire_enqueued(fire_id, self.config.dedup_window).await {
            tracing::warn!(fire_id = %fire_id, error = %e, "could not mark the fire as enqueued");
        }
    }

    async fn write_entries(&self) -> asynq_core::Result<()> {
        let entries: Vec<SchedulerEntry> = self.registry().entries.iter().map(|e| e.snapshot()).collect();
        self.state.write_scheduler_entries(&self.id, &entries, self.config.heartbeat_interval * 2).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_periodic_tasks_apart() {
        let task = Task::new("report", "p");
        let base = fingerprint("@daily", &task, &TaskOptions::new(), Tz::UTC);
        assert_eq!(base, fingerprint("@daily", &task.clone(), &TaskOptions::new(), Tz::UTC));
        let variants = [
            fingerprint("@hourly", &task, &TaskOptions::new(), Tz::UTC),
            fingerprint("@daily", &task, &TaskOptions::new(), Tz::Europe__Paris),
            fingerprint("@daily", &Task::new("report", "q"), &TaskOptions::new(), Tz::UTC),
            fingerprint("@daily", &Task::new("other", "p"), &TaskOptions::new(), Tz::UTC),
            fingerprint("@daily", &task.clone().with_header("k", "v"), &TaskOptions::new(), Tz::UTC),
            fingerprint("@daily", &task, &TaskOptions::new().queue("low"), Tz::UTC),
            fingerprint(
                "@daily",
                &task.clone().with_options(TaskOptions::new().queue("low")),
                &TaskOptions::new(),
                Tz::UTC,
            ),
        ];
        for (i, variant) in variants.iter().enumerate() {
            assert_ne!(&base, variant, "variant {i}");
        }
        // The same options given on the task or at registration are the same periodic task.
        assert_eq!(variants[5], variants[6]);
    }

    #[test]
    fn option_order_does_not_change_the_fingerprint() {
        let task = Task::new("report", "p");
        let a = TaskOptions::new().queue("low").max_retry(3);
        let b = TaskOptions::new().max_retry(3).queue("low");
        assert_eq!(fingerprint("@daily", &task, &a, Tz::UTC), fingerprint("@daily", &task, &b, Tz::UTC));
    }
}
