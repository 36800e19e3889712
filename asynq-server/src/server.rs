//! The server: starts the roles, and stops them in an order that loses nothing.

use crate::aggregator::{Aggregator, AggregatorConfig};
use crate::config::Config;
use crate::control::{Control, StatusCell};
use crate::forwarder::{Forwarder, ForwarderConfig};
use crate::handler::Handler;
use crate::healthcheck::{HealthCheckConfig, HealthChecker};
use crate::heartbeat::{HeartbeatConfig, Heartbeater};
use crate::janitor::{Janitor, JanitorConfig};
use crate::observe::Observers;
use crate::policy::FailurePolicy;
use crate::processor::{Processor, ProcessorConfig};
use crate::recoverer::{Recoverer, RecovererConfig};
use crate::relayer::Relayer;
use crate::rng::ServerRng;
use crate::served::{QueueSources, QueueWatcher, ServedQueues};
use crate::shared_limits::SharedLimits;
use crate::subscriber::{Subscriber, SubscriberConfig};
use crate::syncer::{Syncer, SyncerConfig};
use crate::type_metrics::{TypeMetricsFlusher, TypeMetricsRecorder};
use crate::workers::ActiveTasks;
use asynq_core::broker::RateLimiter;
use asynq_core::broker::Workflows;
use asynq_core::broker::{Aggregate, Cancel, WorkerBroker};
use asynq_core::queue::QueuePriorities;
use asynq_core::{Error, QueueName, Result, ServerControl, ServerInfo, ServerStatus};
use asynq_runtime::{Role, hostname};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A worker server: takes tasks from a broker and runs a [`Handler`] on them, with the
/// background roles that keep the queues healthy (forwarding due tasks, extending leases,
/// recovering tasks of dead workers, deleting expired completed tasks).
///
/// ```no_run
/// use asynq_server::{Config, Server, ServeMux};
/// use asynq_memory::MemoryBroker;
///
/// # #[tokio::main] async fn main() -> Result<(), asynq_core::Error> {
/// let mut mux = ServeMux::new();
/// mux.handle_fn("email:welcome", |_ctx, _task| async { Ok(()) });
/// let server = Server::new(MemoryBroker::new(), Config::default())?;
/// server.run(mux).await // until SIGTERM or Ctrl-C
/// # }
/// ```
pub struct Server {
    broker: Arc<dyn WorkerBroker>,
    capabilities: WorkerCapabilities,
    config: Config,
    /// Where the served queues come from, checked and normalised.
    sources: QueueSources,
    info: ServerInfo,
    status: StatusCell,
    /// The quiet and stop switches, which the heartbeater throws on operators' requests.
    control: Arc<Control>,
    running: Option<Running>,
}

/// How much longer than [`Config::shutdown_timeout`] [`Server::shutdown`] may take at most: for
/// the fetch loop to stop, the last writes (tasks given back, outcomes, the server's records)
/// and the roles to end. With a broker that answers, shutdown takes a few round trips of it.
pub const SHUTDOWN_MARGIN: Duration = Duration::from_secs(3);

/// How long a fetch in flight may take to finish when shutdown begins.
const FETCH_STOP_GRACE: Duration = Duration::from_secs(1);

/// The roles of a started server, each with the token that stops it.
struct Running {
    processor: Processor,
    fetching: Role,
    forwarder: Role,
    recoverer: Role,
    syncer: Role,
    janitor: Role,
    aggregator: Option<Role>,
    relayer: Option<Role>,
    queue_watcher: Option<Role>,
    healthcheck: Option<Role>,
    subscriber: Option<Role>,
    heartbeat: Role,
    /// Writes the per task type metrics the processor's attempts add up to; stopped after the
    /// processor, so that it writes every attempt's.
    type_metrics: Option<Role>,
}

/// The opt-in capabilities of the broker that this server uses.
struct WorkerCapabilities {
    /// Listens for cancellation requests, when the broker carries them.
    cancel: Option<Arc<dyn Cancel>>,
    /// Aggregates groups (with a group aggregator) and reclaims stale aggregation sets.
    aggregate: Option<Arc<dyn Aggregate>>,
    /// Takes rate-limit tokens, when the configuration sets rate limits.
    rate_limiter: Option<Arc<dyn RateLimiter>>,
    /// Takes shared concurrency slots, when the configuration sets shared limits.
    slots: Option<Arc<dyn asynq_core::broker::ConcurrencySlots>>,
    /// Hands workflow tasks their parents' results and relays settled tasks' outcomes.
    workflows: Option<Arc<dyn Workflows>>,
    /// Keeps per task type metrics, when the configuration records them.
    task_metrics: Option<Arc<dyn asynq_core::broker::TaskMetrics>>,
    /// Carries operators' requests to quiet or stop this server.
    server_control: Option<Arc<dyn ServerControl>>,
    /// Keeps handlers' durable steps (`TaskContext::step`).
    steps: Option<Arc<dyn asynq_core::broker::Steps>>,
}

