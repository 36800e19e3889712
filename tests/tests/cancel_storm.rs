//! No cancellation is lost: a thousand requests, each for a task of its own, sent at random
//! moments (a seeded RNG picks the order and the interleaving): before any server runs, in a
//! burst right as each of several servers starts (its first milliseconds, while it subscribes),
//! while its tasks run, and on Redis across a restart of redis-server. Servers come and go
//! between rounds (a stopping server gives its running tasks back). Every task runs until
//! cancelled, with no retries, so a request honoured shows as the task archived with "context
//! canceled", and a lost one as a task still running (or pending) at the end.
//!
//! On the memory broker, a single Redis (restarted in the middle) and a Redis Cluster.

use asynq_client::{Client, Task, TaskOptions, TaskState, Tracker};
use asynq_core::{Broker, Clock, QueueName, SystemClock, TaskId};
use asynq_memory::MemoryBroker;
use asynq_server::{Config, Server, TaskContext, handler_fn};
use asynq_tests::{RedisCluster, RedisServer, redis_broker};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How many tasks, each cancelled once.
const TASKS: usize = 1_000;
/// How many requests go out in each round.
const ROUND: usize = 100;
/// How many servers come and go before the last one.
const SERVERS: usize = 4;
/// The seed of every choice the test makes.
const SEED: u64 = 0x00c0_ffee_5eed;
/// How long the whole storm may take to settle.
const LIMIT: Duration = Duration::from_secs(25);

/// SplitMix64: small, seeded, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// What the storm measured.
#[derive(Debug, Default)]
struct Measured {
    /// Requests acknowledged (`Ok`) within 100 ms of a server's start.
    in_first_100ms: usize,
    /// Requests that failed (the broker was down) and were sent again.
    refused_then_resent: usize,
}

