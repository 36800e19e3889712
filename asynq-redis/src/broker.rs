//! [`RedisBroker`]: every broker role over Redis, storing tasks exactly as Go asynq v0.26 does.

use crate::batch::{BatchCall, run_pipeline};
use crate::connection::{Connection, RedisTarget};
use crate::error::{ConnectError, broker_error, unexpected};
use crate::keys::{self, QueueKeys};
use crate::proto;
use crate::pubsub::PubSub;
use crate::safety;
use crate::scripts::{SCRIPTS, ScriptCall};
use crate::tls::TlsOptions;
use async_trait::async_trait;
use asynq_core::broker::{
    Aggregate, Cancel, Capabilities, Dequeue, Dequeued, Enqueue, Forward, Health, Inspect, Janitor, Outcome, Page,
    RateLimiter, Recover, SchedulerState, ServerState,
};
use asynq_core::time::{from_unix_nanos, from_unix_secs, unix_nanos, unix_secs, utc_date};
use asynq_core::{
    BackendInfo, Clock, DailyStats, EnqueueRequest, Error, LEASE_DURATION, Placement, QueueInfo, QueueLocation, Result,
    ServerInfo, SystemClock, TaskInfo, TaskMessage, TaskState, WorkerInfo, validate_queue_name,
};
use bytes::Bytes;
use prost::Message;
use redis::{AsyncCommands, FromRedisValue, Script, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How long daily statistics counters live: 90 days, in seconds.
const STATS_TTL_SECS: i64 = 90 * 24 * 60 * 60;
/// Archived tasks older than this (in seconds) are deleted when another task is archived.
pub(crate) const ARCHIVE_MAX_AGE_SECS: i64 = 90 * 24 * 60 * 60;
/// The archive keeps at most this many tasks minus one, as Go's does.
pub(crate) const ARCHIVE_MAX_SIZE: i64 = 10_000;
/// How long an idle server's mark on a queue lasts; it renews the mark each time it waits.
const IDLE_MARK_SECS: u64 = 60;
/// `enqueue_batch.lua` stores at most this many tasks per call.
const ENQUEUE_BATCH: usize = 500;
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
}

impl RedisConfig {
    /// Defaults for `target`.
    pub fn new(target: RedisTarget) -> Self {
        Self { target, clock: Arc::new(SystemClock), response_timeout: Duration::from_secs(5), tls: TlsOptions::new() }
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("target", &self.target)
            .field("clock", &self.clock)
            .field("response_timeout", &self.response_timeout)
            .field("tls", &self.tls)
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
    clock: Arc<dyn Clock>,
    /// Queues this process has added to `asynq:queues` (Go v0.25+ caches the same way).
    registered: Mutex<HashSet<String>>,
    /// The pub/sub connection: wake-ups, cancellations, finish notifications.
    pubsub: PubSub,
    /// The queues this broker marked `idle_workers`, with the wake-up generation and the time
    /// of the mark, so an idle server does not re-mark every poll.
    idle_marks: Mutex<HashMap<String, (u64, tokio::time::Instant)>>,
    /// Settings of the server that can lose task data silently, found at connect time.
    warnings: Vec<String>,
    /// What `target` points at, as [`BackendInfo::kind`](asynq_core::BackendInfo) names it.
    kind: &'static str,
}

impl fmt::Debug for RedisBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBroker").field("clock", &self.inner.clock).finish_non_exhaustive()
    }
}

/// The oldest Redis the scripts run on: `ZRANGE … BYSCORE` and `LMOVE` need 6.2.
const MIN_REDIS_VERSION: (u32, u32) = (6, 2);