impl Server {
    /// A server over `broker`, not yet started.
    ///
    /// The broker needs only what a worker uses ([`WorkerBroker`]); the configuration decides
    /// which of its opt-in [`Capabilities`](asynq_core::broker::Capabilities) the server also
    /// uses. A setting whose capability the broker lacks is refused here, before anything runs:
    ///
    /// | setting | capability it needs |
    /// |---|---|
    /// | [`Config::group_aggregator`] | [`Aggregate`](asynq_core::broker::Aggregate) (`as_aggregate`) |
    /// | [`Config::rate_limits`] | [`RateLimiter`](asynq_core::broker::RateLimiter) (`as_rate_limiter`) |
    /// | [`Config::queue_patterns`] | [`QueueDirectory`](asynq_core::broker::QueueDirectory) (`as_queue_directory`) |
    /// | [`Config::sharded_queues`] | [`ShardedQueues`](asynq_core::broker::ShardedQueues) (`as_sharded_queues`) |
    /// | [`Config::shared_type_concurrency`], [`Config::shared_queue_concurrency`], [`Config::shared_limit`] | [`ConcurrencySlots`](asynq_core::broker::ConcurrencySlots) (`as_concurrency_slots`) |
    ///
    /// Used when the broker has them, and otherwise left out without an error: cancellation
    /// requests ([`Cancel`](asynq_core::broker::Cancel), so `Tracker::cancel` reaches this
    /// server), workflows ([`Workflows`](asynq_core::broker::Workflows), so a workflow
    /// task reads its parents' results and releases its dependents), and durable steps
    /// ([`Steps`](asynq_core::broker::Steps): without it `TaskContext::step` fails with
    /// `StepError::Unsupported`). The memory and Redis
    /// brokers have every capability.
    ///
    /// Errors: [`Error::InvalidArgument`] for an invalid configuration;
    /// [`Error::Unsupported`] when the configuration needs a capability the broker lacks.
    pub fn new(broker: impl WorkerBroker, config: Config) -> Result<Self> {
        Self::from_shared(Arc::new(broker), config)
    }

    /// A server over a broker shared with other components.
    ///
    /// Errors: as [`Server::new`].
    pub fn from_shared(broker: Arc<dyn WorkerBroker>, config: Config) -> Result<Self> {
        let sources = config.validate()?;
        let capabilities = WorkerCapabilities {
            cancel: broker.clone().as_cancel(),
            aggregate: broker.clone().as_aggregate(),
            rate_limiter: broker.clone().as_rate_limiter(),
            slots: broker.clone().as_concurrency_slots(),
            workflows: broker.clone().as_workflows(),
            task_metrics: broker.clone().as_task_metrics().filter(|_| config.task_metrics),
            server_control: broker.clone().as_server_control(),
            steps: broker.clone().as_steps(),
        };
        if config.group_aggregator.is_some() && capabilities.aggregate.is_none() {
            return Err(Error::Unsupported { capability: "aggregating groups (Config::group_aggregator)" });
        }
        if !config.rate_limits.is_empty() && capabilities.rate_limiter.is_none() {
            return Err(Error::Unsupported { capability: "rate limits (Config::rate_limits)" });
        }
        if !sources.patterns.is_empty() && broker.clone().as_queue_directory().is_none() {
            return Err(Error::Unsupported { capability: "listing queues (Config::queue_patterns)" });
        }
        if !sources.sharded.is_empty() && broker.clone().as_sharded_queues().is_none() {
            return Err(Error::Unsupported { capability: "sharded queues (Config::sharded_queues)" });
        }
        if config.has_shared_limits() && capabilities.slots.is_none() {
            return Err(Error::Unsupported {
                capability: "shared concurrency limits (Config::shared_type_concurrency, Config::shared_queue_concurrency, \
                             Config::shared_limit)",
            });
        }
        let info = ServerInfo {
            host: hostname(),
            pid: std::process::id(),
            server_id: uuid::Uuid::new_v4().to_string(),
            concurrency: config.concurrency as u32,
            // As configured; the heartbeats list the queues served instead (patterns resolved,
            // sharded queues as their shards).
            queues: config
                .queues
                .iter()
                .chain(&config.queue_patterns)
                .chain(&config.sharded_queues)
                .map(|(name, p)| (name.clone(), *p))
                .collect(),
            strict_priority: config.strict_priority,
            status: ServerStatus::New,
            started: config.clock.now(),
            active_workers: 0,
        };
        let status = StatusCell::new(ServerStatus::New);
        let control = Arc::new(Control::new(status.clone()));
        Ok(Self { broker, capabilities, config, sources, info, status, control, running: None })
    }

