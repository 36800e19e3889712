//! Snapshots of servers, their workers and queues, as brokers store and report them.

use crate::names::QueueName;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

/// The lifecycle of a worker server, written in its heartbeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerStatus {
    /// Created, not started.
    New,
    /// Processing tasks.
    Active,
    /// No longer fetching new tasks; running ones finish.
    Stopped,
    /// Shut down.
    Closed,
}

impl ServerStatus {
    /// Go asynq's status string.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerStatus::New => "new",
            ServerStatus::Active => "active",
            ServerStatus::Stopped => "stopped",
            ServerStatus::Closed => "closed",
        }
    }
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a server reports about itself in every heartbeat (Go's `ServerInfo` message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// Host name.
    pub host: String,
    /// Process ID.
    pub pid: u32,
    /// Server ID (a UUID).
    pub server_id: String,
    /// Maximum number of tasks processed at once.
    pub concurrency: u32,
    /// Queues served and their priorities. A running server lists those it serves now: the
    /// queues its patterns and provider found, a sharded queue's shards (and its plain queue),
    /// each with the weight it is drawn with (the others' priorities scaled to split a sharded
    /// queue's priority over its shards).
    pub queues: BTreeMap<String, u32>,
    /// Strict priority instead of weighted.
    pub strict_priority: bool,
    /// Current status.
    pub status: ServerStatus,
    /// When the server started.
    pub started: SystemTime,
    /// Tasks running at the time of the heartbeat.
    pub active_workers: u32,
}

/// One task a server is running (Go's `WorkerInfo` message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerInfo {
    /// Host name of the server.
    pub host: String,
    /// Process ID of the server.
    pub pid: u32,
    /// The server's ID.
    pub server_id: String,
    /// The task's ID.
    pub task_id: String,
    /// The task's type.
    pub task_type: String,
    /// The task's payload.
    pub task_payload: Bytes,
    /// The task's queue.
    pub queue: String,
    /// When the handler started.
    pub started: SystemTime,
    /// When the handler must finish.
    pub deadline: SystemTime,
}

/// Sizes and statistics of one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueInfo {
    /// The queue name.
    pub queue: QueueName,
    /// Time since the oldest pending task became pending (zero when none is pending).
    pub latency: Duration,
    /// Total number of tasks in the queue, in every state.
    pub size: usize,
    /// Number of groups with aggregating tasks.
    pub groups: usize,
    /// Pending tasks.
    pub pending: usize,
    /// Active tasks.
    pub active: usize,
    /// Scheduled tasks.
    pub scheduled: usize,
    /// Tasks waiting to be retried.
    pub retry: usize,
    /// Archived tasks.
    pub archived: usize,
    /// Completed tasks kept for retention.
    pub completed: usize,
    /// Tasks waiting in groups.
    pub aggregating: usize,
    /// Workflow tasks waiting for the tasks they depend on ([`TaskState::Waiting`](crate::TaskState::Waiting)):
    /// ours, left out of [`QueueInfo::size`], which counts Go's states as Go does.
    pub waiting: usize,
    /// Tasks processed today (UTC), successfully or not.
    pub processed: u64,
    /// Tasks that failed today (UTC).
    pub failed: u64,
    /// Tasks processed ever.
    pub processed_total: u64,
    /// Tasks that failed ever.
    pub failed_total: u64,
    /// True while the queue is paused.
    pub paused: bool,
    /// Approximate memory the queue's tasks and containers take in the backend, in bytes
    /// (sampled on Redis as Go asynq does). A backend may reuse an estimate for a while: on
    /// Redis one broker value takes a queue's estimate again after a minute, and past 100 a
    /// second keeps older ones, so that reading every queue's info often costs Redis a bounded
    /// share.
    pub memory_usage: u64,
    /// When the snapshot was taken.
    pub timestamp: SystemTime,
    /// For a sharded queue ([`crate::shard`]), its shards, whose sums the other fields hold;
    /// empty for an ordinary queue.
    pub shards: Vec<QueueName>,
    /// For a sharded queue being resharded, the shards of its previous generation, still
    /// served until they drain, and any strays (queues named as its shards but not declared,
    /// served too), whose counts the sums include; empty otherwise.
    pub draining_shards: Vec<QueueName>,
}

