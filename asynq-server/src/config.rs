//! Server configuration: one struct with Go asynq's fields and defaults.

use crate::aggregator::GroupAggregator;
use crate::handler::HandlerError;
use crate::limits::QueueLimits;
use crate::observe::TaskObserver;
use crate::policy::{ErrorHandlerFn, HealthCheckFn, IsFailureFn, RetryDelayFn, SharedLimitFn, default_retry_delay_fn};
use crate::served::{QueueProvider, QueueSources};
use asynq_core::broker::{AggregationLimits, DEFAULT_GROUP_GRACE_PERIOD};
use asynq_core::queue::{QueuePattern, QueuePriorities};
use asynq_core::{Clock, SystemClock, Task};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How a [`Server`](crate::Server) behaves. Build one with [`Config::builder`], or start from
/// [`Config::default`] and change what you need:
///
/// ```
/// use asynq_server::Config;
/// use std::time::Duration;
///
/// let config = Config {
///     concurrency: 20,
///     queues: [("critical".to_owned(), 6), ("default".to_owned(), 3), ("low".to_owned(), 1)].into(),
///     shutdown_timeout: Duration::from_secs(30),
///     ..Config::default()
/// };
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct Config {
    /// The most tasks processed at once. Default: the number of CPUs.
    pub concurrency: usize,
    /// The queues to serve and their priorities. Default: `{"default": 1}`.
    pub queues: BTreeMap<String, u32>,
    /// Patterns of queue names to serve, each with the priority of every queue it matches
    /// ([`QueuePattern`], such as `tenant:*`): a queue
    /// registered later (by its first enqueue, from any producer, Go's included) is served
    /// within `queue_refresh_interval`, without a restart. A queue that is also in `queues`
    /// keeps that priority; one two patterns match takes the first's (by pattern). Needs a
    /// broker that lists its queues. Default: none.
    pub queue_patterns: BTreeMap<String, u32>,
    /// Sharded queues to serve, by logical name, each with its priority
    /// ([`asynq_core::shard`]): the server serves every shard its declaration names (after a
    /// reshard, the draining generation's too), the priority split over them, picks up a
    /// declaration made while it runs within `queue_refresh_interval`, and on that refresh
    /// drops a drained generation. Needs a broker that keeps sharded queues. Default: none.
    pub sharded_queues: BTreeMap<String, u32>,
    /// Names more queues to serve, asked every `queue_refresh_interval`. Default: none.
    pub queue_provider: Option<Arc<dyn QueueProvider>>,
    /// How often the patterns and the provider are looked at again. Default: 1 s.
    pub queue_refresh_interval: Duration,
    /// Always drain higher-priority queues first, instead of choosing queues at random in
    /// proportion to their priorities; queues of one priority are tried in random order.
    /// Default: false.
    pub strict_priority: bool,
    /// How long to wait before retrying a failed task. Default: Go's
    /// ([`default_retry_delay`](crate::default_retry_delay)), its jitter drawn from the server's
    /// generator (see `rng_seed`).
    pub retry_delay: RetryDelayFn,
    /// Whether an error counts as a failure. Default: every error does.
    pub is_failure: IsFailureFn,
    /// Called with every handler error. Default: none.
    pub error_handler: Option<ErrorHandlerFn>,
    /// How long shutdown waits for running tasks before giving them back to their queue.
    /// Default: 8 s.
    pub shutdown_timeout: Duration,
    /// Called with the result of each broker health check. Default: none (no checks).
    pub health_check: Option<HealthCheckFn>,
    /// How often the health check runs. Default: 15 s.
    pub health_check_interval: Duration,
    /// How often an idle processor polls for tasks when the broker cannot wake it. Default: 1 s.
    pub task_check_interval: Duration,
    /// How often scheduled and retry tasks that are due are moved to pending. Default: 5 s.
    pub delayed_task_check_interval: Duration,
    /// How often the server writes its state and extends its leases. Default: 5 s.
    pub heartbeat_interval: Duration,
    /// How often tasks whose worker died are looked for. Default: 1 min.
    pub recoverer_interval: Duration,
    /// How often expired completed tasks are deleted. Default: 8 s.
    pub janitor_interval: Duration,
    /// How many expired completed tasks one janitor call deletes. Default: 100.
    pub janitor_batch_size: usize,
    /// How often failed state writes are retried. Default: 5 s.
    pub syncer_interval: Duration,
    /// Combines the tasks of each group into one task once the group is ready; with it, the
    /// server checks the groups of its queues.
    /// Default: none (grouped tasks wait for a server that has one).
    pub group_aggregator: Option<Arc<dyn GroupAggregator>>,
    /// A group is ready once no task joined it for this long; the groups are checked every
    /// `min(7 s, grace period)`. At least 1 s. Default: 1 min.
    pub group_grace_period: Duration,
    /// A group is ready once its oldest task has waited this long, however busy the group.
    /// At least 1 s. Default: none (no limit).
    pub group_max_delay: Option<Duration>,
    /// A group is ready once it holds this many tasks, and one aggregation takes at most this
    /// many. At least 1. Default: none (no limit).
    pub group_max_size: Option<usize>,
    /// Per-queue limits on tasks started per second, shared by every server of the broker (a
    /// token bucket per queue in the broker, which must support rate limits); each must name a
    /// queue in `queues` or a sharded queue in `sharded_queues`, whose limit is one bucket for
    /// the logical queue as a whole (its shards and the plain queue of its name together).
    /// Tasks over the limit wait in pending; when a limited queue is out of tokens, the server
    /// sleeps until the next one is due instead of polling. Default: none.
    pub rate_limits: BTreeMap<String, asynq_core::rate_limit::RateLimit>,
    /// Per-type limits on tasks running at once on this server, by exact type name; each at
    /// least 1. Default: none.
    ///
    /// A task whose type is at its limit waits in the server for its turn and starts as soon as
    /// a task of its type finishes: it stays active and leased, holds no worker (other types
    /// keep running), uses no retry and is never shown as a retry. At most `concurrency` tasks
    /// wait in a server (for type and shared limits together); a task that finds that room full
    /// goes back to the front of its queue, charged nothing, and the server fetches again once a
    /// waiter starts. While a limited type's backlog fills the room, tasks queued behind it in
    /// the same queue wait too: give a limited type a queue of its own to keep them apart.
    pub type_concurrency: BTreeMap<String, usize>,
    /// Per-type limits on tasks running at once across every server of the broker (which must
    /// support shared concurrency slots), by exact type name; each at least 1. Default: none.
    ///
    /// A running task holds a slot of the key `type:<type name>` in the broker, renewed with
    /// its lease and given back when its outcome is written; a task that finds every slot held
    /// waits for one as a task over `type_concurrency` does, and a slot given back by any server
    /// wakes it (over Redis pub/sub, with a poll every `task_check_interval` as the fallback). A
    /// slot held by a worker that died comes back when the task's lease would have run out (30 s
    /// at most), and a waiting server looks again then. Every server running the
    /// type should set the same limit: each counts against the limit it is given.
    pub shared_type_concurrency: BTreeMap<String, u32>,
    /// Per-queue limits on tasks running at once across every server of the broker, by queue
    /// name, for tasks whose type is not in `shared_type_concurrency`; each at least 1, each
    /// naming a queue in `queues` or a sharded queue in `sharded_queues`, whose limit counts the
    /// logical queue as a whole (its shards and the plain queue of its name together). A running
    /// task holds a slot of the key `queue:<queue name>` and works as `shared_type_concurrency`
    /// does. Default: none.
    pub shared_queue_concurrency: BTreeMap<String, u32>,
    /// The shared limit each task counts against, derived from the task, for tasks whose type
    /// is not in `shared_type_concurrency` and whose queue is not in `shared_queue_concurrency`:
    /// say, at most 5 running tasks per tenant, keyed by a header. Works as
    /// `shared_type_concurrency` does. Default: none.
    pub shared_limit: Option<SharedLimitFn>,
    /// How many tasks beyond `concurrency` the server may take ahead of time, so that under
    /// load one broker call fetches many tasks and the next batch is ready when workers free
    /// up. It takes tasks ahead only while its attempts are short (under 10 ms on average) and
    /// no rate, per-type or shared limit is set, so a long task never holds others back from other
    /// servers. Tasks taken ahead are leased like running ones, can be cancelled, and go back
    /// to their queue at once on shutdown. While tasks wait ahead, a slot that frees up goes to
    /// them, and the next fetch waits until half the prefetch could be taken: one broker call
    /// per batch at low concurrency too. A fetch takes its tasks in one weighted order of the
    /// queues, so with weighted priorities the shares hold on average over many fetches, in
    /// runs as long as a fetch. Default: none, meaning four times `concurrency`, at
    /// most 256 (measured by `cargo xtask bench`: a quarter more throughput at concurrency 10
    /// than taking as many as `concurrency`); `Some(0)` turns it off.
    pub prefetch: Option<usize>,
    /// Record the start of the tasks a fetch runs at once in the fetch itself
    /// ([`Dequeue::dequeue_starting`](asynq_core::broker::Dequeue::dequeue_starting)), saving a
    /// Redis call and a round trip before their handlers start: measured 8 % more tasks/s at
    /// concurrency 10 with no-op tasks, one Redis command less per woken task, and a lower pickup
    /// latency. When a fetch's reply is lost (the connection drops after Redis ran it), the Redis
    /// broker finds the tasks it started by the fetch's token and gives them back, uncharged,
    /// once Redis answers again; only if it cannot before their leases expire do they count as
    /// stalls, each forgiven once, as when a worker dies between the start record and its
    /// handlers. Off, the server records the start in a call of its own after the fetch (a
    /// server with type or shared concurrency limits always does, as a task may wait its turn).
    /// Default: on.
    pub start_with_fetch: bool,
    /// Told when each task starts and finishes and when the recoverer finds a task whose lease
    /// expired, in this order: for metrics and tracing.
    /// Default: none.
    pub task_observers: Vec<Arc<dyn TaskObserver>>,
    /// Count the attempts of each task type (runs, failures, run time) per queue and minute, and
    /// add them to the broker's bounded record every
    /// [`TASK_METRICS_FLUSH_INTERVAL`](crate::TASK_METRICS_FLUSH_INTERVAL), for the
    /// dashboard's metrics page ([`asynq_core::task_metrics`]); only on a broker that keeps it.
    /// Default: on.
    pub task_metrics: bool,
    /// The wall clock. Default: the system clock; tests use a simulated one.
    pub clock: Arc<dyn Clock>,
    /// Seeds the server's one random number generator, which orders the queues at each fetch
    /// and draws the jitter of idle polls and of the default retry delay: two servers with one
    /// seed, on one simulated clock and broker state, make the same choices. Default: none,
    /// seeded from the operating system's entropy.
    pub rng_seed: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            concurrency: std::thread::available_parallelism().map_or(1, usize::from),
            queues: BTreeMap::from([(asynq_core::DEFAULT_QUEUE.to_owned(), 1)]),
            queue_patterns: BTreeMap::new(),
            sharded_queues: BTreeMap::new(),
            queue_provider: None,
            queue_refresh_interval: Duration::from_secs(1),
            strict_priority: false,
            retry_delay: default_retry_delay_fn(),
            is_failure: Arc::new(|_| true),
            error_handler: None,
            shutdown_timeout: Duration::from_secs(8),
            health_check: None,
            health_check_interval: Duration::from_secs(15),
            task_check_interval: Duration::from_secs(1),
            delayed_task_check_interval: Duration::from_secs(5),
            heartbeat_interval: Duration::from_secs(5),
            recoverer_interval: Duration::from_secs(60),
            janitor_interval: Duration::from_secs(8),
            janitor_batch_size: 100,
            syncer_interval: Duration::from_secs(5),
            group_aggregator: None,
            group_grace_period: DEFAULT_GROUP_GRACE_PERIOD,
            group_max_delay: None,
            group_max_size: None,
            rate_limits: BTreeMap::new(),
            type_concurrency: BTreeMap::new(),
            shared_type_concurrency: BTreeMap::new(),
            shared_queue_concurrency: BTreeMap::new(),
            shared_limit: None,
            prefetch: None,
            start_with_fetch: true,
            task_observers: Vec::new(),
            task_metrics: true,
            clock: Arc::new(SystemClock),
            rng_seed: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("concurrency", &self.concurrency)
            .field("queues", &self.queues)
            .field("queue_patterns", &self.queue_patterns)
            .field("sharded_queues", &self.sharded_queues)
            .field("queue_provider", &self.queue_provider.is_some())
            .field("queue_refresh_interval", &self.queue_refresh_interval)
            .field("strict_priority", &self.strict_priority)
            .field("error_handler", &self.error_handler.is_some())
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("health_check", &self.health_check.is_some())
            .field("health_check_interval", &self.health_check_interval)
            .field("task_check_interval", &self.task_check_interval)
            .field("delayed_task_check_interval", &self.delayed_task_check_interval)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("recoverer_interval", &self.recoverer_interval)
            .field("janitor_interval", &self.janitor_interval)
            .field("janitor_batch_size", &self.janitor_batch_size)
            .field("syncer_interval", &self.syncer_interval)
            .field("group_aggregator", &self.group_aggregator.is_some())
            .field("group_grace_period", &self.group_grace_period)
            .field("group_max_delay", &self.group_max_delay)
            .field("group_max_size", &self.group_max_size)
            .field("rate_limits", &self.rate_limits)
            .field("type_concurrency", &self.type_concurrency)
            .field("shared_type_concurrency", &self.shared_type_concurrency)
            .field("shared_queue_concurrency", &self.shared_queue_concurrency)
            .field("shared_limit", &self.shared_limit.is_some())
            .field("prefetch", &self.prefetch)
            .field("start_with_fetch", &self.start_with_fetch)
            .field("task_observers", &self.task_observers.len())
            .field("task_metrics", &self.task_metrics)
            .field("clock", &self.clock)
            .field("rng_seed", &self.rng_seed)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// When a group is ready for aggregation, from the `group_*` fields.
    pub(crate) fn aggregation_limits(&self) -> AggregationLimits {
        AggregationLimits {
            grace_period: self.group_grace_period,
            max_delay: self.group_max_delay,
            max_size: self.group_max_size,
        }
    }

    /// Checks the configuration, and returns where its queues come from; called by
    /// [`Server::new`](crate::Server::new).
    pub(crate) fn validate(&self) -> asynq_core::Result<QueueSources> {
        use asynq_core::Error;
        if self.concurrency == 0 {
            return Err(Error::invalid("concurrency", "must be at least 1"));
        }
        let dynamic =
            !self.queue_patterns.is_empty() || self.queue_provider.is_some() || !self.sharded_queues.is_empty();
        let fixed = if dynamic && self.queues.is_empty() {
            // Only queues that come and go: no `default` in their place.
            Vec::new()
        } else {
            QueuePriorities::new(&self.queues, self.strict_priority)?.priorities().to_vec()
        };
        if !self.queues.values().any(|p| *p > 0) && !self.queues.is_empty() {
            return Err(Error::invalid("queues", "every queue has priority 0; give at least one a positive priority"));
        }
        let mut patterns = Vec::with_capacity(self.queue_patterns.len());
        for (pattern, priority) in &self.queue_patterns {
            let pattern = QueuePattern::new(pattern.as_str())?;
            if *priority == 0 {
                return Err(Error::invalid(
                    "queue_patterns",
                    format!("{pattern} has priority 0 and would serve nothing"),
                ));
            }
            patterns.push((pattern, *priority));
        }
        let sharded = self.sharded_queue_sources()?;
        if self.queue_refresh_interval.is_zero() {
            return Err(Error::invalid("interval", "queue refresh interval must be positive"));
        }
        let intervals = [
            ("health check interval", self.health_check_interval),
            ("task check interval", self.task_check_interval),
            ("delayed task check interval", self.delayed_task_check_interval),
            ("heartbeat interval", self.heartbeat_interval),
            ("recoverer interval", self.recoverer_interval),
            ("janitor interval", self.janitor_interval),
            ("syncer interval", self.syncer_interval),
        ];
        for (name, interval) in intervals {
            if interval.is_zero() {
                return Err(Error::invalid("interval", format!("{name} must be positive")));
            }
        }
        self.aggregation_limits().validate()?;
        if self.janitor_batch_size == 0 {
            return Err(Error::invalid("janitor batch size", "must be at least 1"));
        }
        self.checked_rate_limits()?;
        for (type_name, limit) in &self.type_concurrency {
            if type_name.is_empty() {
                return Err(Error::invalid("type_concurrency", "a task type name must not be empty"));
            }
            if *limit == 0 {
                return Err(Error::invalid(
                    "type_concurrency",
                    format!("the limit of {type_name:?} must be at least 1"),
                ));
            }
        }
        self.shared_type_limits()?;
        self.shared_queue_limits()?;
        Ok(QueueSources {
            fixed,
            patterns,
            provider: self.queue_provider.clone(),
            sharded,
            strict: self.strict_priority,
        })
    }

    /// `sharded_queues`, checked: logical names ([`asynq_core::shard::check_logical_name`]) not
    /// also in `queues`, priorities above 0.
    fn sharded_queue_sources(&self) -> asynq_core::Result<Vec<(asynq_core::QueueName, u32)>> {
        use asynq_core::Error;
        let mut sharded = Vec::with_capacity(self.sharded_queues.len());
        for (name, priority) in &self.sharded_queues {
            let logical = asynq_core::QueueName::new(name.as_str())?;
            asynq_core::shard::check_logical_name(&logical)?;
            if *priority == 0 {
                return Err(Error::invalid(
                    "sharded_queues",
                    format!("{name:?} has priority 0 and would serve nothing"),
                ));
            }
            if self.queues.contains_key(name) {
                let why = format!("{name:?} is both a queue and a sharded queue; name it once");
                return Err(Error::invalid("sharded_queues", why));
            }
            sharded.push((logical, *priority));
        }
        Ok(sharded)
    }

    /// `shared_type_concurrency` as checked limits, by type name.
    pub(crate) fn shared_type_limits(&self) -> asynq_core::Result<BTreeMap<String, asynq_core::slots::SharedLimit>> {
        let mut limits = BTreeMap::new();
        for (type_name, limit) in &self.shared_type_concurrency {
            if type_name.is_empty() {
                return Err(asynq_core::Error::invalid(
                    "shared_type_concurrency",
                    "a task type name must not be empty",
                ));
            }
            let shared = asynq_core::slots::SharedLimit::new(format!("type:{type_name}"), *limit).map_err(|e| {
                asynq_core::Error::invalid("shared_type_concurrency", format!("the limit of {type_name:?}: {e}"))
            })?;
            limits.insert(type_name.clone(), shared);
        }
        Ok(limits)
    }

    /// Whether any limit is shared across servers.
    pub(crate) fn has_shared_limits(&self) -> bool {
        !self.shared_type_concurrency.is_empty()
            || !self.shared_queue_concurrency.is_empty()
            || self.shared_limit.is_some()
    }

    /// Checks that the queue a limit of `field` names is one of this server's queues or sharded
    /// queues.
    fn check_limited_queue(&self, field: &'static str, queue: &str) -> asynq_core::Result<()> {
        if self.queues.contains_key(queue) || self.sharded_queues.contains_key(queue) {
            return Ok(());
        }
        let why = format!("queue {queue:?} is not one of this server's queues or sharded queues");
        Err(asynq_core::Error::invalid(field, why))
    }

    /// `rate_limits`, checked, by queue or logical queue.
    pub(crate) fn checked_rate_limits(&self) -> asynq_core::Result<QueueLimits<asynq_core::rate_limit::RateLimit>> {
        for queue in self.rate_limits.keys() {
            self.check_limited_queue("rate_limits", queue)?;
        }
        QueueLimits::new(self.rate_limits.clone(), self.sharded_queues.keys())
    }

    /// `shared_queue_concurrency` as checked limits (key `queue:<name>`), by queue or logical
    /// queue.
    pub(crate) fn shared_queue_limits(&self) -> asynq_core::Result<QueueLimits<asynq_core::slots::SharedLimit>> {
        let mut limits = Vec::with_capacity(self.shared_queue_concurrency.len());
        for (queue, limit) in &self.shared_queue_concurrency {
            self.check_limited_queue("shared_queue_concurrency", queue)?;
            let shared = asynq_core::slots::SharedLimit::new(format!("queue:{queue}"), *limit).map_err(|e| {
                asynq_core::Error::invalid("shared_queue_concurrency", format!("the limit of {queue:?}: {e}"))
            })?;
            limits.push((queue.clone(), shared));
        }
        QueueLimits::new(limits, self.sharded_queues.keys())
    }

    /// The prefetch when none is set: four times the concurrency, at most 256, which keeps one
    /// dequeue script short for the other clients of Redis.
    pub(crate) fn default_prefetch(&self) -> usize {
        self.concurrency.saturating_mul(4).min(256)
    }
}