impl RedisBroker {
    /// Connects to the Redis at `url` (see [`RedisTarget::from_url`] for the forms).
    pub async fn connect(url: &str) -> Result<Self, ConnectError> {
        Self::connect_with(RedisConfig::new(RedisTarget::from_url(url)?)).await
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
        let pubsub = PubSub::new(pubsub, config.response_timeout);
        let kind = match config.target {
            RedisTarget::Server { .. } => crate::backend::SERVER,
            RedisTarget::Cluster { .. } => crate::backend::CLUSTER,
            RedisTarget::Sentinel { .. } => crate::backend::SENTINEL,
        };
        let inner = Inner {
            conn,
            clock: config.clock,
            registered: Mutex::default(),
            pubsub,
            idle_marks: Mutex::default(),
            warnings,
            kind,
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The server settings found at connect time under which tasks can disappear without an
    /// error (a `maxmemory-policy` other than `noeviction`), each as a sentence saying what to
    /// change; they are also logged as warnings. Empty when Redis keeps every task.
    pub fn data_loss_warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    pub(crate) fn conn(&self) -> Connection {
        self.inner.conn.clone()
    }

    pub(crate) fn pubsub(&self) -> &PubSub {
        &self.inner.pubsub
    }

    pub(crate) fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    /// `redis`, `redis-cluster` or `redis-sentinel`: what the broker is connected to.
    pub(crate) fn kind(&self) -> &'static str {
        self.inner.kind
    }

    /// Adds `queue` to `asynq:queues` once per process: without it, Go's inspector and CLI
    /// report the queue as not found.
    pub(crate) async fn register_queue(&self, queue: &str) -> Result<()> {
        if self.inner.registered.lock().expect("registered lock poisoned").contains(queue) {
            return Ok(());
        }
        let _: i64 = self.conn().sadd(keys::ALL_QUEUES, queue).await.map_err(|e| broker_error("register queue", e))?;
        self.inner.registered.lock().expect("registered lock poisoned").insert(queue.to_owned());
        Ok(())
    }

    /// Forgets that `queue` was registered, after it was removed from `asynq:queues`, so the
    /// next task enqueued there registers it again.
    pub(crate) fn forget_queue(&self, queue: &str) {
        self.inner.registered.lock().expect("registered lock poisoned").remove(queue);
    }

    pub(crate) async fn require_queue(&self, queue: &str) -> Result<()> {
        let known: bool =
            self.conn().sismember(keys::ALL_QUEUES, queue).await.map_err(|e| broker_error("check queue", e))?;
        if known { Ok(()) } else { Err(Error::QueueNotFound { queue: queue.to_owned() }) }
    }
}

fn encode(msg: &TaskMessage) -> Vec<u8> {
    proto::TaskMessage::from(msg).encode_to_vec()
}

pub(crate) fn decode(bytes: &[u8]) -> Result<TaskMessage> {
    proto::TaskMessage::decode(bytes).map(Into::into).map_err(|e| unexpected("cannot decode a task message", e))
}

impl RedisBroker {
    /// The script call that records `outcome` for the active task `msg`, and its name.
    fn finish_call(&self, msg: &TaskMessage, outcome: Outcome, now: SystemTime) -> (ScriptCall, &'static str) {
        let now_secs = unix_secs(now);
        let k = QueueKeys::new(&msg.queue);
        let date = utc_date(now);
        let stats_expiry = now_secs + STATS_TTL_SECS;
        let id = msg.id.as_str();
        let unique = (!msg.unique_key.is_empty()).then_some(msg.unique_key.as_str());
        match outcome {
            Outcome::Done => {
                let mut call = ScriptCall::new(&SCRIPTS.done);
                call.key(k.active()).key(k.lease()).key(k.task(id)).key(k.processed_on(&date)).key(k.processed_total());
                call.key(unique).arg(id).arg(stats_expiry).arg(k.finished_channel());
                (call, "done")
            }
            Outcome::Complete => {
                let mut call = ScriptCall::new(&SCRIPTS.complete);
                call.key(k.active()).key(k.lease()).key(k.completed()).key(k.task(id));
                call.key(k.processed_on(&date)).key(k.processed_total()).key(unique);
                call.arg(id).arg(stats_expiry).arg(now_secs + msg.retention).arg(encode(&msg.completed(now)));
                call.arg(k.finished_channel());
                (call, "complete")
            }
            Outcome::Retry { retry_at, error, is_failure } => {
                let mut call = ScriptCall::new(&SCRIPTS.retry);
                call.key(k.task(id)).key(k.active()).key(k.lease()).key(k.retry());
                call.key(k.processed_on(&date)).key(k.failed_on(&date)).key(k.processed_total()).key(k.failed_total());
                call.arg(id).arg(encode(&msg.failed(&error, now, is_failure))).arg(unix_secs(retry_at));
                call.arg(stats_expiry).arg(if is_failure { "1" } else { "0" });
                (call, "retry")
            }
            Outcome::Archive { error } => {
                let mut call = ScriptCall::new(&SCRIPTS.archive);
                call.key(k.task(id)).key(k.active()).key(k.lease()).key(k.archived());
                call.key(k.processed_on(&date)).key(k.failed_on(&date)).key(k.processed_total()).key(k.failed_total());
                call.arg(id).arg(encode(&msg.archived(&error, now))).arg(now_secs);
                call.arg(now_secs - ARCHIVE_MAX_AGE_SECS).arg(ARCHIVE_MAX_SIZE).arg(stats_expiry).arg(k.task_prefix());
                call.arg(k.finished_channel());
                (call, "archive")
            }
            Outcome::Requeue => {
                let mut call = ScriptCall::new(&SCRIPTS.requeue);
                call.key(k.active()).key(k.lease()).key(k.pending()).key(k.task(id)).key(k.idle_workers());
                call.arg(id).arg(k.ready_channel());
                (call, "requeue")
            }
        }
    }

    /// One `done_batch.lua` call for the successful tasks `done`, all of queue `queue`.
    fn done_batch_call(&self, queue: &str, done: &[(usize, TaskMessage, Outcome)], now: SystemTime) -> ScriptCall {
        let k = QueueKeys::new(queue);
        let mut call = ScriptCall::new(&SCRIPTS.done_batch);
        call.key(k.active())
            .key(k.lease())
            .key(k.processed_on(&utc_date(now)))
            .key(k.processed_total())
            .key(k.waiting());
        call.arg(unix_secs(now) + STATS_TTL_SECS).arg(k.task_prefix()).arg(k.finished_channel());
        for (_, msg, _) in done {
            call.arg(&msg.id).arg(&msg.unique_key);
        }
        call
    }
}

/// The items without their outcomes.
fn strip(items: Vec<(usize, TaskMessage, Outcome)>) -> Vec<(usize, TaskMessage)> {
    items.into_iter().map(|(index, msg, _)| (index, msg)).collect()
}

fn not_found(msg: &TaskMessage) -> Error {
    Error::TaskNotFound { queue: msg.queue.clone(), id: msg.id.clone() }
}

impl RedisBroker {
    /// The `enqueue.lua` call that stores `request`, with the message it stores (its
    /// `unique_key` filled in for unique tasks).
    fn enqueue_call(&self, request: EnqueueRequest) -> Result<(ScriptCall, TaskMessage)> {
        self.enqueue_call_with(&SCRIPTS.enqueue, request)
    }