impl QueueInfo {
    /// The number of tasks in every state together: what [`QueueInfo::size`] holds.
    pub fn sum_of_states(&self) -> usize {
        self.pending + self.active + self.scheduled + self.retry + self.archived + self.completed + self.aggregating
    }

    /// An empty queue named `queue` at `timestamp`.
    pub fn empty(queue: &QueueName, timestamp: SystemTime) -> Self {
        Self {
            queue: queue.clone(),
            latency: Duration::ZERO,
            size: 0,
            groups: 0,
            pending: 0,
            active: 0,
            scheduled: 0,
            retry: 0,
            archived: 0,
            completed: 0,
            aggregating: 0,
            waiting: 0,
            processed: 0,
            failed: 0,
            processed_total: 0,
            failed_total: 0,
            paused: false,
            memory_usage: 0,
            timestamp,
            shards: Vec::new(),
            draining_shards: Vec::new(),
        }
    }
}

/// Processed and failed counts of one queue on one day (UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DailyStats {
    /// The queue name.
    pub queue: QueueName,
    /// The day, `YYYY-MM-DD` in UTC.
    pub date: String,
    /// Tasks processed that day, successfully or not.
    pub processed: u64,
    /// Tasks that failed that day.
    pub failed: u64,
}

impl DailyStats {
    /// Refuses a history of no days, as Go asynq does.
    pub fn validate_days(days: usize) -> crate::Result<()> {
        if days == 0 {
            return Err(crate::Error::invalid("days", "the number of days must be positive"));
        }
        Ok(())
    }
}

/// One node of the backend (a Redis server; on a Cluster, one of its nodes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// The node's ID (the Cluster node ID; empty for a single server).
    pub id: String,
    /// The node's address, `host:port`.
    pub addr: String,
}

/// What the backend says about itself, for operators' tools.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackendInfo {
    /// `memory`, `redis`, `redis-cluster` or `redis-sentinel`.
    pub kind: String,
    /// Facts by name, as the backend reports them (Redis `INFO`, or `CLUSTER INFO` on a
    /// Cluster): `redis_version`, `used_memory_human`, `connected_clients`, ...
    pub fields: BTreeMap<String, String>,
    /// The nodes serving the data (one for a single server; the masters of a Cluster).
    pub nodes: Vec<NodeInfo>,
    /// The eviction policies in force under which the backend drops data when it is full, so
    /// tasks can disappear without an error: one per distinct policy, sorted. Empty when the
    /// backend keeps every task (always, for a backend that never evicts).
    pub eviction_risks: Vec<EvictionRisk>,
    /// The prefix that sets this broker's queues apart from others' in the same backend (the
    /// Redis broker's key namespace, `asynq` by default), or `None` for a backend of one.
    pub namespace: Option<String>,
}

impl BackendInfo {
    /// Backend information of `kind` with the given facts and nodes, no eviction risk and no
    /// namespace.
    pub fn new(kind: impl Into<String>, fields: BTreeMap<String, String>, nodes: Vec<NodeInfo>) -> Self {
        Self { kind: kind.into(), fields, nodes, eviction_risks: Vec::new(), namespace: None }
    }

    /// This information with [`BackendInfo::namespace`] set to `namespace`.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// This information with [`BackendInfo::eviction_risks`] set to `risks`.
    pub fn with_eviction_risks(mut self, risks: Vec<EvictionRisk>) -> Self {
        self.eviction_risks = risks;
        self
    }
}

/// An eviction policy under which the backend drops data when it is full, tasks included,
/// without an error. The backend decides which policies are risky; this only carries its word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionRisk {
    /// The policy as the backend names it (Redis `maxmemory-policy`), e.g. `allkeys-lru`.
    pub policy: String,
    /// What can happen and what to change, in one sentence, for operators.
    pub warning: String,
}

/// Where a sharded backend keeps a queue: the shard holding all of its data and the nodes
/// serving that shard. How shards are numbered is the backend's own (the Redis broker reports
/// the Cluster hash slot every key of the queue shares).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueLocation {
    /// The shard holding the queue's data.
    pub slot: u16,
    /// The nodes serving that shard, the master first.
    pub nodes: Vec<NodeInfo>,
}