/// Builds a [`Config`] one setting at a time, and checks it once when built; start with
/// [`Config::builder`]. Settings not named here (intervals, clock) keep their defaults; set them
/// on the built [`Config`] if you need to.
///
/// ```
/// use asynq_server::Config;
/// use std::time::Duration;
///
/// let config = Config::builder()
///     .concurrency(20)
///     .queue("critical", 6)
///     .queue("default", 3)
///     .queue("low", 1)
///     .shutdown_timeout(Duration::from_secs(30))
///     .build()?;
/// assert_eq!(config.queues.len(), 3);
///
/// let refused = Config::builder().concurrency(0).build().unwrap_err();
/// assert_eq!(refused.to_string(), "invalid concurrency: must be at least 1");
/// # Ok::<_, asynq_core::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct ConfigBuilder {
    config: Config,
    /// Whether a queue was named: the first replaces the default queue.
    queues_named: bool,
}

impl Config {
    /// A builder starting from the defaults.
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }
}

impl ConfigBuilder {
    /// How many tasks run at once. Default: the number of CPUs.
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.config.concurrency = concurrency;
        self
    }

    /// Serves `queue` with `priority`; the first queue named replaces the default (`default`,
    /// priority 1).
    pub fn queue(mut self, queue: impl Into<String>, priority: u32) -> Self {
        self.replace_default_queue();
        self.config.queues.insert(queue.into(), priority);
        self
    }

    /// Serves every queue whose name matches `pattern` (such as `tenant:*`) with `priority`,
    /// as queues appear; see [`Config::queue_patterns`]. Like [`ConfigBuilder::queue`], the
    /// first queue or pattern named replaces the default queue.
    pub fn queue_pattern(mut self, pattern: impl Into<String>, priority: u32) -> Self {
        self.replace_default_queue();
        self.config.queue_patterns.insert(pattern.into(), priority);
        self
    }

    /// Serves every shard of the sharded queue `logical` with `priority` split over them; see
    /// [`Config::sharded_queues`]. Like [`ConfigBuilder::queue`], the first queue named replaces
    /// the default queue.
    pub fn sharded_queue(mut self, logical: impl Into<String>, priority: u32) -> Self {
        self.replace_default_queue();
        self.config.sharded_queues.insert(logical.into(), priority);
        self
    }

    /// Also serves the queues `provider` names; see [`Config::queue_provider`]. Replaces the
    /// default queue unless a queue was named.
    pub fn queue_provider(mut self, provider: impl QueueProvider) -> Self {
        self.replace_default_queue();
        self.config.queue_provider = Some(Arc::new(provider));
        self
    }

    /// How often queue patterns and the provider are looked at again. Default: 1 s.
    pub fn queue_refresh_interval(mut self, interval: Duration) -> Self {
        self.config.queue_refresh_interval = interval;
        self
    }

    fn replace_default_queue(&mut self) {
        if !self.queues_named {
            self.config.queues.clear();
            self.queues_named = true;
        }
    }

    /// Always takes from the highest-priority queue that has tasks, instead of weighing
    /// queues by priority.
    pub fn strict_priority(mut self, strict: bool) -> Self {
        self.config.strict_priority = strict;
        self
    }

    /// How long to wait before retrying a failed task. Default: Go asynq's exponential backoff.
    pub fn retry_delay(mut self, f: impl Fn(u32, &HandlerError, &Task) -> Duration + Send + Sync + 'static) -> Self {
        self.config.retry_delay = Arc::new(f);
        self
    }

    /// Which errors count as failures. Default: all.
    pub fn is_failure(mut self, f: impl Fn(&HandlerError) -> bool + Send + Sync + 'static) -> Self {
        self.config.is_failure = Arc::new(f);
        self
    }

    /// Called with every error a handler returns.
    pub fn error_handler(mut self, f: impl Fn(&Task, &HandlerError) + Send + Sync + 'static) -> Self {
        self.config.error_handler = Some(Arc::new(f));
        self
    }

    /// How long running tasks get to finish at shutdown before they are given back.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.config.shutdown_timeout = timeout;
        self
    }

    /// Called after every health check of the broker with its result.
    pub fn health_check(mut self, f: impl Fn(Result<(), &asynq_core::Error>) + Send + Sync + 'static) -> Self {
        self.config.health_check = Some(Arc::new(f));
        self
    }

    /// Aggregates groups with `aggregator` once a group is ready: no task joined it for
    /// `grace_period`, or its limits in [`ConfigBuilder::group_limits`] are reached.
    pub fn group_aggregator(mut self, aggregator: impl GroupAggregator, grace_period: Duration) -> Self {
        self.config.group_aggregator = Some(Arc::new(aggregator));
        self.config.group_grace_period = grace_period;
        self
    }

    /// Makes a group ready once its oldest task waited `max_delay`, or once it holds `max_size`
    /// tasks. Default: neither.
    pub fn group_limits(mut self, max_delay: Option<Duration>, max_size: Option<usize>) -> Self {
        self.config.group_max_delay = max_delay;
        self.config.group_max_size = max_size;
        self
    }

    /// Starts at most `limit` tasks of `queue` per second, across every server of the broker;
    /// for a sharded queue's logical name, of all its shards together.
    pub fn rate_limit(mut self, queue: impl Into<String>, limit: asynq_core::rate_limit::RateLimit) -> Self {
        self.config.rate_limits.insert(queue.into(), limit);
        self
    }

    /// Runs at most `limit` tasks of type `type_name` at once on this server (see
    /// [`Config::type_concurrency`]).
    pub fn type_concurrency(mut self, type_name: impl Into<String>, limit: usize) -> Self {
        self.config.type_concurrency.insert(type_name.into(), limit);
        self
    }

    /// Runs at most `limit` tasks of type `type_name` at once across every server of the broker
    /// (see [`Config::shared_type_concurrency`]).
    pub fn shared_type_concurrency(mut self, type_name: impl Into<String>, limit: u32) -> Self {
        self.config.shared_type_concurrency.insert(type_name.into(), limit);
        self
    }

    /// Runs at most `limit` tasks of `queue` (a queue, or a sharded queue's logical name for
    /// all its shards) at once across every server of the broker (see
    /// [`Config::shared_queue_concurrency`]).
    pub fn shared_queue_concurrency(mut self, queue: impl Into<String>, limit: u32) -> Self {
        self.config.shared_queue_concurrency.insert(queue.into(), limit);
        self
    }

    /// Counts each task against the shared limit `limit` names, if any (see
    /// [`Config::shared_limit`]).
    pub fn shared_limit(
        mut self,
        limit: impl Fn(&Task) -> Option<asynq_core::slots::SharedLimit> + Send + Sync + 'static,
    ) -> Self {
        self.config.shared_limit = Some(Arc::new(limit));
        self
    }

    /// How many tasks a fetch may take ahead of free workers while tasks are short; `0` turns
    /// it off. Default: four times the concurrency, at most 256.
    pub fn prefetch(mut self, prefetch: usize) -> Self {
        self.config.prefetch = Some(prefetch);
        self
    }

    /// Sets [`Config::start_with_fetch`]: whether a fetch records the start of the tasks it runs
    /// at once (on by default), or the server does in a round trip of its own before their
    /// handlers start.
    pub fn start_with_fetch(mut self, start_with_fetch: bool) -> Self {
        self.config.start_with_fetch = start_with_fetch;
        self
    }

    /// Tells `observer` when each task starts and finishes: for metrics and tracing.
    pub fn task_observer(mut self, observer: impl TaskObserver + 'static) -> Self {
        self.config.task_observers.push(Arc::new(observer));
        self
    }

    /// Reads wall-clock time from `clock` (for tests). Default: the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.config.clock = clock;
        self
    }

    /// Seeds the server's random choices with `seed` ([`Config::rng_seed`]), for tests that
    /// must run the same way every time. Default: the operating system's entropy.
    pub fn rng_seed(mut self, seed: u64) -> Self {
        self.config.rng_seed = Some(seed);
        self
    }

    /// The configuration, checked as [`Server::new`](crate::Server::new) checks it.
    ///
    /// Errors: [`asynq_core::Error::InvalidArgument`] naming the setting at fault.
    pub fn build(self) -> asynq_core::Result<Config> {
        self.config.validate()?;
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::rate_limit::RateLimit;

    #[test]
    fn the_builder_replaces_the_default_queue_and_checks_what_it_builds() {
        let config = Config::builder().queue("critical", 6).build().unwrap();
        assert_eq!(config.queues, [("critical".to_owned(), 6)].into());

        let limit = RateLimit::new(5.0, 5).unwrap();
        let err = Config::builder().queue("critical", 1).rate_limit("other", limit).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid rate_limits: queue "other" is not one of this server's queues or sharded queues"#
        );
        let sharded = Config::builder().sharded_queue("orders", 1).rate_limit("orders", limit).build();
        assert!(sharded.is_ok(), "a sharded queue's logical name takes a rate limit: {sharded:?}");
        let refused = Config::builder().queue("a", 1).shared_queue_concurrency("b", 2).build().unwrap_err();
        assert!(matches!(refused, asynq_core::Error::InvalidArgument { field: "shared_queue_concurrency", .. }));
        let zero = Config::builder().sharded_queue("orders", 1).shared_queue_concurrency("orders", 0).build();
        assert!(zero.is_err(), "a limit of 0 is refused");

        let config = Config::builder().group_limits(Some(Duration::from_secs(60)), Some(100)).build().unwrap();
        assert_eq!((config.group_max_delay, config.group_max_size), (Some(Duration::from_secs(60)), Some(100)));
    }
}