    /// As [`RedisBroker::enqueue_call`], calling `script`, which takes `enqueue.lua`'s KEYS and
    /// ARGV first (callers may append their own).
    pub(crate) fn enqueue_call_with(
        &self,
        script: &'static Script,
        request: EnqueueRequest,
    ) -> Result<(ScriptCall, TaskMessage)> {
        let mut msg = request.message;
        validate_queue_name(&msg.queue)?;
        let k = QueueKeys::new(&msg.queue);
        let unique_key = request.unique_ttl.map(|_| k.unique(&msg.type_name, &msg.payload));
        if let Some(key) = &unique_key {
            msg.unique_key = key.clone();
        }
        let now = self.now();
        let (placement, destination, score, group) = match &request.placement {
            Placement::Pending => ("pending", k.pending(), unix_nanos(now), String::new()),
            Placement::Scheduled { process_at } => ("scheduled", k.scheduled(), unix_secs(*process_at), String::new()),
            Placement::Grouped { group } => ("group", k.group(group), unix_secs(now), group.clone()),
        };
        let mut call = ScriptCall::new(script);
        call.key(k.task(&msg.id)).key(destination).key(k.groups()).key(k.idle_workers());
        call.arg(encode(&msg)).arg(&msg.id).arg(placement).arg(score).arg(group).arg(k.ready_channel());
        if let (Some(key), Some(ttl)) = (unique_key, request.unique_ttl) {
            call.key(key).arg(ttl.as_secs().max(1));
        }
        Ok((call, msg))
    }
}

/// What `enqueue.lua` answered for `msg`.
pub(crate) fn enqueue_result(msg: TaskMessage, reply: i64) -> Result<()> {
    match reply {
        1 => Ok(()),
        0 => Err(Error::TaskIdConflict { queue: msg.queue, id: msg.id }),
        -1 => Err(Error::DuplicateTask { queue: msg.queue, type_name: msg.type_name }),
        other => Err(unexpected("enqueue", format!("unexpected reply {other}"))),
    }
}

#[async_trait]
impl Enqueue for RedisBroker {
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()> {
        let (call, msg) = self.enqueue_call(request)?;
        self.register_queue(&msg.queue).await?;
        let reply = call.run(&mut self.conn(), "enqueue").await?;
        enqueue_result(msg, reply)
    }

