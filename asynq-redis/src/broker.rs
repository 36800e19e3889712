//! [`RedisBroker`]: every broker role over Redis, storing tasks exactly as Go asynq v0.26 does.

use crate::batch::{BatchCall, run_pipeline};
use crate::connection::{Connection, RedisTarget};
use crate::error::{ConnectError, broker_error, unexpected};
use crate::events::EventCaps;
use crate::keys::{Namespace, QueueKeys};
use crate::proto;
use crate::pubsub::PubSub;
use crate::scripts::{SCRIPTS, ScriptCall};
use crate::tls::TlsOptions;
use crate::{footprint, safety};
use async_trait::async_trait;
use asynq_core::broker::{
    Dequeue, Dequeued, Enqueue, ExpiredLease, Forward, Health, Inspect, Janitor, LeaseStage, Outcome, Page, Recover,
    ServerState,
};
use asynq_core::time::{from_unix_nanos, from_unix_secs, unix_nanos, unix_secs, utc_date};
use asynq_core::{
    ArchiveLimits, BackendInfo, Clock, DailyStats, EnqueueRequest, Error, LEASE_DURATION, Placement, QueueInfo,
    QueueLocation, QueueName, Result, ServerInfo, StoredTask, SystemClock, TaskInfo, TaskState, WorkerInfo,
};
use bytes::Bytes;
use prost::Message;
use redis::{AsyncCommands, FromRedisValue, Script, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

mod capabilities;
mod dequeue;
mod enqueue;
mod forward;
mod health;
mod inspect;
mod janitor;
mod memory_estimates;
mod quiet;
mod recover;
mod server_state;

pub(crate) use enqueue::enqueue_result;
pub(crate) use inspect::read_priority;
pub(crate) use quiet::changed_keys;

/// [`asynq_core::DAILY_STATS_TTL`] in whole seconds, as the scripts take it.
const STATS_TTL_SECS: i64 = asynq_core::DAILY_STATS_TTL.as_secs() as i64;
/// How long a queue's `idle_workers` mark lasts. A server renews it when it dequeues the queue
/// again, after half this long at the latest (see `broker::quiet`); a mark left by a server
/// that went away costs the next producer one publish.
const IDLE_MARK_SECS: u64 = 3600;
/// `enqueue_batch.lua` stores at most this many tasks per call.
const ENQUEUE_BATCH: usize = 500;
/// ...and at most this many grouped ones, which cost several times a pending task (the group's
/// set, its registration and its entries in the group index): 100 new groups a call took 2 to
/// 5 ms of Redis on the 2-core VM of `docs/performance.md`.
const ENQUEUE_BATCH_GROUPED: usize = 100;
/// `settle_batch.lua` settles at most this many tasks per call, so that no call holds Redis long.
const SETTLE_BATCH: usize = 500;

/// Redis's default limit on one value (`proto-max-bulk-len`, 512 MiB). Redis answers a longer
/// one by closing the connection, which every role of a broker shares, so such a value is
/// refused before it is sent.
pub(crate) const MAX_VALUE_LEN: usize = 512 * 1024 * 1024;

/// The most bytes of task messages one `enqueue_batch.lua` or `settle_batch.lua` call carries: a
/// batch of large tasks is split so that no command comes near Redis's limit on one client's
/// unread input (`client-query-buffer-limit`, 1 GiB by default).
const BATCH_BYTES: usize = 64 * 1024 * 1024;

/// Refuses a value of `len` bytes (a `what`) that Redis would not take.
pub(crate) fn check_value_len(what: &'static str, len: usize) -> Result<()> {
    if len > MAX_VALUE_LEN {
        return Err(Error::TooLarge { what, size: len, limit: MAX_VALUE_LEN, limit_by: "Redis's proto-max-bulk-len" });
    }
    Ok(())
}

/// The length of `msg` encoded, once checked against [`MAX_VALUE_LEN`].
pub(crate) fn checked_message_len(msg: &StoredTask) -> Result<usize> {
    let len = proto::TaskMessage::from(msg).encoded_len();
    check_value_len("task message", len)?;
    Ok(len)
}
/// `forward.lua` moves at most this many tasks per call.
const FORWARD_BATCH: i64 = 100;
/// `memory_usage.lua` samples this many tasks of each container, as Go asynq does.
const MEMORY_SAMPLE_TASKS: i64 = 20;
/// `memory_usage.lua` samples the tasks of this many groups, as Go asynq does.
const MEMORY_SAMPLE_GROUPS: i64 = 5;

/// How to build a [`RedisBroker`].
#[derive(Clone)]
pub struct RedisConfig {
    /// Where Redis is.
    pub target: RedisTarget,
    /// The wall clock for every timestamp the broker writes. Default: the system clock.
    pub clock: Arc<dyn Clock>,
    /// How long to wait for a connection or a reply before failing. Default: 5 s.
    pub response_timeout: Duration,
    /// For a `rediss://` server, a `rediss-cluster://` Cluster or a `rediss-sentinel://` set (its
    /// Sentinels and master alike): the authorities to trust and the client's certificate.
    /// Default: the system's roots, no client certificate.
    pub tls: TlsOptions,
    /// The prefix of every key and channel. Default: [`Namespace::DEFAULT`], Go asynq's `asynq`.
    pub namespace: Namespace,
    /// What each queue's archive keeps: every archive script this broker runs trims to these
    /// limits. Default: Go asynq's (10 000 tasks, 90 days), so the scripts get exactly the
    /// arguments Go's do. Go's servers sharing the queues still trim to Go's limits.
    pub archive_limits: ArchiveLimits,
}

impl RedisConfig {
    /// Defaults for `target`.
    pub fn new(target: RedisTarget) -> Self {
        Self {
            target,
            clock: Arc::new(SystemClock),
            response_timeout: Duration::from_secs(5),
            tls: TlsOptions::new(),
            namespace: Namespace::DEFAULT,
            archive_limits: ArchiveLimits::default(),
        }
    }

    /// Defaults for the target at `url` (see [`RedisTarget::from_url`] for the forms), in the
    /// namespace its `namespace` query parameter names, if any:
    /// `redis://127.0.0.1:6379/0?namespace=billing`.
    pub fn from_url(url: &str) -> Result<Self, ConnectError> {
        let (url, namespace) = crate::connection::take_namespace(url)?;
        let config = Self::new(RedisTarget::from_url(&url)?);
        Ok(Self { namespace: namespace.unwrap_or_default(), ..config })
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("target", &self.target)
            .field("clock", &self.clock)
            .field("response_timeout", &self.response_timeout)
            .field("tls", &self.tls)
            .field("namespace", &self.namespace)
            .field("archive_limits", &self.archive_limits)
            .finish()
    }
}

/// A broker that keeps queues in Redis, wire-compatible with Go asynq v0.26: Go producers,
/// servers, the `asynq` CLI and asynqmon can share its queues.
///
/// Clones share one multiplexed, auto-reconnecting connection.
///
/// ```no_run
/// use asynq_redis::RedisBroker;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let broker = RedisBroker::connect("redis://127.0.0.1:6379").await?;
/// # let _ = broker; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisBroker {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Connection,
    namespace: Namespace,
    clock: Arc<dyn Clock>,
    /// What each queue's archive keeps.
    archive_limits: ArchiveLimits,
    /// Queues this process has added to `<ns>:queues` (Go v0.25+ caches the same way), with
    /// when it last did, and whether a registration again is on its way.
    registered: Mutex<HashMap<String, Registration>>,
    /// The pub/sub connection: wake-ups, cancellations, finish notifications.
    pubsub: PubSub,
    /// When the quiet queues (those a fetch skips) were last checked for work.
    quiet_check: quiet::QuietCheck,
    /// Settings of the server that can lose task data silently, found at connect time.
    warnings: Vec<String>,
    /// Settings of the server that make tasks take more memory, found at connect time.
    footprint_notes: Vec<String>,
    /// What `target` points at, as [`BackendInfo::kind`](asynq_core::BackendInfo) names it.
    kind: &'static str,
    /// The event log settings this process last read.
    events: crate::events::EventSettings,
    /// Where each queue's next sweep for workflow tasks settled elsewhere starts.
    sweep_cursors: crate::workflow::SweepCursors,
    /// The queues settles through this broker left to relay (see `workflow/wanted.rs`).
    relay_wanted: crate::workflow::RelayWanted,
    /// Queues' memory estimates, kept a while (see `memory_estimates.rs`).
    memory_estimates: memory_estimates::MemoryEstimates,
    /// The local due notices of the retries this process sets (see `broker/forward.rs`).
    retry_notices: forward::RetryNotices,
}