    /// The server's ID, as its heartbeats report it.
    pub fn id(&self) -> &str {
        &self.info.server_id
    }

    /// The current status.
    pub fn status(&self) -> ServerStatus {
        self.status.get()
    }

    /// The number of tasks running now.
    pub fn running_tasks(&self) -> usize {
        self.running.as_ref().map_or(0, |r| r.processor.running())
    }

    /// Starts processing with `handler` in the background (on the current tokio runtime).
    ///
    /// When the broker carries cancellation requests, no handler starts before the server has
    /// subscribed to them and read those kept from before ([`asynq_core::broker::Cancel`]), so
    /// that no request made for a task it runs is missed.
    ///
    /// Errors: [`Error::FailedPrecondition`] if the server was already started.
    pub fn start(&mut self, handler: impl Handler) -> Result<()> {
        if self.status.get() != ServerStatus::New {
            return Err(Error::FailedPrecondition(format!("server already {}", self.status.get())));
        }
        let c = &self.config;
        let b = &self.broker;
        let clock = Arc::clone(&c.clock);
        let (queue_watcher, queues) = if self.sources.is_dynamic() {
            let (directory, shards) = (b.clone().as_queue_directory(), b.clone().as_sharded_queues());
            let (watcher, served) =
                QueueWatcher::new(self.sources.clone(), directory, shards, c.queue_refresh_interval, clock.clone());
            (Some(watcher), served)
        } else {
            let fixed = QueuePriorities::from_weights(self.sources.fixed.iter().cloned(), self.sources.strict);
            (None, ServedQueues::fixed(fixed))
        };
        let rng = ServerRng::new(c.rng_seed);
        let failure_policy = FailurePolicy::new(&c.retry_delay, &c.is_failure, &rng);
        let active = Arc::new(ActiveTasks::default());
        let type_metrics = self.capabilities.task_metrics.clone().map(|metrics| {
            let recorder = Arc::new(TypeMetricsRecorder::new(clock.clone()));
            (recorder.clone(), TypeMetricsFlusher::new(metrics, recorder))
        });
        let mut task_observers = c.task_observers.clone();
        if let Some((recorder, _)) = &type_metrics {
            task_observers.push(recorder.clone());
        }
        let observers = Observers::new(&task_observers);
        let sharded: Vec<QueueName> = self.sources.sharded.iter().map(|(logical, _)| logical.clone()).collect();
        observers.serving_sharded_queues(&sharded);
        let syncer = Syncer::new(b.clone(), clock.clone(), SyncerConfig { interval: c.syncer_interval });
        let shared_limits = match (&self.capabilities.slots, c.has_shared_limits()) {
            (Some(slots), true) => {
                let (by_type, by_queue) = (c.shared_type_limits()?, c.shared_queue_limits()?);
                Some(Arc::new(SharedLimits::new(slots.clone(), by_type, by_queue, c.shared_limit.clone())))
            }
            // `from_shared` refused shared limits without slots.
            _ => None,
        };
        let processor = Processor::new(
            b.clone(),
            Arc::new(handler),
            clock.clone(),
            active.clone(),
            syncer.clone(),
            self.capabilities.rate_limiter.clone().filter(|_| !c.rate_limits.is_empty()),
            ProcessorConfig {
                concurrency: c.concurrency,
                queues: queues.clone(),
                task_check_interval: c.task_check_interval,
                shutdown_timeout: c.shutdown_timeout,
                failure_policy: failure_policy.clone(),
                error_handler: c.error_handler.clone(),
                rate_limits: c.checked_rate_limits()?,
                type_concurrency: c.type_concurrency.clone(),
                shared_limits: shared_limits.clone(),
                prefetch: c.prefetch.unwrap_or_else(|| c.default_prefetch()),
                start_with_fetch: c.start_with_fetch,
                observers: observers.clone(),
                workflows: self.capabilities.workflows.clone(),
                rng,
                steps: self.capabilities.steps.clone(),
            },
        );
        let subscriber = self
            .capabilities
            .cancel
            .clone()
            .map(|cancel| Subscriber::new(cancel, active.clone(), clock.clone(), SubscriberConfig::default()));
        // Handlers start once the server can hear cancellation requests, and has read those
        // made before it could.
        let cancels_heard = subscriber.as_ref().map(Subscriber::ready);
        let mut heartbeater = Heartbeater::new(
            b.clone(),
            b.clone(),
            self.info.clone(),
            self.status.clone(),
            active,
            shared_limits,
            HeartbeatConfig { interval: c.heartbeat_interval, queues: queues.clone() },
        );
        if let Some(requests) = &self.capabilities.server_control {
            heartbeater = heartbeater.hearing_requests(requests.clone(), self.control.clone());
        }
        let mut recoverer = Recoverer::new(
            b.clone(),
            clock.clone(),
            RecovererConfig { queues: queues.clone(), interval: c.recoverer_interval, failure_policy },
        )
        .observed_by(observers);
        if let Some(aggregate) = &self.capabilities.aggregate {
            recoverer = recoverer.reclaiming_aggregation_sets(aggregate.clone());
        }
        let forwarder = Forwarder::new(
            b.clone(),
            clock.clone(),
            ForwarderConfig { queues: queues.clone(), interval: c.delayed_task_check_interval },
        );
        let relayer = self.capabilities.workflows.clone().map(|workflows| Relayer::new(workflows, queues.clone()));
        let janitor = Janitor::new(
            b.clone(),
            JanitorConfig { queues: queues.clone(), interval: c.janitor_interval, batch_size: c.janitor_batch_size },
        );
        let aggregator = match (&c.group_aggregator, &self.capabilities.aggregate) {
            (Some(aggregator), Some(aggregate)) => Some(Aggregator::new(
                aggregate.clone(),
                clock,
                AggregatorConfig::new(queues, c.aggregation_limits(), aggregator.clone()),
            )?),
            // `from_shared` refused a group aggregator without aggregation.
            _ => None,
        };
        let healthcheck = c.health_check.clone().map(|report| {
            HealthChecker::new(b.clone(), HealthCheckConfig { interval: c.health_check_interval, report })
        });

        // Go asynq's start order: heartbeater, health checker, subscriber, syncer, recoverer,
        // forwarder, processor, janitor, aggregator.
        self.status.set(ServerStatus::Active);
        let heartbeat = Role::spawn(|stop| heartbeater.spawn(stop));
        let healthcheck = healthcheck.map(|h| Role::spawn(|stop| h.spawn(stop)));
        let subscriber = subscriber.map(|s| Role::spawn(|stop| s.spawn(stop)));
        let syncer = Role::spawn(|stop| syncer.spawn(stop));
        let recoverer = Role::spawn(|stop| recoverer.spawn(stop));
        let forwarder = Role::spawn(|stop| forwarder.spawn(stop));
        let fetching = Role::spawn(|stop| match cancels_heard {
            Some(ready) => processor.spawn_when(ready, stop),
            None => processor.spawn(stop),
        });
        self.control.fetching_started(fetching.stop.clone());
        let janitor = Role::spawn(|stop| janitor.spawn(stop));
        let aggregator = aggregator.map(|a| Role::spawn(|stop| a.spawn(stop)));
        let relayer = relayer.map(|r| Role::spawn(|stop| r.spawn(stop)));
        let queue_watcher = queue_watcher.map(|w| Role::spawn(|stop| w.spawn(stop)));
        let type_metrics = type_metrics.map(|(_, flusher)| Role::spawn(|stop| flusher.spawn(stop)));
        self.running = Some(Running {
            processor,
            fetching,
            forwarder,
            recoverer,
            syncer,
            janitor,
            aggregator,
            relayer,
            queue_watcher,
            healthcheck,
            subscriber,
            heartbeat,
            type_metrics,
        });
        tracing::info!(server_id = %self.info.server_id, concurrency = c.concurrency, "server started");
        Ok(())
    }