    /// One pipeline per queue (a queue's keys share a Cluster slot), so a batch for one queue
    /// is one round trip.
    async fn enqueue_batch(&self, requests: Vec<EnqueueRequest>) -> Vec<Result<()>> {
        let now = self.now();
        let mut results: Vec<Option<Result<()>>> = Vec::with_capacity(requests.len());
        // Per queue, the calls in request order: runs of plain pending tasks go in one
        // `enqueue_batch.lua` call each (up to `ENQUEUE_BATCH` tasks), every other task in an
        // `enqueue.lua` call of its own. Keeping the order keeps a batch's outcome that of the
        // same enqueues one by one (which of two tasks with one ID wins, the pending order).
        let mut by_queue: BTreeMap<String, QueueCalls> = BTreeMap::new();
        for (index, request) in requests.into_iter().enumerate() {
            results.push(None);
            if request.placement == Placement::Pending && request.unique_ttl.is_none() {
                if let Err(e) = validate_queue_name(&request.message.queue) {
                    results[index] = Some(Err(e));
                    continue;
                }
                let msg = request.message;
                by_queue.entry(msg.queue.clone()).or_default().plain.push((index, msg));
                continue;
            }
            match self.enqueue_call(request) {
                Ok((call, msg)) => {
                    let queue = by_queue.entry(msg.queue.clone()).or_default();
                    queue.flush_plain(&msg.queue, now);
                    queue.calls.push(BatchCall { call, context: "enqueue", items: vec![(index, msg)] });
                }
                Err(e) => results[index] = Some(Err(e)),
            }
        }
        let mut conn = self.conn();
        for (queue, mut calls) in by_queue {
            calls.flush_plain(&queue, now);
            if let Err(e) = self.register_queue(&queue).await {
                for batch in calls.calls {
                    batch.items.iter().for_each(|(index, _)| results[*index] = Some(Err(e.duplicate())));
                }
                continue;
            }
            for (index, msg, code) in run_pipeline(&mut conn, calls.calls).await {
                results[index] = Some(code.and_then(|code| enqueue_result(msg, code)));
            }
        }
        results.into_iter().map(|r| r.expect("every request has a result")).collect()
    }
}

/// The script calls of one queue's share of an `enqueue_batch`, in request order.
#[derive(Default)]
struct QueueCalls {
    calls: Vec<BatchCall>,
    /// Plain pending tasks not yet in a call.
    plain: Vec<(usize, TaskMessage)>,
}

impl QueueCalls {
    /// Puts the plain pending tasks collected so far into `enqueue_batch.lua` calls.
    fn flush_plain(&mut self, queue: &str, now: SystemTime) {
        if self.plain.is_empty() {
            return;
        }
        let k = QueueKeys::new(queue);
        for chunk in self.plain.chunks(ENQUEUE_BATCH) {
            let mut call = ScriptCall::new(&SCRIPTS.enqueue_batch);
            call.key(k.pending()).key(k.idle_workers());
            call.arg(unix_nanos(now)).arg(k.task_prefix()).arg(k.ready_channel());
            for (_, msg) in chunk {
                call.arg(&msg.id).arg(encode(msg));
            }
            self.calls.push(BatchCall { call, context: "enqueue batch", items: chunk.to_vec() });
        }
        self.plain.clear();
    }
}

/// A task as `dequeue.lua` or `list_lease_expired.lua` found it in Redis.
#[derive(Debug)]
#[expect(clippy::large_enum_variant, reason = "short-lived, and nearly every value is a `Task`")]
enum Stored {
    /// A message that decodes and names the task it is stored under.
    Task(TaskMessage),
    /// An ID whose task hash is missing or has no `msg`.
    Missing {
        /// The ID, as stored (not necessarily UTF-8).
        id: Vec<u8>,
    },
    /// A `msg` that cannot be run: it does not decode, or it names another task.
    Corrupt {
        /// The ID, as stored (not necessarily UTF-8).
        id: Vec<u8>,
        /// What is wrong with it, for the log.
        problem: String,
    },
}

/// Reads the `(id, msg)` pairs the scripts return for `queue`, checking that each message
/// decodes and belongs to the ID and queue it is stored under: a message naming another task
/// would be settled under that task's keys and stay active here for good.
fn read_stored(queue: &str, pairs: Vec<Value>) -> Vec<Stored> {
    let mut found = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks_exact(2) {
        let id = Vec::<u8>::from_redis_value_ref(&pair[0]).unwrap_or_default();
        let Ok(Some(bytes)) = Option::<Vec<u8>>::from_redis_value_ref(&pair[1]) else {
            found.push(Stored::Missing { id });
            continue;
        };
        found.push(match proto::TaskMessage::decode(bytes.as_slice()) {
            Err(e) => Stored::Corrupt { id, problem: format!("its msg cannot be decoded: {e}") },
            Ok(msg) if msg.id.as_bytes() != id.as_slice() || msg.queue != queue => {
                Stored::Corrupt { id, problem: format!("its msg names task {:?} of queue {:?}", msg.id, msg.queue) }
            }
            Ok(msg) => Stored::Task(msg.into()),
        });
    }
    found
}

impl RedisBroker {
    /// The queues this broker marked idle, locked (never across an await).
    fn idle_marks(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, tokio::time::Instant)>> {
        self.inner.idle_marks.lock().expect("idle marks lock poisoned")
    }

