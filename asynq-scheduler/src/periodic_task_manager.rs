//! A periodic task manager keeps a [`Scheduler`]'s entries in step with a configuration source:
//! at start and then every sync interval (3 min by default) it asks a
//! [`PeriodicTaskConfigProvider`] for the periodic tasks there should be, unregisters the entries
//! whose config disappeared and registers the new ones, as Go asynq's `PeriodicTaskManager` does.
//!
//! A config is identified by its spec, task (type, payload, headers, options), options and the
//! scheduler's time zone, so an unchanged config keeps its entry (and its entry ID) across syncs,
//! and a changed one is replaced. A sync applies all or nothing: when the provider fails or any
//! config is invalid, nothing changes.

use crate::scheduler::{Scheduler, SchedulerError, Shared, fingerprint};
use async_trait::async_trait;
use asynq_core::{Task, TaskOptions};
use asynq_runtime::Role;
use asynq_runtime::{FirstRun, run_every};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The error a [`PeriodicTaskConfigProvider`] reports.
pub type ProviderError = Box<dyn std::error::Error + Send + Sync>;

/// One periodic task a [`PeriodicTaskConfigProvider`] asks for (Go's `PeriodicTaskConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodicTaskConfig {
    /// The cron spec, as [`Scheduler::register`] takes it.
    pub spec: String,
    /// The task to enqueue.
    pub task: Task,
    /// The options to enqueue it with.
    pub options: TaskOptions,
}

impl PeriodicTaskConfig {
    /// A config for `task` on `spec`, with `options`.
    pub fn new(spec: impl Into<String>, task: Task, options: TaskOptions) -> Self {
        Self { spec: spec.into(), task, options }
    }
}

/// Says which periodic tasks there should be: a file, a database table, a service.
#[async_trait]
pub trait PeriodicTaskConfigProvider: Send + Sync {
    /// Every periodic task there should be now.
    async fn get_configs(&self) -> Result<Vec<PeriodicTaskConfig>, ProviderError>;
}

/// A [`PeriodicTaskManager`]'s settings.
#[derive(Debug, Clone)]
pub struct PeriodicTaskManagerConfig {
    /// How often the configs are fetched again. Default: 3 min.
    pub sync_interval: Duration,
}

impl Default for PeriodicTaskManagerConfig {
    fn default() -> Self {
        Self { sync_interval: Duration::from_secs(3 * 60) }
    }
}

/// What one sync changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncReport {
    /// Entries registered for new configs.
    pub added: usize,
    /// Entries unregistered because their config disappeared.
    pub removed: usize,
}

/// Keeps a [`Scheduler`]'s entries in step with a [`PeriodicTaskConfigProvider`].
///
/// ```no_run
/// use asynq_core::{Task, TaskOptions};
/// use asynq_memory::MemoryBroker;
/// use asynq_scheduler::{
///     PeriodicTaskConfig, PeriodicTaskConfigProvider, PeriodicTaskManager, PeriodicTaskManagerConfig,
///     ProviderError, Scheduler, SchedulerConfig,
/// };
///
/// struct Fixed;
///
/// #[async_trait::async_trait]
/// impl PeriodicTaskConfigProvider for Fixed {
///     async fn get_configs(&self) -> Result<Vec<PeriodicTaskConfig>, ProviderError> {
///         Ok(vec![PeriodicTaskConfig::new("@hourly", Task::new("cleanup", ""), TaskOptions::new())])
///     }
/// }
///
/// # #[tokio::main] async fn main() -> Result<(), asynq_scheduler::SchedulerError> {
/// let scheduler = Scheduler::new(MemoryBroker::new(), SchedulerConfig::default())?;
/// let manager = PeriodicTaskManager::new(scheduler, Fixed, PeriodicTaskManagerConfig::default())?;
/// manager.run().await // until SIGTERM or Ctrl-C
/// # }
/// ```
pub struct PeriodicTaskManager {
    scheduler: Scheduler,
    sync: ConfigSync,
    config: PeriodicTaskManagerConfig,
    syncing: Option<Role>,
}

