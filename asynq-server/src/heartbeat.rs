//! A heartbeater tells the broker this server is alive, the queues it serves now (shards and
//! queues its patterns or provider found included, each with the weight it is drawn with, written
//! again as soon as that set changes), and
//! what it runs (its running handlers only, never more than its concurrency), and extends the leases of every task it holds, and
//! the shared concurrency slots they hold with them. A task whose lease could not be extended
//! in time is told to stop.

use crate::control::{Control, StatusCell};
use crate::served::ServedQueues;
use crate::shared_limits::SharedLimits;
use crate::workers::ActiveTasks;
use asynq_core::broker::{Dequeue, ServerState};
use asynq_core::{QueueName, ServerControl, ServerInfo, TaskId};
use asynq_runtime::{FirstRun, run_every};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The heartbeater's settings.
#[derive(Debug, Clone)]
pub(crate) struct HeartbeatConfig {
    /// How often to beat. Server records live for twice this long.
    pub interval: Duration,
    /// The queues served now, which the heartbeat lists in place of the configured ones.
    pub queues: ServedQueues,
}

/// Writes the server's state and extends its leases.
#[derive(Clone)]
pub(crate) struct Heartbeater {
    state: Arc<dyn ServerState>,
    leases: Arc<dyn Dequeue>,
    server: ServerInfo,
    status: StatusCell,
    active: Arc<ActiveTasks>,
    /// The shared concurrency slots the running tasks hold, renewed with their leases.
    shared_limits: Option<Arc<SharedLimits>>,
    /// Where operators' requests to this server are read, when the broker carries them, and
    /// what acts on them.
    requests: Option<(Arc<dyn ServerControl>, Arc<Control>)>,
    config: HeartbeatConfig,
}

impl Heartbeater {
    pub(crate) fn new(
        state: Arc<dyn ServerState>,
        leases: Arc<dyn Dequeue>,
        server: ServerInfo,
        status: StatusCell,
        active: Arc<ActiveTasks>,
        shared_limits: Option<Arc<SharedLimits>>,
        config: HeartbeatConfig,
    ) -> Self {
        Self { state, leases, server, status, active, shared_limits, requests: None, config }
    }

    /// Reads operators' requests to this server from `requests` on each beat, and acts on them
    /// through `control`.
    pub(crate) fn hearing_requests(mut self, requests: Arc<dyn ServerControl>, control: Arc<Control>) -> Self {
        self.requests = Some((requests, control));
        self
    }

    /// Reads the request an operator made of this server, if any, and acts on it before the
    /// state is written, so the status written says what the server does now.
    async fn take_request(&self) {
        let Some((requests, control)) = &self.requests else { return };
        match requests.take_server_request(&self.server.server_id).await {
            Ok(Some(request)) => control.apply(request),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not read the requests made of this server"),
        }
    }

    /// The server's record as of now: its status, running tasks, and the queues it serves now
    /// (what its configured names, patterns, provider and sharded queues resolve to), so that
    /// operators' tools and Go's CLI count a shard or a matched queue as served.
    fn server_info(&self) -> ServerInfo {
        let queues =
            self.config.queues.now().priorities.priorities().iter().map(|(q, p)| (q.to_string(), *p)).collect();
        ServerInfo {
            status: self.status.get(),
            active_workers: self.active.len() as u32,
            queues,
            ..self.server.clone()
        }
    }

    /// Beats once: acts on an operator's request, writes the server and worker records, extends
    /// the leases still valid, and signals the running tasks whose lease has expired.
    pub(crate) async fn tick(&self) -> asynq_core::Result<()> {
        self.take_request().await;
        let server = self.server_info();
        let workers = self.active.worker_infos(&server.host, server.pid, &server.server_id);
        let state_written = self.state.write_server_state(&server, &workers, self.config.interval * 2).await;

        // Every task held had its start recorded before it was held.
        let mut by_queue: BTreeMap<QueueName, Vec<_>> = BTreeMap::new();
        for task in self.active.snapshot() {
            if task.lease.is_valid() {
                by_queue.entry(task.message.queue.clone()).or_default().push(task);
            } else {
                task.lease.notify_expired();
            }
        }
        for (queue, tasks) in by_queue {
            let ids: Vec<TaskId> = tasks.iter().map(|t| t.message.id.clone()).collect();
            match self.leases.extend_leases(&queue, &ids).await {
                Ok(expiry) => {
                    tasks.iter().for_each(|t| {
                        if !t.lease.extend(expiry) {
                            t.lease.notify_expired();
                        }
                    });
                    if let Some(shared_limits) = &self.shared_limits {
                        shared_limits.extend(&ids, expiry).await;
                    }
                }
                Err(e) => tracing::warn!(queue = %queue, error = %e, "could not extend leases"),
            }
        }
        state_written
    }

    /// Writes the server's record again each time the served set changes, until `stop` is
    /// cancelled: the queues a dynamic server finds on its first refresh (a sharded queue's
    /// shards, a pattern's matches) are listed then, not a whole interval later.
    async fn announce_changes(&self, stop: &CancellationToken) {
        let mut served = self.config.queues.clone();
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = served.changed() => {}
            }
            let server = self.server_info();
            let workers = self.active.worker_infos(&server.host, server.pid, &server.server_id);
            if let Err(e) = self.state.write_server_state(&server, &workers, self.config.interval * 2).await {
                tracing::warn!(error = %e, "could not write the server state after its queues changed");
            }
        }
    }

    /// Beats at once and then every interval until `stop` is cancelled, then removes the
    /// server's records.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let beats = run_every(self.config.interval, FirstRun::Immediately, &stop, || async {
                if let Err(e) = self.tick().await {
                    tracing::error!(error = %e, "could not write server state");
                }
            });
            tokio::join!(beats, self.announce_changes(&stop));
            if let Err(e) = self.state.clear_server_state(&self.server_info()).await {
                tracing::error!(error = %e, "could not clear server state");
            }
        })
    }
}

impl fmt::Debug for Heartbeater {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Heartbeater")
            .field("server", &self.server)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