    /// Runs `archive_corrupt.lua` for the active task `id` of `queue`, which cannot run because
    /// of `problem`, and logs what it did as an error naming the task.
    async fn archive_corrupt(&self, conn: &mut Connection, queue: &str, id: &[u8], problem: &str) -> Result<()> {
        let k = QueueKeys::new(queue);
        let mut task_key = k.task_prefix().into_bytes();
        task_key.extend_from_slice(id);
        let mut call = ScriptCall::new(&SCRIPTS.archive_corrupt);
        call.key(task_key).key(k.active()).key(k.lease()).key(k.archived());
        call.arg(id).arg(unix_secs(self.now())).arg(k.finished_channel());
        let task_id = String::from_utf8_lossy(id);
        match call.run::<i64>(conn, "archive corrupt task").await? {
            1 => tracing::error!(queue = %queue, task_id = %task_id, "archived a corrupt task: {problem}"),
            2 => tracing::error!(queue = %queue, task_id = %task_id, "dropped an active task ID: {problem}"),
            // Another server settled it first.
            _ => {}
        }
        Ok(())
    }
}

#[async_trait]
impl Dequeue for RedisBroker {
    async fn dequeue(&self, queues: &[String], max: usize) -> Result<Vec<Dequeued>> {
        let expiry = unix_secs(self.now() + LEASE_DURATION);
        let lease_expiry = from_unix_secs(expiry);
        let mut taken = Vec::new();
        let mut conn = self.conn();
        for queue in queues {
            let wanted = max.saturating_sub(taken.len());
            if wanted == 0 {
                break;
            }
            let k = QueueKeys::new(queue);
            // A queue a server of this broker has waited on: should this fetch come up short,
            // the server waits again, so the script sets the idle mark as it finds out. Read
            // before the script runs, the generation makes a wake-up in between void the mark.
            let generation = self.inner.pubsub.wake_generation();
            let mark_secs = if self.idle_marks().contains_key(queue) { IDLE_MARK_SECS } else { 0 };
            let mut invocation = ScriptCall::new(&SCRIPTS.dequeue);
            invocation.key(k.pending()).key(k.paused()).key(k.active()).key(k.lease()).key(k.idle_workers());
            invocation.arg(expiry).arg(k.task_prefix()).arg(wanted).arg(mark_secs);
            let pairs: Vec<Value> = invocation.run(&mut conn, "dequeue").await?;
            if mark_secs > 0 && pairs.len() / 2 < wanted {
                self.idle_marks().insert(queue.clone(), (generation, tokio::time::Instant::now()));
            }
            for stored in read_stored(queue, pairs) {
                match stored {
                    Stored::Task(message) => taken.push(Dequeued { message, lease_expiry }),
                    // `dequeue.lua` already dropped it.
                    Stored::Missing { id } => tracing::error!(
                        queue = %queue,
                        task_id = %String::from_utf8_lossy(&id),
                        "dropped a pending task ID whose task hash is missing or has no msg: it cannot run"
                    ),
                    // A failure here leaves the task active; the recoverer archives it once its
                    // lease expires.
                    Stored::Corrupt { id, problem } => {
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, &problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                problem = %problem,
                                error = %e,
                                "cannot archive a corrupt task; the recoverer will once its lease expires"
                            );
                        }
                    }
                }
            }
        }
        Ok(taken)
    }

    /// Subscribes to the queues' wake-up channels, marks them as having an idle worker, and
    /// waits for a producer's wake-up; returns at once when a task is already pending. Never
    /// resolves while Redis is unreachable: the processor's poll then takes over.
    async fn wait_for_tasks(&self, queues: &[String]) {
        let pubsub = &self.inner.pubsub;
        let notified = pubsub.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let channels: Vec<String> = queues.iter().map(|q| QueueKeys::new(q).ready_channel()).collect();
        if let Err(e) = pubsub.subscribe_wake(&channels).await {
            tracing::debug!(error = %e, "cannot subscribe to wake-ups; polling only");
            return std::future::pending().await;
        }
        let mut conn = self.conn();
        for queue in queues {
            // A mark this broker set recently, with no wake-up since, is still in place: what
            // clears it publishes a wake-up.
            let generation = pubsub.wake_generation();
            if self
                .idle_marks()
                .get(queue)
                .is_some_and(|(g, at)| *g == generation && at.elapsed() < Duration::from_secs(IDLE_MARK_SECS / 2))
            {
                continue;
            }
            let k = QueueKeys::new(queue);
            let mut call = ScriptCall::new(&SCRIPTS.mark_idle);
            call.key(k.idle_workers()).key(k.pending()).key(k.paused()).arg(IDLE_MARK_SECS);
            match call.run::<i64>(&mut conn, "mark idle").await {
                Ok(0) => {
                    let mark = (generation, tokio::time::Instant::now());
                    self.idle_marks().insert(queue.clone(), mark);
                }
                Ok(_) => return,
                Err(_) => return std::future::pending().await,
            }
        }
        notified.await
    }

    async fn finish(&self, msg: &TaskMessage, outcome: Outcome) -> Result<()> {
        let (call, context) = self.finish_call(msg, outcome, self.now());
        match call.run::<i64>(&mut self.conn(), context).await? {
            1 => Ok(()),
            _ => Err(not_found(msg)),
        }
    }

    /// One pipeline per queue; the successes without retention of a queue share one
    /// `done_batch.lua` call.
    async fn finish_batch(&self, items: Vec<(TaskMessage, Outcome)>) -> Vec<Result<()>> {
        let now = self.now();
        let mut by_queue: BTreeMap<String, Vec<(usize, TaskMessage, Outcome)>> = BTreeMap::new();
        let count = items.len();
        for (index, (msg, outcome)) in items.into_iter().enumerate() {
            by_queue.entry(msg.queue.clone()).or_default().push((index, msg, outcome));
        }
        let mut results: Vec<Option<Result<()>>> = Vec::new();
        results.resize_with(count, || None);
        let mut conn = self.conn();
        for (queue, items) in by_queue {
            let (done, others): (Vec<_>, Vec<_>) = items.into_iter().partition(|(_, _, o)| *o == Outcome::Done);
            let mut calls = Vec::new();
            let singles: Vec<_> = if done.len() > 1 {
                let call = self.done_batch_call(&queue, &done, now);
                calls.push(BatchCall { call, context: "done batch", items: strip(done) });
                others
            } else {
                done.into_iter().chain(others).collect()
            };
            calls.extend(singles.into_iter().map(|(index, msg, outcome)| {
                let (call, context) = self.finish_call(&msg, outcome, now);
                BatchCall { call, context, items: vec![(index, msg)] }
            }));
            for (index, msg, code) in run_pipeline(&mut conn, calls).await {
                results[index] = Some(code.and_then(|code| if code == 1 { Ok(()) } else { Err(not_found(&msg)) }));
            }
        }
        results.into_iter().map(|r| r.expect("every item has a result")).collect()
    }

    async fn extend_leases(&self, queue: &str, ids: &[String]) -> Result<SystemTime> {
        let expiry = unix_secs(self.now() + LEASE_DURATION);
        if !ids.is_empty() {
            let mut cmd = redis::cmd("ZADD");
            cmd.arg(QueueKeys::new(queue).lease()).arg("XX");
            for id in ids {
                cmd.arg(expiry).arg(id);
            }
            let _: i64 = cmd.query_async(&mut self.conn()).await.map_err(|e| broker_error("extend leases", e))?;
        }
        Ok(from_unix_secs(expiry))
    }

    async fn write_result(&self, queue: &str, id: &str, result: Bytes) -> Result<()> {
        let mut invocation = ScriptCall::new(&SCRIPTS.write_result);
        invocation.key(QueueKeys::new(queue).task(id)).arg(result.as_ref());
        match invocation.run::<i64>(&mut self.conn(), "write result").await? {
            1 => Ok(()),
            _ => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
        }
    }
}

