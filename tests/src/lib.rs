//! Helpers shared by the end-to-end tests: a wall clock that follows tokio's paused time, a
//! broker + client + server set-up on it, and a handler that records what it ran.
//!
//! With `#[tokio::test(start_paused = true)]` tokio's clock jumps to the next timer whenever
//! every task is idle, and [`TokioClock`] moves with it, so leases, retry times and retention
//! advance exactly as timers fire: no test waits on real time.

pub mod browser;
mod flaky;
mod go_fixtures;
mod logs;
pub mod model;
mod peak;
mod plain_producer;
mod redis_helpers;
mod redis_server;
mod tls;

pub use flaky::FlakyBroker;
pub use go_fixtures::{FixtureKey, load_fixture, read_fixture};
pub use logs::{CapturedLogs, capture_logs};
pub use peak::Peak;
pub use plain_producer::PlainProducer;
pub use redis_helpers::{redis_broker, redis_broker_with_archive_limits, wait_for};
pub use redis_server::{KeyDump, RedisCluster, RedisSentinel, RedisServer, RespConnection, RespValue};
pub use tls::CertificateAuthority;

use asynq_client::Client;
use asynq_core::broker::{Dequeue, Dequeued, Inspect, Outcome};
use asynq_core::{Clock, QueueInfo, QueueName};
use asynq_memory::MemoryBroker;
use asynq_server::Config;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use asynq_server::TokioClock;

/// A memory broker, a client and a server configuration that share one [`TokioClock`].
#[derive(Debug, Clone)]
pub struct Harness {
    /// The broker.
    pub broker: MemoryBroker,
    /// A client over it.
    pub client: Client,
    /// The shared clock.
    pub clock: Arc<TokioClock>,
}

/// 2026-11-22T00:00:00Z, the start of every test's clock.
pub const EPOCH: Duration = Duration::from_secs(1_795_305_600);

impl Harness {
    /// A fresh harness. Call inside a tokio runtime (paused or not).
    pub fn new() -> Self {
        let clock = Arc::new(TokioClock::new(UNIX_EPOCH + EPOCH));
        let broker = MemoryBroker::with_clock(clock.clone());
        let client = Client::new(broker.clone()).with_clock(clock.clone());
        Self { broker, client, clock }
    }

    /// The current time.
    pub fn now(&self) -> SystemTime {
        self.clock.now()
    }

    /// A server configuration on this harness's clock, serving `queue` with `concurrency`.
    pub fn config(&self, queue: &str, concurrency: usize) -> Config {
        Config { concurrency, queues: [(queue.to_owned(), 1)].into(), clock: self.clock.clone(), ..Config::default() }
    }

    /// Sizes and statistics of `queue`.
    pub async fn queue(&self, queue: &str) -> QueueInfo {
        self.broker.queue_info(&QueueName::new(queue).unwrap()).await.expect("queue info")
    }

    /// Waits (in tokio time) until `done` holds, checking every 10 ms, for at most `limit`.
    /// Panics with `what` if it never does.
    pub async fn eventually<F, Fut>(&self, limit: Duration, what: &str, mut done: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let give_up = tokio::time::Instant::now() + limit;
        while !done().await {
            assert!(tokio::time::Instant::now() < give_up, "timed out after {limit:?} waiting for: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

/// What a [`Recorder`] saw: one entry per handler call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The task ID.
    pub id: String,
    /// The queue.
    pub queue: String,
    /// The task type.
    pub type_name: String,
    /// The retry count the handler was given.
    pub retry_count: u32,
    /// When the handler started, by the harness clock.
    pub at: SystemTime,
}

/// Records every handler call, shared between a handler and the test.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Recorder {
    /// Records a call.
    pub fn record(&self, ctx: &asynq_server::TaskContext, task: &asynq_core::Task, at: SystemTime) {
        self.calls.lock().unwrap().push(Call {
            id: ctx.task_id().to_owned(),
            queue: ctx.queue().to_owned(),
            type_name: task.type_name().to_owned(),
            retry_count: ctx.retry_count(),
            at,
        });
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// How many calls so far.
    pub fn len(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// True before the first call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Recorder {
    /// A handler that records each call and then runs `f`.
    pub fn handler<F, Fut>(&self, clock: Arc<dyn Clock>, f: F) -> impl asynq_server::Handler
    where
        F: Fn(asynq_server::TaskContext, asynq_core::Task) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), asynq_server::HandlerError>> + Send + 'static,
    {
        let recorder = self.clone();
        asynq_server::handler_fn(move |ctx, task| {
            recorder.record(&ctx, &task, clock.now());
            f(ctx, task)
        })
    }
}

/// Shorthand for whole seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Takes the next task of `queue` as a worker does and starts its handler (recording
/// [`LeaseStage::Started`](asynq_core::broker::LeaseStage::Started)); the worker then dies, so nobody extends the lease or finishes it.
/// The task first stalls `stalls_before` times (a worker died running it and the recoverer
/// forgave it), so with [`asynq_core::FREE_STALLS`] stalls before, its next expired lease is
/// charged as a failed attempt.
pub async fn start_and_die(broker: &dyn Dequeue, queue: &str, stalls_before: u32) -> Dequeued {
    let queues = [QueueName::new(queue).expect("a valid queue name")];
    for _ in 0..stalls_before {
        let taken = broker.dequeue(&queues, 1).await.expect("dequeue");
        let message = &taken.first().expect("a pending task to take").message;
        broker.extend_leases(&queues[0], std::slice::from_ref(&message.id)).await.expect("start");
        broker.finish(message, Outcome::Stalled).await.expect("stall");
    }
    let mut taken = broker.dequeue(&queues, 1).await.expect("dequeue");
    assert_eq!(taken.len(), 1, "a pending task to take in {queue:?}");
    let ids = [taken[0].message.id.clone()];
    broker.extend_leases(&QueueName::new(queue).unwrap(), &ids).await.expect("start");
    taken.remove(0)
}
