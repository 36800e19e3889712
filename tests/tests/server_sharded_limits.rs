//! Limits named by a sharded queue's logical name apply to the logical queue as a whole: a rate
//! limit is one bucket over its shards and the plain queue of its name, and a shared concurrency
//! limit one set of slots, across every server. On the memory broker with tokio's paused time,
//! and on Redis and a Cluster with a simulated clock (the rate) or two servers of their own
//! connections (the concurrency).

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::broker::{Capabilities, ShardedQueues};
use asynq_core::rate_limit::RateLimit;
use asynq_core::{Clock, QueueName, SimulatedClock};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Peak, PlainProducer, Recorder, RedisCluster, RedisServer, redis_broker, secs, wait_for};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SHARDS: usize = 4;

/// Declares `orders` with [`SHARDS`] shards on `broker` and enqueues `placed` tasks on its shards
/// (round-robin) and `plain` tasks in the plain queue of its name, as a producer that does not
/// place tasks on shards (Go's) would.
async fn fill<B: Capabilities + asynq_core::broker::Enqueue + Clone>(
    broker: &B,
    clock: Arc<dyn Clock>,
    placed: usize,
    plain: usize,
) {
    let shards: Arc<dyn ShardedQueues> = Arc::new(broker.clone()).as_sharded_queues().unwrap();
    shards.declare_sharded_queue(&QueueName::from_static("orders"), SHARDS).await.unwrap();
    let sharding = Client::new(broker.clone()).with_clock(clock.clone());
    for n in 0..placed {
        sharding.enqueue(&Task::new("job", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    let unsharded = Client::new(PlainProducer(broker.clone())).with_clock(clock);
    for n in 0..plain {
        unsharded.enqueue(&Task::new("job", format!("go {n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
}

/// The queues the recorded tasks ran from.
fn queues_run(rec: &Recorder) -> BTreeSet<String> {
    rec.calls().into_iter().map(|call| call.queue).collect()
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_on_a_logical_queue_holds_over_its_shards_across_two_servers() {
    let h = Harness::new();
    const TASKS: usize = 40;
    fill(&h.broker, h.clock.clone(), TASKS - 4, 4).await;
    let (per_second, burst) = (5.0, 5);
    let rec = Recorder::default();
    let mut servers = Vec::new();
    for seed in 0..2 {
        let config = Config::builder()
            .concurrency(10)
            .sharded_queue("orders", 1)
            .rate_limit("orders", RateLimit::new(per_second, burst).unwrap())
            .clock(h.clock.clone())
            .rng_seed(seed)
            .build()
            .unwrap();
        let mut server = Server::new(h.broker.clone(), config).unwrap();
        server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
        servers.push(server);
    }
    let begin = h.now();
    h.eventually(secs(60), "every task ran", || async { rec.len() == TASKS }).await;
    for server in &mut servers {
        server.shutdown().await;
    }

    let starts: Vec<Duration> = rec.calls().iter().map(|c| c.at.duration_since(begin).unwrap()).collect();
    // One bucket: 5 at once, the other 35 at 5 a second, 7 s. A bucket per shard (or per
    // server) would have run them all within a second or two.
    let last = starts.iter().max().unwrap();
    assert!((secs(6)..secs(9)).contains(last), "the last task started at {last:?}");
    for window_start in &starts {
        let in_window = starts.iter().filter(|s| (*window_start..*window_start + secs(1)).contains(*s)).count();
        assert!(
            in_window <= per_second as usize + burst as usize,
            "{in_window} started in the second from {window_start:?}"
        );
    }
    assert_eq!(queues_run(&rec).len(), SHARDS + 1, "every shard and the plain queue ran: {:?}", queues_run(&rec));
}

#[tokio::test(start_paused = true)]
async fn a_shared_concurrency_limit_on_a_logical_queue_holds_over_its_shards_across_two_servers() {
    let h = Harness::new();
    const TASKS: usize = 16;
    fill(&h.broker, h.clock.clone(), TASKS - 2, 2).await;
    let (rec, peak) = (Recorder::default(), Arc::new(Peak::default()));
    let mut servers = Vec::new();
    for seed in 0..2 {
        let config = Config::builder()
            .concurrency(4)
            .sharded_queue("orders", 1)
            .shared_queue_concurrency("orders", 2)
            .clock(h.clock.clone())
            .rng_seed(seed)
            .build()
            .unwrap();
        let mut server = Server::new(h.broker.clone(), config).unwrap();
        let peak = peak.clone();
        server
            .start(rec.handler(h.clock.clone(), move |_, _| {
                let peak = peak.clone();
                async move {
                    peak.around(Duration::from_millis(300)).await;
                    Ok(())
                }
            }))
            .unwrap();
        servers.push(server);
    }
    h.eventually(secs(120), "every task ran", || async { rec.len() == TASKS }).await;
    for server in &mut servers {
        server.shutdown().await;
    }
    assert_eq!(
        peak.max(),
        2,
        "at most 2 tasks of the logical queue ran at once over 4 shards and 2 servers, and 2 did"
    );
    assert!(rec.calls().iter().all(|c| c.retry_count == 0), "waiting for a slot uses no retry");
    assert_eq!(queues_run(&rec).len(), SHARDS + 1, "every shard and the plain queue ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_rate_limit_on_a_logical_queue_is_one_bucket_for_two_servers() {
    let redis = RedisServer::start();
    rate_limit_is_one_bucket_for_two_servers_on(&redis.url()).await;
}

/// On a Cluster the shards' hash slots are spread over the masters, and the bucket's is the
/// logical name's: one bucket still.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_rate_limit_on_a_logical_queue_is_one_bucket_for_two_servers() {
    let cluster = RedisCluster::start(3);
    rate_limit_is_one_bucket_for_two_servers_on(&format!("redis-cluster://{}", cluster.addrs().join(","))).await;
}

async fn rate_limit_is_one_bucket_for_two_servers_on(url: &str) {
    let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let producer = redis_broker(url, shared.clone()).await;
    const PER_SECOND: usize = 5;
    const SECONDS: usize = 4;
    const TASKS: usize = PER_SECOND * (SECONDS + 1);
    fill(&producer, shared.clone(), TASKS - 3, 3).await;
    let rec = Recorder::default();
    let mut servers = Vec::new();
    for seed in 0..2 {
        // Each server has its own connection, as separate processes would.
        let broker = redis_broker(url, shared.clone()).await;
        let config = Config {
            task_check_interval: Duration::from_millis(20),
            ..Config::builder()
                .concurrency(10)
                .sharded_queue("orders", 1)
                .rate_limit("orders", RateLimit::new(PER_SECOND as f64, PER_SECOND as u32).unwrap())
                .clock(shared.clone())
                .rng_seed(seed)
                .build()
                .unwrap()
        };
        let mut server = Server::new(broker, config).unwrap();
        server.start(rec.handler(shared.clone(), |_, _| async { Ok(()) })).unwrap();
        servers.push(server);
    }
    // The simulated clock moves only here, a second at a time: each second's tokens (a full
    // bucket at first) are all the two servers may start until it moves again.
    for second in 0..=SECONDS {
        let due = PER_SECOND * (second + 1);
        let done = || {
            let ran = rec.len();
            async move { ran >= due }
        };
        wait_for(&format!("{due} tasks ran by second {second}"), done).await;
        clock.advance(secs(1));
    }
    for server in &mut servers {
        server.shutdown().await;
    }

    let mut per_second: BTreeMap<SystemTime, usize> = BTreeMap::new();
    for call in rec.calls() {
        *per_second.entry(call.at).or_default() += 1;
    }
    let counts: Vec<usize> = per_second.values().copied().collect();
    assert_eq!(
        counts,
        vec![PER_SECOND; SECONDS + 1],
        "one bucket: {PER_SECOND} tasks a second over the shards and servers"
    );
    assert_eq!(queues_run(&rec).len(), SHARDS + 1, "every shard and the plain queue ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_shared_concurrency_limit_on_a_logical_queue_holds_across_two_servers() {
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(asynq_core::SystemClock);
    const TASKS: usize = 12;
    fill(&redis_broker(&redis.url(), clock.clone()).await, clock.clone(), TASKS - 2, 2).await;
    let (rec, peak) = (Recorder::default(), Arc::new(Peak::default()));
    let mut servers = Vec::new();
    for _ in 0..2 {
        let broker = redis_broker(&redis.url(), clock.clone()).await;
        let config = Config {
            task_check_interval: Duration::from_millis(20),
            ..Config::builder()
                .concurrency(4)
                .sharded_queue("orders", 1)
                .shared_queue_concurrency("orders", 2)
                .build()
                .unwrap()
        };
        let mut server = Server::new(broker, config).unwrap();
        let peak = peak.clone();
        server
            .start(rec.handler(clock.clone(), move |_, _| {
                let peak = peak.clone();
                async move {
                    peak.around(Duration::from_millis(40)).await;
                    Ok(())
                }
            }))
            .unwrap();
        servers.push(server);
    }
    wait_for("every task ran", || {
        let done = rec.len() >= TASKS;
        async move { done }
    })
    .await;
    for server in &mut servers {
        server.shutdown().await;
    }
    assert_eq!(peak.max(), 2, "at most 2 tasks of the logical queue ran at once across the servers, and 2 did");
    assert_eq!(rec.len(), TASKS, "each task ran once");
    let slots = redis.command(&["EXISTS", "asynq:slots:queue:orders"]).unwrap().as_int();
    assert_eq!(slots, Some(0), "every slot was given back");
}