#[async_trait]
impl Forward for RedisBroker {
    async fn forward_ready(&self, queues: &[String]) -> Result<usize> {
        let now = self.now();
        let mut conn = self.conn();
        let mut moved = 0;
        for queue in queues {
            let k = QueueKeys::new(queue);
            for source in [k.scheduled(), k.retry()] {
                loop {
                    let mut invocation = ScriptCall::new(&SCRIPTS.forward);
                    invocation.key(&source).key(k.pending()).key(k.idle_workers());
                    invocation.arg(unix_secs(now)).arg(k.task_prefix()).arg(unix_nanos(now)).arg(k.group_prefix());
                    invocation.arg(k.ready_channel());
                    let n: i64 = invocation.run(&mut conn, "forward").await?;
                    moved += n as usize;
                    if n < FORWARD_BATCH {
                        break;
                    }
                }
            }
        }
        Ok(moved)
    }
}

#[async_trait]
impl Recover for RedisBroker {
    async fn list_lease_expired(&self, queues: &[String], cutoff: SystemTime) -> Result<Vec<TaskMessage>> {
        let mut conn = self.conn();
        let mut expired = Vec::new();
        for queue in queues {
            let k = QueueKeys::new(queue);
            let mut invocation = ScriptCall::new(&SCRIPTS.list_lease_expired);
            invocation.key(k.lease()).arg(unix_secs(cutoff)).arg(k.task_prefix());
            let pairs: Vec<Value> = invocation.run(&mut conn, "list lease expired").await?;
            for stored in read_stored(queue, pairs) {
                match stored {
                    Stored::Task(msg) => expired.push(msg),
                    // Settled here, so the recoverer never meets it again; a failure is logged
                    // and retried on the next pass.
                    Stored::Missing { id } => {
                        let problem = "its task hash is missing or has no msg";
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                error = %e,
                                "cannot drop an active task ID without a task message"
                            );
                        }
                    }
                    Stored::Corrupt { id, problem } => {
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, &problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                problem = %problem,
                                error = %e,
                                "cannot archive a corrupt task"
                            );
                        }
                    }
                }
            }
        }
        Ok(expired)
    }
}

#[async_trait]
impl Janitor for RedisBroker {
    async fn delete_expired_completed(&self, queue: &str, batch_size: usize) -> Result<usize> {
        let k = QueueKeys::new(queue);
        let mut invocation = ScriptCall::new(&SCRIPTS.delete_expired_completed);
        invocation.key(k.completed()).arg(unix_secs(self.now())).arg(k.task_prefix()).arg(batch_size);
        let n: i64 = invocation.run(&mut self.conn(), "delete expired completed").await?;
        Ok(n as usize)
    }
}

/// Every capability: the Redis broker has them all.
impl Capabilities for RedisBroker {
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
impl ServerState for RedisBroker {
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()> {
        let server_key = keys::server_info(&server.host, server.pid, &server.server_id);
        let workers_key = keys::workers(&server.host, server.pid, &server.server_id);
        let expiry = unix_secs(self.now() + ttl);
        let mut conn = self.conn();
        let fail = |e| broker_error("write server state", e);
        let _: i64 = conn.zadd(keys::ALL_SERVERS, &server_key, expiry).await.map_err(fail)?;
        let _: i64 = conn.zadd(keys::ALL_WORKERS, &workers_key, expiry).await.map_err(fail)?;
        let mut invocation = ScriptCall::new(&SCRIPTS.write_server_state);
        invocation.key(server_key).key(workers_key);
        invocation.arg(ttl.as_secs().max(1)).arg(proto::ServerInfo::from(server).encode_to_vec());
        for worker in workers {
            invocation.arg(&worker.task_id).arg(proto::WorkerInfo::from(worker).encode_to_vec());
        }
        let _: i64 = invocation.run(&mut conn, "write server state").await?;
        Ok(())
    }

    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()> {
        let server_key = keys::server_info(&server.host, server.pid, &server.server_id);
        let workers_key = keys::workers(&server.host, server.pid, &server.server_id);
        let mut conn = self.conn();
        let fail = |e| broker_error("clear server state", e);
        let _: i64 = conn.zrem(keys::ALL_SERVERS, &server_key).await.map_err(fail)?;
        let _: i64 = conn.zrem(keys::ALL_WORKERS, &workers_key).await.map_err(fail)?;
        let _: i64 = conn.del(&[&server_key, &workers_key]).await.map_err(fail)?;
        Ok(())
    }
}

#[async_trait]
impl Health for RedisBroker {
    async fn ping(&self) -> Result<()> {
        let _: String = redis::cmd("PING").query_async(&mut self.conn()).await.map_err(|e| broker_error("ping", e))?;
        Ok(())
    }
}

/// Reads an integer that Redis returned as a number or a decimal string.
fn int(value: &Value) -> i64 {
    i64::from_redis_value_ref(value).unwrap_or(0)
}

impl RedisBroker {
    /// One page of `container` (read as `kind`, see `list_tasks.lua`), as tasks in `state`.
    async fn list_page(
        &self,
        k: &QueueKeys,
        container: String,
        kind: &str,
        state: TaskState,
        page: Page,
        now: SystemTime,
    ) -> Result<Vec<TaskInfo>> {
        let size = page.size.max(1);
        let mut invocation = ScriptCall::new(&SCRIPTS.list_tasks);
        invocation.key(container).key(k.lease());
        invocation.arg(kind).arg(size.saturating_mul(page.number)).arg(size).arg(k.task_prefix()).arg(k.group_prefix());
        let values: Vec<Value> = invocation.run(&mut self.conn(), "list tasks").await?;
        let now_secs = unix_secs(now);
        let mut tasks = Vec::with_capacity(values.len() / 4);
        for entry in values.chunks_exact(4) {
            let Ok(bytes) = Vec::<u8>::from_redis_value_ref(&entry[0]) else { continue };
            let Ok(msg) = decode(&bytes) else { continue };
            let result = Option::<Vec<u8>>::from_redis_value_ref(&entry[1]).ok().flatten().map(Bytes::from);
            let score = Option::<i64>::from_redis_value_ref(&entry[2]).ok().flatten();
            let lease = Option::<i64>::from_redis_value_ref(&entry[3]).ok().flatten();
            let next_process_at = match state {
                TaskState::Pending => Some(now),
                TaskState::Scheduled | TaskState::Retry => score.map(from_unix_secs),
                _ => None,
            };
            let mut info = TaskInfo::new(&msg, state, next_process_at, result);
            info.is_orphaned = state == TaskState::Active && lease.is_some_and(|expiry| expiry <= now_secs);
            tasks.push(info);
        }
        Ok(tasks)
    }