    /// Stops taking new tasks; running tasks go on to finish (Go's `Stop`, sent by SIGTSTP, and
    /// what an operator's quiet request does: `asynq server quiet`). The server then reports
    /// itself `stopped`.
    pub fn stop(&self) {
        if self.control.quiet() {
            tracing::info!("stopped fetching new tasks");
        }
    }

    /// Resolves once an operator asked this server to stop (`asynq server stop`, the
    /// dashboard's Stop button, [`asynq_core::ServerControl::request_server`]), which its
    /// heartbeat reads; by then the server takes no new tasks. [`Server::run`] awaits it beside
    /// the shutdown signals; a server run with [`Server::start`] is shut down by whoever awaits
    /// it, with [`Server::shutdown`]. Never resolves on a broker that carries no requests.
    pub fn stop_requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.control.stop_requested().cancelled_owned()
    }

    /// Stops the server: no new tasks are taken, running tasks get up to the shutdown timeout to
    /// finish, and those that do not are given back to the front of their queues.
    ///
    /// Returns within the shutdown timeout plus [`SHUTDOWN_MARGIN`], even when the broker does
    /// not answer (Redis frozen or gone): what could not be written by then (an outcome, the
    /// give-back of a task, the removal of the server's records) is left to lease recovery and
    /// to the records' TTL, and no task is lost or charged for it.
    pub async fn shutdown(&mut self) {
        let Some(running) = self.running.take() else { return };
        self.status.set(ServerStatus::Closed);
        let started = tokio::time::Instant::now();
        let deadline = started + self.config.shutdown_timeout + SHUTDOWN_MARGIN;
        // Order matters. Forwarding and fetching stop first, so no new work starts (a fetch
        // stuck in a call is abandoned after a second: a dequeue whose reply never comes costs
        // its tasks nothing). Then the processor drains or requeues what runs, while the
        // heartbeater keeps extending the leases of tasks still running. The syncer makes a
        // last attempt at failed writes after every task has settled. The subscriber stops once
        // no task runs that it could cancel. The heartbeater goes last and removes the server's
        // records. Every stop ends by the deadline.
        let fetch_stopped = (started + FETCH_STOP_GRACE).min(deadline);
        futures::future::join(
            running.forwarder.stop_by(fetch_stopped, "forwarder"),
            running.fetching.stop_by(fetch_stopped, "processor's fetch loop"),
        )
        .await;
        running.processor.shutdown(deadline).await;
        let mut rest = vec![
            running.recoverer.stop_by(deadline, "recoverer"),
            running.syncer.stop_by(deadline, "syncer"),
            running.janitor.stop_by(deadline, "janitor"),
        ];
        let optional = [
            (running.subscriber, "subscriber"),
            (running.aggregator, "aggregator"),
            (running.healthcheck, "health checker"),
            (running.relayer, "workflow relayer"),
            (running.queue_watcher, "queue watcher"),
            (running.type_metrics, "task metrics recorder"),
        ];
        rest.extend(optional.into_iter().filter_map(|(role, name)| role.map(|role| role.stop_by(deadline, name))));
        futures::future::join_all(rest).await;
        running.heartbeat.stop_by(deadline, "heartbeater").await;
        tracing::info!(server_id = %self.info.server_id, "server shut down");
    }

    /// Starts the server and runs it until SIGTERM or Ctrl-C (SIGINT), or until an operator
    /// asks it to stop ([`Server::stop_requested`]), then shuts it down. SIGTSTP, or an
    /// operator's quiet request, stops taking new tasks, as [`Server::stop`] does.
    pub async fn run(mut self, handler: impl Handler) -> Result<()> {
        self.start(handler)?;
        let stop_requested = self.stop_requested();
        tokio::select! {
            () = asynq_runtime::wait_for_shutdown(|| self.stop()) => {}
            () = stop_requested => {}
        }
        self.shutdown().await;
        Ok(())
    }
}

/// Dropping a started server without [`Server::shutdown`] stops every role at once: running
/// tasks are cancelled and requeued in the background, and the server's records expire with
/// their TTL.
impl Drop for Server {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.processor.abandon();
            let roles = [
                running.fetching,
                running.forwarder,
                running.recoverer,
                running.syncer,
                running.janitor,
                running.heartbeat,
            ];
            let optional =
                [running.aggregator, running.healthcheck, running.subscriber, running.relayer, running.type_metrics];
            for role in roles.iter().chain(optional.iter().flatten()) {
                role.stop.cancel();
            }
        }
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.info)
            .field("status", &self.status.get())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
