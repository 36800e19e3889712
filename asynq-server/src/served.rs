//! The queues a server serves, which may change while it runs: its configured queues, the
//! registered queues its [`QueuePattern`]s match, and those a [`QueueProvider`] names.
//!
//! Every role reads the current set ([`ServedQueues::now`]) each time it runs, so a queue that
//! appears is forwarded, recovered, cleaned and fetched from on each role's next pass, and the
//! processor's idle wait also ends when the set changes. The [`QueueWatcher`] refreshes the
//! set every `Config::queue_refresh_interval` (1 s by default): a pattern costs one `SCARD` of
//! the queue registry per refresh, whatever the number of queues, and the registry is read
//! whole only when its size moved, or every [`FULL_REFRESH_EVERY`] refreshes (a queue removed
//! and another added within one refresh leave the size as it was). Sharded queues cost one read
//! of their declarations per refresh, and the registry's as patterns do; each serves the shards
//! declared (see `sharded`), those of a generation draining after a reshard too, and its strays
//! (registered queues named as its shards are but not declared, where a task placed late on a
//! dropped shard lands). The refresh is also what drops a drained generation and the strays
//! of dropped ones ([`ShardedQueues::drop_drained_shards`]): the servers are what runs the old
//! shards' tasks, so they see first when nothing is left, the producers stay readers, and no
//! operator has to come back. It asks only once the grace has passed by its clock (then a few
//! queue infos per refresh until the shards are empty), or, for a stray of a dropped generation,
//! on the refreshes that read the registry whole (so within `FULL_REFRESH_EVERY` refreshes);
//! the broker checks again and writes only if the declaration did not change, so servers
//! dropping at once agree.

use async_trait::async_trait;
use asynq_core::broker::{QueueDirectory, ShardedQueues};
use asynq_core::queue::{QueuePattern, QueuePriorities};
use asynq_core::shard::ShardedQueue;
use asynq_core::{Clock, QueueName};
use asynq_runtime::{FirstRun, run_every};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How many refreshes at most pass between two full reads of the queue registry.
pub const FULL_REFRESH_EVERY: u32 = 30;

/// Names the queues a server serves besides its configured ones, asked again every
/// `Config::queue_refresh_interval`: one queue per tenant from a database, say. A queue it
/// stops naming is no longer fetched from (its tasks stay where they are).
///
/// ```
/// use asynq_core::QueueName;
/// use asynq_server::{Config, QueueProvider};
///
/// struct Tenants;
///
/// #[async_trait::async_trait]
/// impl QueueProvider for Tenants {
///     async fn queues(&self) -> asynq_core::Result<Vec<(QueueName, u32)>> {
///         Ok(vec![(QueueName::new("tenant:acme")?, 1), (QueueName::new("tenant:globex")?, 1)])
///     }
/// }
///
/// let config = Config::builder().queue("critical", 3).queue_provider(Tenants).build()?;
/// # let _ = config;
/// # Ok::<(), asynq_core::Error>(())
/// ```
#[async_trait]
pub trait QueueProvider: Send + Sync + 'static {
    /// The queues to serve now, with their priorities (0 leaves a queue out).
    ///
    /// Errors: any; the server logs it and keeps the queues it had.
    async fn queues(&self) -> asynq_core::Result<Vec<(QueueName, u32)>>;
}

/// One state of the served set.
#[derive(Debug)]
pub(crate) struct Served {
    /// The queues with their priorities, and the order to try them in.
    pub priorities: QueuePriorities,
    /// The same queues, highest priority first.
    pub names: Vec<QueueName>,
}

impl Served {
    fn new(priorities: QueuePriorities) -> Arc<Self> {
        let names = priorities.names().cloned().collect();
        Arc::new(Self { priorities, names })
    }
}

/// The served set, as the roles read it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ServedQueues(watch::Receiver<Arc<Served>>);

impl ServedQueues {
    /// A set that never changes.
    pub(crate) fn fixed(priorities: QueuePriorities) -> Self {
        let (_, receiver) = watch::channel(Served::new(priorities));
        Self(receiver)
    }

    /// The set now.
    pub(crate) fn now(&self) -> Arc<Served> {
        Arc::clone(&self.0.borrow())
    }

    /// Waits until the set changes after the last [`ServedQueues::now`] of this handle (or
    /// forever, for a fixed set).
    pub(crate) async fn changed(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
        self.0.borrow_and_update();
    }
}

impl fmt::Debug for ServedQueues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let served = self.now();
        f.debug_struct("ServedQueues").field("queues", &served.names.len()).finish_non_exhaustive()
    }
}

/// Where the served set comes from.
#[derive(Clone)]
pub(crate) struct QueueSources {
    /// The configured queues.
    pub fixed: Vec<(QueueName, u32)>,
    /// The patterns, each with the priority of the queues it matches.
    pub patterns: Vec<(QueuePattern, u32)>,
    /// The provider, if any.
    pub provider: Option<Arc<dyn QueueProvider>>,
    /// The sharded queues, by logical name, each with its priority.
    pub sharded: Vec<(QueueName, u32)>,
    /// Strict priority.
    pub strict: bool,
}

impl QueueSources {
    /// Whether the set may change while the server runs.
    pub(crate) fn is_dynamic(&self) -> bool {
        !self.patterns.is_empty() || self.provider.is_some() || !self.sharded.is_empty()
    }