impl fmt::Debug for RedisBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBroker")
            .field("namespace", &self.inner.namespace)
            .field("clock", &self.inner.clock)
            .finish_non_exhaustive()
    }
}

/// How often at most this process registers a queue again when its tasks find it empty (see
/// [`RedisBroker::registered_again_if_fresh`]).
const REGISTRATION_REFRESH: Duration = Duration::from_secs(1);

/// When this process last added a queue to `<ns>:queues`.
#[derive(Debug, Clone, Copy)]
struct Registration {
    at: tokio::time::Instant,
    /// A registration again is on its way.
    again_soon: bool,
}

impl Registration {
    fn now() -> Self {
        Self { at: tokio::time::Instant::now(), again_soon: false }
    }

    /// One old enough to be made again at once.
    fn long_ago() -> Self {
        let now = tokio::time::Instant::now();
        Self { at: now.checked_sub(REGISTRATION_REFRESH).unwrap_or(now), again_soon: false }
    }
}

/// The oldest Redis the scripts run on: `ZRANGE … BYSCORE` and `LMOVE` need 6.2.
const MIN_REDIS_VERSION: (u32, u32) = (6, 2);

impl RedisBroker {
    /// Connects to the Redis at `url` (see [`RedisConfig::from_url`] for the forms).
    pub async fn connect(url: &str) -> Result<Self, ConnectError> {
        Self::connect_with(RedisConfig::from_url(url)?).await
    }