    /// Go asynq's estimate of the memory `k`'s queue takes (`memory_usage.lua`); 0 when the
    /// server refuses `MEMORY USAGE`.
    async fn memory_usage(&self, k: &QueueKeys) -> Result<u64> {
        let mut call = ScriptCall::new(&SCRIPTS.memory_usage);
        call.key(k.active()).key(k.pending()).key(k.scheduled()).key(k.retry()).key(k.archived());
        call.key(k.completed()).key(k.groups());
        call.arg(k.task_prefix()).arg(MEMORY_SAMPLE_TASKS).arg(MEMORY_SAMPLE_GROUPS).arg(k.group_prefix());
        let bytes: i64 = call.run(&mut self.conn(), "memory usage").await?;
        Ok(bytes.max(0) as u64)
    }
}

#[async_trait]
impl Inspect for RedisBroker {
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>> {
        let now = unix_secs(self.now());
        let mut conn = self.conn();
        let fail = |e| broker_error("list servers", e);
        let live: Vec<String> = conn.zrangebyscore(keys::ALL_SERVERS, now, "+inf").await.map_err(fail)?;
        let _: i64 = conn.zrembyscore(keys::ALL_SERVERS, "-inf", now - 1).await.map_err(fail)?;
        let mut servers = Vec::new();
        for server_key in live {
            let Some(info): Option<Vec<u8>> = conn.get(&server_key).await.map_err(fail)? else { continue };
            let Ok(info) = proto::ServerInfo::decode(info.as_slice()) else {
                tracing::warn!(key = %server_key, "skipping an undecodable server record");
                continue;
            };
            let workers_key = server_key.replacen("asynq:servers:", "asynq:workers:", 1);
            let values: Vec<Vec<u8>> = conn.hvals(&workers_key).await.map_err(fail)?;
            let workers = values
                .iter()
                .filter_map(|v| proto::WorkerInfo::decode(v.as_slice()).ok())
                .map(WorkerInfo::from)
                .collect();
            servers.push((ServerInfo::from(info), workers));
        }
        servers.sort_by(|(a, _), (b, _)| (&a.host, a.pid, &a.server_id).cmp(&(&b.host, b.pid, &b.server_id)));
        Ok(servers)
    }

    async fn queues(&self) -> Result<Vec<String>> {
        let mut queues: Vec<String> =
            self.conn().smembers(keys::ALL_QUEUES).await.map_err(|e| broker_error("list queues", e))?;
        queues.sort();
        Ok(queues)
    }

    async fn queue_info(&self, queue: &str) -> Result<QueueInfo> {
        self.require_queue(queue).await?;
        let now = self.now();
        let k = QueueKeys::new(queue);
        let date = utc_date(now);
        let mut invocation = ScriptCall::new(&SCRIPTS.queue_stats);
        invocation.key(k.pending()).key(k.active()).key(k.scheduled()).key(k.retry()).key(k.archived());
        invocation.key(k.completed()).key(k.processed_on(&date)).key(k.failed_on(&date));
        invocation.key(k.processed_total()).key(k.failed_total()).key(k.paused()).key(k.groups());
        invocation.arg(k.task_prefix()).arg(k.group_prefix());
        let values: Vec<Value> = invocation.run(&mut self.conn(), "queue info").await?;
        if values.len() != 14 {
            return Err(unexpected("queue info", format!("{} values instead of 14", values.len())));
        }
        let n = |i: usize| int(&values[i]).max(0);
        let mut info = QueueInfo::empty(queue, now);
        info.pending = n(0) as usize;
        info.active = n(1) as usize;
        info.scheduled = n(2) as usize;
        info.retry = n(3) as usize;
        info.archived = n(4) as usize;
        info.completed = n(5) as usize;
        info.processed = n(6) as u64;
        info.failed = n(7) as u64;
        info.processed_total = n(8) as u64;
        info.failed_total = n(9) as u64;
        info.paused = n(10) != 0;
        let oldest = n(11);
        if oldest != 0 {
            info.latency = now.duration_since(from_unix_nanos(oldest)).unwrap_or_default();
        }
        info.groups = n(12) as usize;
        info.aggregating = n(13) as usize;
        info.size = info.sum_of_states();
        info.memory_usage = self.memory_usage(&k).await?;
        Ok(info)
    }