    /// The set from the configured queues, `registered` queues the patterns match (the first
    /// matching pattern's priority), and `provided` ones; a queue named twice keeps its first
    /// priority, configured queues first; then the shards of the sharded queues `declared`,
    /// their priorities split (the others' scaled to match).
    fn serve(
        &self,
        registered: &[QueueName],
        provided: &[(QueueName, u32)],
        declared: &[ShardedQueue],
    ) -> QueuePriorities {
        let matched = registered.iter().filter_map(|queue| {
            let (_, priority) = self.patterns.iter().find(|(pattern, _)| pattern.matches(queue))?;
            Some((queue.clone(), *priority))
        });
        let (shards, scale) = crate::sharded::shard_priorities(&self.sharded, declared, registered, self.strict);
        let scaled = move |(queue, priority): (QueueName, u32)| (queue, priority.saturating_mul(scale));
        let all = self.fixed.iter().cloned().chain(matched).chain(provided.iter().cloned()).map(scaled).chain(shards);
        QueuePriorities::from_weights(all, self.strict)
    }
}

/// Keeps the served set up to date (see the module docs).
pub(crate) struct QueueWatcher {
    sources: QueueSources,
    directory: Option<Arc<dyn QueueDirectory>>,
    shards: Option<Arc<dyn ShardedQueues>>,
    interval: Duration,
    clock: Arc<dyn Clock>,
    sender: watch::Sender<Arc<Served>>,
    state: tokio::sync::Mutex<WatchState>,
}

/// What the last refresh saw.
#[derive(Default)]
struct WatchState {
    /// The registry's size at the last full read.
    registry_size: Option<usize>,
    /// The registered queues at the last full read.
    registered: Vec<QueueName>,
    /// The provider's queues at its last answer.
    provided: Vec<(QueueName, u32)>,
    /// The sharded queues' declarations at the last read.
    declared: Vec<ShardedQueue>,
    /// Refreshes since the last full read.
    since_full_read: u32,
}

impl QueueWatcher {
    /// A watcher of `sources` (reading the registry through `directory`, which patterns need,
    /// and the declarations through `shards`, which sharded queues need), refreshing every
    /// `interval` and telling a drained generation's grace by `clock`, and the handle the roles
    /// read; the set starts as the configured queues alone.
    pub(crate) fn new(
        sources: QueueSources,
        directory: Option<Arc<dyn QueueDirectory>>,
        shards: Option<Arc<dyn ShardedQueues>>,
        interval: Duration,
        clock: Arc<dyn Clock>,
    ) -> (Self, ServedQueues) {
        let (sender, receiver) = watch::channel(Served::new(sources.serve(&[], &[], &[])));
        let state = tokio::sync::Mutex::new(WatchState::default());
        (Self { sources, directory, shards, interval, clock, sender, state }, ServedQueues(receiver))
    }

    /// Refreshes the set once; returns whether it changed.
    pub(crate) async fn tick(&self) -> asynq_core::Result<bool> {
        let mut state = self.state.lock().await;
        let reads_registry = !self.sources.patterns.is_empty() || !self.sources.sharded.is_empty();
        if let Some(directory) = self.directory.as_ref().filter(|_| reads_registry) {
            let size = directory.registered_queue_count().await?;
            if state.registry_size != Some(size) || state.since_full_read >= FULL_REFRESH_EVERY {
                state.registered = directory.registered_queues().await?;
                state.registry_size = Some(size);
                state.since_full_read = 0;
            } else {
                state.since_full_read += 1;
            }
        }
        if let Some(provider) = &self.sources.provider {
            state.provided = provider.queues().await?;
        }
        if let Some(shards) = self.shards.as_ref().filter(|_| !self.sources.sharded.is_empty()) {
            state.declared = shards.sharded_queues().await?;
            // Strays are looked at when the registry was read whole (it changed, or every
            // FULL_REFRESH_EVERY refreshes): one left holding a task costs no more than that.
            let strays: &[QueueName] = if state.since_full_read == 0 { &state.registered } else { &[] };
            if self.drop_drained(shards.as_ref(), &state.declared, strays).await {
                state.declared = shards.sharded_queues().await?;
            }
        }
        let priorities = self.sources.serve(&state.registered, &state.provided, &state.declared);
        let changed = priorities != self.sender.borrow().priorities;
        if changed {
            tracing::info!(queues = priorities.priorities().len(), "the served queues changed");
            self.sender.send_replace(Served::new(priorities));
        }
        Ok(changed)
    }

    /// Drops what is drained of the served sharded queues among `declared`: a generation whose
    /// grace is over by the clock, and strays of dropped generations among `registered`
    /// ([`ShardedQueue::is_dropped_shard`]), the registry as just read whole; returns whether it
    /// dropped any. A failure is logged: the shards stay served, and the next refresh tries again.
    async fn drop_drained(
        &self,
        shards: &dyn ShardedQueues,
        declared: &[ShardedQueue],
        registered: &[QueueName],
    ) -> bool {
        let now = self.clock.now();
        let mut dropped = false;
        for sharded in declared {
            let served = self.sources.sharded.iter().any(|(logical, _)| logical == sharded.logical());
            let due = sharded.draining().is_some_and(|d| d.grace_over(now))
                || registered.iter().any(|queue| sharded.is_dropped_shard(queue));
            if !served || !due {
                continue;
            }
            match shards.drop_drained_shards(sharded.logical()).await {
                Ok(true) => {
                    tracing::info!(queue = %sharded.logical(), "dropped the drained shards of a resharded queue");
                    dropped = true;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(queue = %sharded.logical(), error = %e, "could not drop drained shards"),
            }
        }
        dropped
    }

    /// Refreshes at once, then every interval, until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            run_every(self.interval, FirstRun::Immediately, &stop, || async {
                if let Err(e) = self.tick().await {
                    tracing::warn!(error = %e, "could not refresh the served queues; serving those found last");
                }
            })
            .await;
        })
    }
}

impl fmt::Debug for QueueWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueWatcher")
            .field("patterns", &self.sources.patterns)
            .field("provider", &self.sources.provider.is_some())
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}