    /// Connects as `config` says, and checks that the server is recent enough.
    pub async fn connect_with(config: RedisConfig) -> Result<Self, ConnectError> {
        let (mut conn, pubsub) = Connection::open(&config.target, config.response_timeout, &config.tls).await?;
        // A cluster answers with one INFO per master; every one must be recent enough.
        let info: Value = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .map_err(|source| ConnectError::Connect { target: format!("{:?}", config.target), source })?;
        let texts: Vec<String> = match &info {
            Value::Map(nodes) => nodes.iter().filter_map(|(_, v)| String::from_redis_value_ref(v).ok()).collect(),
            other => String::from_redis_value_ref(other).into_iter().collect(),
        };
        for version in texts.iter().filter_map(|t| t.lines().find_map(|l| l.strip_prefix("redis_version:"))) {
            let mut parts = version.trim().split('.').map(|p| p.parse::<u32>().unwrap_or(0));
            let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
            if (major, minor) < MIN_REDIS_VERSION {
                return Err(ConnectError::Unsupported { version: version.trim().to_owned() });
            }
        }
        // Pipelines cannot load a missing script, so load them all now; a Redis that loses them
        // later (a restart, a failover) is handled call by call.
        SCRIPTS
            .load_all(&mut conn)
            .await
            .map_err(|source| ConnectError::Connect { target: format!("{:?}", config.target), source })?;
        let warnings = safety::data_loss_warnings(&mut conn).await;
        for warning in &warnings {
            tracing::warn!(target: "asynq_redis", "{warning}");
        }
        let footprint_notes = footprint::notes(&mut conn).await;
        for note in &footprint_notes {
            tracing::info!(target: "asynq_redis", "{note}");
        }
        let pubsub = PubSub::new(pubsub, config.response_timeout, config.namespace.clone());
        let kind = match config.target {
            RedisTarget::Server { .. } => crate::backend::SERVER,
            RedisTarget::Cluster { .. } => crate::backend::CLUSTER,
            RedisTarget::Sentinel { .. } => crate::backend::SENTINEL,
        };
        let inner = Inner {
            conn,
            namespace: config.namespace,
            clock: config.clock,
            archive_limits: config.archive_limits,
            registered: Mutex::default(),
            pubsub,
            quiet_check: quiet::QuietCheck::default(),
            warnings,
            footprint_notes,
            kind,
            events: crate::events::EventSettings::default(),
            sweep_cursors: Default::default(),
            relay_wanted: Default::default(),
            retry_notices: Default::default(),
            memory_estimates: Default::default(),
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The server settings found at connect time under which tasks can disappear without an
    /// error (a `maxmemory-policy` other than `noeviction`), each as a sentence saying what to
    /// change; they are also logged as warnings. Empty when Redis keeps every task.
    pub fn data_loss_warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The server settings found at connect time under which tasks take more memory than they
    /// need (a `hash-max-listpack-value` below 512 bytes, which stores most task hashes as hash
    /// tables instead of compact listpacks), each as a sentence saying what to change; they are
    /// also logged, at info level. Empty when tasks are stored compactly.
    pub fn footprint_notes(&self) -> &[String] {
        &self.inner.footprint_notes
    }

    /// The namespace every key and channel of this broker is in.
    pub fn namespace(&self) -> &Namespace {
        &self.inner.namespace
    }

    /// The keys of `queue`, in this broker's namespace.
    pub(crate) fn queue_keys(&self, queue: &str) -> QueueKeys {
        self.inner.namespace.queue(queue)
    }

    pub(crate) fn conn(&self) -> Connection {
        self.inner.conn.clone()
    }

    /// The local due notices of the retries this process sets.
    pub(crate) fn inner_retry_notices(&self) -> &forward::RetryNotices {
        &self.inner.retry_notices
    }

    pub(crate) fn event_settings(&self) -> &crate::events::EventSettings {
        &self.inner.events
    }

    pub(crate) fn relay_wanted_queues(&self) -> &crate::workflow::RelayWanted {
        &self.inner.relay_wanted
    }

    pub(crate) fn sweep_cursors(&self) -> &crate::workflow::SweepCursors {
        &self.inner.sweep_cursors
    }

    pub(crate) fn pubsub(&self) -> &PubSub {
        &self.inner.pubsub
    }

    /// The archive scripts' age cutoff and size limit at `now_secs` (Unix seconds): the
    /// arguments Go's scripts take, `now - 90 days` and `10000` by default.
    pub(crate) fn archive_args(&self, now_secs: i64) -> (i64, i64) {
        let limits = self.inner.archive_limits;
        (now_secs.saturating_sub(limits.max_age().as_secs() as i64), limits.max_size() as i64)
    }

    /// The archive limits this broker trims to.
    pub(crate) fn archive_limits_set(&self) -> ArchiveLimits {
        self.inner.archive_limits
    }

    pub(crate) fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    /// `redis`, `redis-cluster` or `redis-sentinel`: what the broker is connected to.
    pub(crate) fn kind(&self) -> &'static str {
        self.inner.kind
    }

    /// Adds `queue` to `<ns>:queues` once per process: without it, Go's inspector and CLI
    /// report the queue as not found.
    pub(crate) async fn register_queue(&self, queue: &str) -> Result<()> {
        if self.registrations().contains_key(queue) {
            return Ok(());
        }
        let _: i64 = self
            .conn()
            .sadd(self.namespace().all_queues(), queue)
            .await
            .map_err(|e| broker_error("register queue", e))?;
        self.registrations().insert(queue.to_owned(), Registration::now());
        Ok(())
    }

    fn registrations(&self) -> std::sync::MutexGuard<'_, HashMap<String, Registration>> {
        self.inner.registered.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// After an enqueue script's `reply`: a task stored into an empty container (reply 2) may
    /// be the first of a queue removed since this process registered it (an operator's `queue
    /// rm` while it was empty), so the queue is registered again, in the background: at once if
    /// the last registration is [`REGISTRATION_REFRESH`] old, else when it will be (one at a
    /// time per queue). A queue that holds tasks is thus always registered within that time,
    /// and a busy queue, never empty, costs nothing.
    pub(crate) fn registered_again_if_fresh(&self, queue: &str, reply: i64) {
        if reply != 2 {
            return;
        }
        let delay = {
            let mut registrations = self.registrations();
            let registration = registrations.entry(queue.to_owned()).or_insert_with(Registration::long_ago);
            if registration.again_soon {
                return;
            }
            registration.again_soon = true;
            REGISTRATION_REFRESH.saturating_sub(registration.at.elapsed())
        };
        // Weak: a broker dropped meanwhile (every clone of it) registers nothing more.
        let (inner, queue) = (Arc::downgrade(&self.inner), queue.to_owned());
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let Some(inner) = inner.upgrade() else { return };
            let broker = RedisBroker { inner };
            // This process removed the queue meanwhile (`forget_queue`): its next task registers it.
            if !broker.registrations().get(&queue).is_some_and(|registration| registration.again_soon) {
                return;
            }
            let registered: redis::RedisResult<i64> = broker.conn().sadd(broker.namespace().all_queues(), &queue).await;
            if let Err(e) = &registered {
                tracing::warn!(queue, error = %e, "could not register a queue again; its next task will");
            }
            let mut registrations = broker.registrations();
            match (registered, registrations.get_mut(&queue)) {
                (Ok(_), Some(registration)) => *registration = Registration::now(),
                // Unknown: the next fresh enqueue tries again.
                (Err(_), Some(_)) => {
                    registrations.remove(&queue);
                }
                (_, None) => {}
            }
        });
    }

    /// Forgets that `queue` was registered, after it was removed from `<ns>:queues`, so the
    /// next task enqueued there registers it again.
    pub(crate) fn forget_queue(&self, queue: &QueueName) {
        self.registrations().remove(queue.as_str());
        self.inner.memory_estimates.forget(queue);
    }

    pub(crate) async fn require_queue(&self, queue: &QueueName) -> Result<()> {
        let known: bool = self
            .conn()
            .sismember(self.namespace().all_queues(), queue.as_str())
            .await
            .map_err(|e| broker_error("check queue", e))?;
        if known { Ok(()) } else { Err(Error::QueueNotFound { queue: queue.clone() }) }
    }
}

pub(crate) fn encode(msg: &StoredTask) -> Vec<u8> {
    proto::TaskMessage::from(msg).encode_to_vec()
}

/// `msg` encoded, once its length is checked against [`MAX_VALUE_LEN`] (before any byte is
/// written): [`checked_message_len`] and [`encode`] in one conversion.
pub(crate) fn encode_checked(msg: &StoredTask) -> Result<Vec<u8>> {
    let message = proto::TaskMessage::from(msg);
    check_value_len("task message", message.encoded_len())?;
    Ok(message.encode_to_vec())
}

pub(crate) fn decode(bytes: &[u8]) -> Result<StoredTask> {
    let msg = proto::TaskMessage::decode(bytes).map_err(|e| unexpected("cannot decode a task message", e))?;
    StoredTask::try_from(msg).map_err(|e| unexpected("cannot read a task message", e))
}