    async fn task_info(&self, queue: &str, id: &str) -> Result<TaskInfo> {
        self.require_queue(queue).await?;
        let k = QueueKeys::new(queue);
        let mut invocation = ScriptCall::new(&SCRIPTS.task_info);
        invocation.key(k.task(id)).arg(id).arg(unix_secs(self.now())).arg(k.prefix());
        let values: Vec<Value> = invocation.run(&mut self.conn(), "task info").await?;
        let [msg, state, next, result] = values.as_slice() else {
            return Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() });
        };
        let msg = decode(&Vec::<u8>::from_redis_value_ref(msg).map_err(|e| unexpected("task info", e))?)?;
        let state: String = String::from_redis_value_ref(state).map_err(|e| unexpected("task info", e))?;
        let state = state.parse::<TaskState>().map_err(|e| unexpected("task info", e))?;
        let next = int(next);
        let result = Option::<Vec<u8>>::from_redis_value_ref(result).ok().flatten().map(Bytes::from);
        Ok(TaskInfo::new(&msg, state, (next != 0).then(|| from_unix_secs(next)), result))
    }

    async fn list_tasks(&self, queue: &str, state: TaskState, page: Page) -> Result<Vec<TaskInfo>> {
        self.require_queue(queue).await?;
        let now = self.now();
        let k = QueueKeys::new(queue);
        let (container, kind) = match state {
            TaskState::Pending => (k.pending(), "list"),
            TaskState::Active => (k.active(), "list"),
            TaskState::Scheduled => (k.scheduled(), "zset"),
            TaskState::Retry => (k.retry(), "zset"),
            TaskState::Archived => (k.archived(), "zset"),
            TaskState::Completed => (k.completed(), "zset"),
            TaskState::Aggregating => (k.groups(), "groups"),
        };
        self.list_page(&k, container, kind, state, page, now).await
    }

    async fn list_group_tasks(&self, queue: &str, group: &str, page: Page) -> Result<Vec<TaskInfo>> {
        asynq_core::validate_group_name(group)?;
        self.require_queue(queue).await?;
        let k = QueueKeys::new(queue);
        self.list_page(&k, k.group(group), "zset", TaskState::Aggregating, page, self.now()).await
    }

    async fn history(&self, queue: &str, days: usize) -> Result<Vec<DailyStats>> {
        DailyStats::validate_days(days)?;
        self.require_queue(queue).await?;
        let now = self.now();
        let k = QueueKeys::new(queue);
        let dates: Vec<String> =
            (0..days as u64).map(|day| utc_date(now - Duration::from_secs(day * 24 * 60 * 60))).collect();
        // All the keys share the queue's slot, so one MGET serves a Cluster too.
        let mut mget = redis::cmd("MGET");
        for date in &dates {
            mget.arg(k.processed_on(date)).arg(k.failed_on(date));
        }
        let values: Vec<Value> = mget.query_async(&mut self.conn()).await.map_err(|e| broker_error("history", e))?;
        if values.len() != 2 * dates.len() {
            return Err(unexpected("history", format!("{} values for {} keys", values.len(), 2 * dates.len())));
        }
        let count = |v: &Value| int(v).max(0) as u64;
        Ok(dates
            .into_iter()
            .zip(values.chunks_exact(2))
            .map(|(date, pair)| DailyStats {
                queue: queue.to_owned(),
                date,
                processed: count(&pair[0]),
                failed: count(&pair[1]),
            })
            .collect())
    }

    async fn backend_info(&self) -> Result<BackendInfo> {
        crate::backend::backend_info(&mut self.conn(), self.kind()).await
    }

    async fn queue_location(&self, queue: &str) -> Result<Option<QueueLocation>> {
        self.require_queue(queue).await?;
        if self.kind() != crate::backend::CLUSTER {
            return Ok(None);
        }
        crate::backend::queue_location(&mut self.conn(), &QueueKeys::new(queue)).await.map(Some)
    }

    async fn pause_queue(&self, queue: &str) -> Result<()> {
        let set: bool = redis::cmd("SETNX")
            .arg(QueueKeys::new(queue).paused())
            .arg(unix_secs(self.now()))
            .query_async(&mut self.conn())
            .await
            .map_err(|e| broker_error("pause queue", e))?;
        if set { Ok(()) } else { Err(Error::FailedPrecondition(format!("queue {queue:?} is already paused"))) }
    }

    async fn unpause_queue(&self, queue: &str) -> Result<()> {
        let k = QueueKeys::new(queue);
        let mut conn = self.conn();
        let deleted: i64 = conn.del(k.paused()).await.map_err(|e| broker_error("unpause queue", e))?;
        if deleted != 1 {
            return Err(Error::FailedPrecondition(format!("queue {queue:?} is not paused")));
        }
        // Idle servers may be waiting on the queue's pending tasks.
        let _: i64 = conn.publish(k.ready_channel(), "").await.map_err(|e| broker_error("unpause queue", e))?;
        Ok(())
    }
}