/// The storm against `broker`; `restart`, if any, restarts the backend while the second server
/// runs and requests are on their way.
async fn storm<B: Broker + Clone>(broker: B, restart: Option<Box<dyn FnOnce() + Send>>) {
    let started = Instant::now();
    let mut rng = Rng(SEED);
    let client = Client::new(broker.clone());
    let tracker = Tracker::new(broker.clone());
    let default = QueueName::from_static("default");
    let mut ids = Vec::with_capacity(TASKS);
    for i in 0..TASKS {
        let task = Task::new("storm", format!("{i}"));
        ids.push(client.enqueue(&task, TaskOptions::new().max_retry(0)).await.unwrap().id.into_string());
    }
    rng.shuffle(&mut ids);
    let mut to_send = ids.clone().into_iter();
    let measured = Arc::new(Mutex::new(Measured::default()));
    let running = Arc::new(AtomicUsize::new(0));

    // Before any server runs: nobody hears these.
    send(&tracker, to_send.by_ref().take(ROUND).collect(), &mut rng, None, &measured).await;

    let mut restart = restart;
    for round in 0..=SERVERS {
        let mut server = Server::new(broker.clone(), config()).unwrap();
        let before = running.load(Ordering::SeqCst);
        let counter = running.clone();
        server
            .start(handler_fn(move |_ctx: TaskContext, _task| {
                counter.fetch_add(1, Ordering::SeqCst);
                // Runs until cancelled (or given back when the server stops).
                std::future::pending()
            }))
            .unwrap();
        let born = Instant::now();
        if round == SERVERS {
            // The last server: the rest go out as it starts, and every task must end cancelled.
            send(&tracker, to_send.by_ref().collect(), &mut rng, Some(born), &measured).await;
            let deadline = started + LIMIT;
            loop {
                let info = broker.queue_info(&default).await.unwrap();
                if info.archived == TASKS {
                    break;
                }
                if Instant::now() > deadline {
                    let lost = lost(&broker, &ids).await;
                    let first: Vec<_> = lost.iter().take(5).collect();
                    panic!("{} of {TASKS} cancellations lost; the first: {first:?}", lost.len());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            server.shutdown().await;
            break;
        }
        // A burst right as it starts, while it subscribes and reads the kept requests.
        send(&tracker, to_send.by_ref().take(ROUND).collect(), &mut rng, Some(born), &measured).await;
        // Then more while its tasks run: once it runs some.
        wait(started, "the server runs tasks", || {
            let running = running.clone();
            async move { running.load(Ordering::SeqCst) > before }
        })
        .await;
        let mut batch: Vec<String> = to_send.by_ref().take(ROUND).collect();
        if round == 1
            && let Some(restart) = restart.take()
        {
            // A third go out and are acknowledged, and redis-server is killed while the server
            // cancels those tasks and writes their outcomes; the rest go out as it dies, are
            // refused while it is down, and are sent again once it is back.
            let rest = batch.split_off(ROUND / 3);
            send(&tracker, batch, &mut rng, None, &measured).await;
            let restarting = tokio::task::spawn_blocking(restart);
            send(&tracker, rest, &mut rng, None, &measured).await;
            restarting.await.unwrap();
        } else {
            send(&tracker, batch, &mut rng, None, &measured).await;
        }
        // Stopping gives the running tasks back, to be taken by the next server.
        server.shutdown().await;
    }
    let lost = lost(&broker, &ids).await;
    let first: Vec<_> = lost.iter().take(5).collect();
    assert!(lost.is_empty(), "{} of {TASKS} cancellations lost; the first: {first:?}", lost.len());
    let measured = measured.lock().unwrap();
    eprintln!(
        "0 of {TASKS} cancellations lost in {:?}; {} acknowledged within 100 ms of a server's start, {} refused and sent again",
        started.elapsed(),
        measured.in_first_100ms,
        measured.refused_then_resent
    );
    assert!(measured.in_first_100ms > 0, "some requests went out in a server's first 100 ms");
}

/// A server running every task at once, that stops quickly.
fn config() -> Config {
    Config {
        concurrency: TASKS,
        shutdown_timeout: Duration::from_millis(50),
        task_check_interval: Duration::from_millis(20),
        clock: Arc::new(SystemClock),
        ..Config::default()
    }
}

/// Sends a request for each of `ids`, all at once, each after a random number of yields (so
/// that they interleave with the server's work at random), sending again those the broker
/// refuses (it is restarting). Counts those acknowledged within 100 ms after `born`.
async fn send(
    tracker: &Tracker,
    ids: Vec<String>,
    rng: &mut Rng,
    born: Option<Instant>,
    measured: &Arc<Mutex<Measured>>,
) {
    let sends = ids.into_iter().map(|id| {
        let (tracker, measured, yields) = (tracker.clone(), measured.clone(), rng.below(64));
        async move {
            for _ in 0..yields {
                tokio::task::yield_now().await;
            }
            loop {
                match tracker.cancel(&id).await {
                    Ok(_) => break,
                    Err(e) => {
                        assert!(matches!(e, asynq_core::Error::Broker(_)), "cancelling {id}: {e}");
                        measured.lock().unwrap().refused_then_resent += 1;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
            if born.is_some_and(|born| born.elapsed() <= Duration::from_millis(100)) {
                measured.lock().unwrap().in_first_100ms += 1;
            }
        }
    });
    futures::future::join_all(sends).await;
}

/// Waits until `done`, checking every 20 ms, for what is left of [`LIMIT`] since `started`.
async fn wait<F, Fut>(started: Instant, what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    while !done().await {
        assert!(started.elapsed() < LIMIT, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The tasks not archived as cancelled, with their state and last error.
async fn lost<B: Broker>(broker: &B, ids: &[String]) -> BTreeMap<String, (TaskState, Option<String>)> {
    let default = QueueName::from_static("default");
    let mut lost = BTreeMap::new();
    for id in ids {
        let info = broker.task_info(&default, &TaskId::new(id.as_str()).unwrap()).await.unwrap();
        if (info.state, info.last_error.as_deref()) != (TaskState::Archived, Some("context canceled")) {
            lost.insert(id.clone(), (info.state, info.last_error));
        }
    }
    lost
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cancellation_is_lost_on_the_memory_broker() {
    storm(MemoryBroker::new(), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cancellation_is_lost_on_redis_across_a_restart() {
    // Every write is on disk before its reply, so the restart loses nothing acknowledged.
    let redis = Arc::new(Mutex::new(RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"])));
    let url = redis.lock().unwrap().url();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let broker = redis_broker(&url, clock).await;
    let restarting = redis.clone();
    storm(broker, Some(Box::new(move || restarting.lock().unwrap().restart()))).await;
    drop(redis);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cancellation_is_lost_on_a_redis_cluster() {
    let cluster = RedisCluster::start(3);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    storm(redis_broker(&url, clock).await, None).await;
}