impl PeriodicTaskManager {
    /// A manager of `scheduler`'s entries, not yet started.
    ///
    /// Errors: [`SchedulerError::InvalidConfig`] for a zero sync interval.
    pub fn new(
        scheduler: Scheduler,
        provider: impl PeriodicTaskConfigProvider + 'static,
        config: PeriodicTaskManagerConfig,
    ) -> Result<Self, SchedulerError> {
        if config.sync_interval.is_zero() {
            return Err(SchedulerError::InvalidConfig {
                field: "sync interval",
                reason: "must be positive".to_owned(),
            });
        }
        let sync = ConfigSync {
            scheduler: Arc::clone(scheduler.shared()),
            provider: Arc::new(provider),
            synced: Arc::default(),
        };
        Ok(Self { scheduler, sync, config, syncing: None })
    }

    /// The scheduler it manages.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// Fetches the configs once and applies the difference (the sync loop's step).
    ///
    /// Errors: [`SchedulerError::ConfigProvider`] when the provider fails, and
    /// [`SchedulerError::InvalidSpec`] or [`SchedulerError::InvalidTask`] for the first invalid
    /// config; either way nothing changes.
    pub async fn sync(&self) -> Result<SyncReport, SchedulerError> {
        self.sync.sync().await
    }

    /// Syncs once, starts the scheduler, then syncs every interval in the background.
    ///
    /// Errors: those of [`PeriodicTaskManager::sync`] (the scheduler is then not started) and of
    /// [`Scheduler::start`].
    pub async fn start(&mut self) -> Result<(), SchedulerError> {
        self.sync.sync().await?;
        self.scheduler.start()?;
        let sync = self.sync.clone();
        let interval = self.config.sync_interval;
        self.syncing = Some(Role::spawn(|stop| {
            tokio::spawn(async move {
                run_every(interval, FirstRun::AfterInterval, &stop, || async {
                    if let Err(e) = sync.sync().await {
                        tracing::error!(error = %e, "could not sync the periodic tasks; keeping the current entries");
                    }
                })
                .await;
            })
        }));
        Ok(())
    }

    /// Stops syncing, then shuts the scheduler down.
    pub async fn shutdown(&mut self) {
        if let Some(syncing) = self.syncing.take() {
            syncing.stop().await;
        }
        self.scheduler.shutdown().await;
    }

    /// Starts the manager and runs it until SIGTERM or Ctrl-C (SIGINT), then shuts it down.
    pub async fn run(mut self) -> Result<(), SchedulerError> {
        self.start().await?;
        asynq_runtime::wait_for_shutdown(|| {}).await;
        self.shutdown().await;
        Ok(())
    }
}

impl fmt::Debug for PeriodicTaskManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeriodicTaskManager")
            .field("scheduler", &self.scheduler)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The sync step, shared by the manager and its loop.
#[derive(Clone)]
struct ConfigSync {
    scheduler: Arc<Shared>,
    provider: Arc<dyn PeriodicTaskConfigProvider>,
    /// The entry ID registered for each config fingerprint.
    synced: Arc<Mutex<HashMap<[u8; 32], String>>>,
}

impl ConfigSync {
    async fn sync(&self) -> Result<SyncReport, SchedulerError> {
        let configs = self.provider.get_configs().await.map_err(SchedulerError::ConfigProvider)?;
        let zone = self.scheduler.zone();
        let mut wanted = HashMap::with_capacity(configs.len());
        for config in configs {
            let identity = fingerprint(&config.spec, &config.task, &config.options, zone);
            wanted.insert(identity, config);
        }
        let mut synced = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
        // Everything is validated before anything changes.
        let mut added = Vec::new();
        for (identity, config) in wanted.iter().filter(|(identity, _)| !synced.contains_key(*identity)) {
            let entry = self.scheduler.prepare(&config.spec, config.task.clone(), config.options.clone())?;
            added.push((*identity, entry));
        }
        let gone: Vec<[u8; 32]> = synced.keys().filter(|identity| !wanted.contains_key(*identity)).copied().collect();
        let report = SyncReport { added: added.len(), removed: gone.len() };
        for identity in gone {
            // An entry someone unregistered by hand is gone already: nothing to do.
            if let Some(entry_id) = synced.remove(&identity)
                && self.scheduler.remove(&entry_id).is_ok()
            {
                tracing::info!(entry_id = %entry_id, "unregistered a periodic task");
            }
        }
        for (identity, entry) in added {
            let entry_id = self.scheduler.add(entry);
            tracing::info!(entry_id = %entry_id, "registered a periodic task");
            synced.insert(identity, entry_id);
        }
        Ok(report)
    }
}
