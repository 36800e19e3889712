//! Rate limits and concurrency limits, observed from when handlers start: a limited queue starts
//! no more tasks a second than its bucket allows and none of them fails; a limited type never
//! runs more tasks at once than its limit while other types keep running; a limit shared by
//! eight servers on one Redis holds across all of them, and a slot held by a worker that died
//! comes back when its lease would have run out. A task over a limit waits for a slot, never
//! through the retry set, and starts as soon as one frees, on memory, on Redis and on a Cluster;
//! shutdown gives waiting tasks back uncharged, a wait longer than a lease keeps the lease, and a
//! dead holder's slot is taken once its hold expires, though nothing announces it.
//!
//! Time is tokio's paused time; a processor that polled a rate-limited queue in a loop would
//! never let it advance, so these tests finishing shows the processor sleeps instead.

use asynq_client::{Task, TaskOptions};
use asynq_core::rate_limit::RateLimit;
use asynq_core::{Clock, Error};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Peak, Recorder, secs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const TASKS: usize = 50;

#[tokio::test(start_paused = true)]
async fn a_rate_limited_queue_starts_no_more_tasks_a_second_than_its_limit() {
    let h = Harness::new();
    for _ in 0..TASKS {
        h.client.enqueue(&Task::new("job", ""), TaskOptions::new().queue("limited")).await.unwrap();
    }
    let (per_second, burst) = (5.0, 5);
    let config = Config {
        rate_limits: [("limited".to_owned(), RateLimit::new(per_second, burst).unwrap())].into(),
        ..h.config("limited", 20)
    };
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let begin = h.now();
    server
        .start(rec.handler(h.clock.clone(), |_, _| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(())
        }))
        .unwrap();
    h.eventually(secs(30), "every task has run", || async { h.queue("limited").await.processed == TASKS as u64 }).await;
    server.shutdown().await;

    let starts: Vec<Duration> = rec.calls().iter().map(|c| c.at.duration_since(begin).unwrap()).collect();
    assert_eq!(starts.len(), TASKS, "each task ran once");
    // A full bucket starts `burst` at once; the other 45 take 9 s at 5 a second.
    let last = starts.iter().max().unwrap();
    assert!((Duration::from_secs(8)..Duration::from_secs(11)).contains(last), "the last task started at {last:?}");
    for window_start in &starts {
        let in_window = starts.iter().filter(|s| (*window_start..*window_start + secs(1)).contains(*s)).count();
        assert!(in_window <= 5 + burst as usize, "{in_window} tasks started in the second from {window_start:?}");
    }
    let info = h.queue("limited").await;
    assert_eq!((info.failed, info.retry, info.archived), (0, 0, 0), "no task over the limit failed: {info:?}");
}

#[tokio::test(start_paused = true)]
async fn a_type_limit_caps_that_type_while_others_keep_running() {
    let h = Harness::new();
    for i in 0..20 {
        h.client.enqueue(&Task::new("video:encode", ""), TaskOptions::new()).await.unwrap();
        if i < 10 {
            h.client.enqueue(&Task::new("email:send", ""), TaskOptions::new()).await.unwrap();
        }
    }
    let config = Config { type_concurrency: [("video:encode".to_owned(), 2)].into(), ..h.config("default", 10) };
    let (video, email) = (Arc::new(Peak::default()), Arc::new(Peak::default()));
    let (v, e) = (video.clone(), email.clone());
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(rec.handler(h.clock.clone(), move |_, task| {
            let peak = if task.type_name() == "video:encode" { v.clone() } else { e.clone() };
            async move {
                peak.around(secs(2)).await;
                Ok(())
            }
        }))
        .unwrap();
    h.eventually(secs(300), "every task has run", || async { h.queue("default").await.processed == 30 }).await;
    server.shutdown().await;

    assert_eq!(video.max(), 2, "video:encode ran at most 2 at once, and did reach 2");
    assert!(email.max() >= 5, "email:send kept running beside it, at most {} at once", email.max());
    let calls = rec.calls();
    assert_eq!(calls.len(), 30, "each task ran once");
    assert!(calls.iter().all(|c| c.retry_count == 0), "waiting for a turn does not use a retry");
    let info = h.queue("default").await;
    assert_eq!((info.failed, info.archived), (0, 0), "waiting is not a failure: {info:?}");
}

#[tokio::test(start_paused = true)]
async fn a_shared_slot_held_by_a_dead_worker_comes_back_within_its_lease() {
    use asynq_core::broker::ConcurrencySlots;
    use asynq_core::slots::SharedLimit;
    let h = Harness::new();
    // Two workers took both slots of "video:encode" and died: nobody renews their holds.
    let limit = SharedLimit::new("type:video:encode", 2).unwrap();
    let taken_at = h.now();
    for dead in ["dead-1", "dead-2"] {
        let holder = asynq_core::TaskId::new(dead).unwrap();
        assert!(h.broker.take_slot(&limit, &holder, taken_at, taken_at + asynq_core::LEASE_DURATION).await.unwrap());
    }
    h.client.enqueue(&Task::new("video:encode", ""), TaskOptions::new()).await.unwrap();
    let config = Config {
        shared_type_concurrency: [("video:encode".to_owned(), 2)].into(),
        delayed_task_check_interval: Duration::from_millis(200),
        ..h.config("default", 4)
    };
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(120), "the task ran", || async { h.queue("default").await.processed == 1 }).await;
    server.shutdown().await;

    let started = rec.calls()[0].at.duration_since(taken_at).unwrap();
    assert!(
        (asynq_core::LEASE_DURATION..asynq_core::LEASE_DURATION + secs(3)).contains(&started),
        "the task waited for the dead holds to expire, no longer: it started after {started:?}"
    );
    assert_eq!(rec.calls()[0].retry_count, 0, "waiting for a slot uses no retry");
    let holders = h.broker.slot_holders(limit.key(), h.now()).await.unwrap();
    assert!(holders.is_empty(), "the task gave its slot back: {holders:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_limit_holds_across_eight_servers() {
    let redis = asynq_tests::RedisServer::start();
    let client = asynq_client::Client::new(asynq_redis::RedisBroker::connect(&redis.url()).await.unwrap());
    const HEAVY: usize = 24;
    for _ in 0..HEAVY {
        client.enqueue(&Task::new("heavy", ""), TaskOptions::new()).await.unwrap();
    }
    for _ in 0..40 {
        client.enqueue(&Task::new("light", ""), TaskOptions::new()).await.unwrap();
    }
    let (heavy, light) = (Arc::new(Peak::default()), Arc::new(Peak::default()));
    let rec = Recorder::default();
    let clock: Arc<dyn asynq_core::Clock> = Arc::new(asynq_core::SystemClock);
    let mut servers = Vec::new();
    for _ in 0..8 {
        // Each server has its own connection, as separate processes would.
        let broker = asynq_redis::RedisBroker::connect(&redis.url()).await.unwrap();
        let config = Config {
            concurrency: 4,
            shared_type_concurrency: [("heavy".to_owned(), 2)].into(),
            task_check_interval: Duration::from_millis(20),
            delayed_task_check_interval: Duration::from_millis(100),
            ..Config::default()
        };
        let (h, l) = (heavy.clone(), light.clone());
        let mut server = Server::new(broker, config).unwrap();
        server
            .start(rec.handler(clock.clone(), move |_, task| {
                let peak = if task.type_name() == "heavy" { h.clone() } else { l.clone() };
                async move {
                    peak.around(Duration::from_millis(40)).await;
                    Ok(())
                }
            }))
            .unwrap();
        servers.push(server);
    }
    asynq_tests::wait_for("every task ran", || {
        let done = rec.len() >= HEAVY + 40;
        async move { done }
    })
    .await;
    for server in &mut servers {
        server.shutdown().await;
    }
    assert_eq!(heavy.max(), 2, "at most 2 heavy tasks ran at once across the 8 servers, and 2 did");
    assert!(light.max() > 2, "light tasks ran beside them, {} at once", light.max());
    assert_eq!(rec.len(), HEAVY + 40, "each task ran once");
    assert!(rec.calls().iter().all(|c| c.retry_count == 0), "waiting for a slot does not use a retry");
    let slots = redis.command(&["EXISTS", "asynq:slots:type:heavy"]).unwrap().as_int();
    assert_eq!(slots, Some(0), "every slot was given back");
}

/// Twelve tasks of 300 ms, a limit of 2 shared by two servers of 4 workers each: each server's
/// waiting room (4) fills, so some tasks also go back to their queue and are fetched again.
const WAITING_TASKS: usize = 12;
const WORK: Duration = Duration::from_millis(300);

/// A server with a shared limit of 2 on "resize", on `broker`, recording into `rec`.
fn limited_server<B>(broker: &B, config: Config, rec: &Recorder, peak: &Arc<Peak>) -> Server
where
    B: asynq_core::broker::WorkerBroker + Clone,
{
    let clock = config.clock.clone();
    let config = Config { shared_type_concurrency: [("resize".to_owned(), 2)].into(), ..config };
    let mut server = Server::new(broker.clone(), config).unwrap();
    let peak = peak.clone();
    server
        .start(rec.handler(clock, move |_, _| {
            let peak = peak.clone();
            async move {
                peak.around(WORK).await;
                Ok(())
            }
        }))
        .unwrap();
    server
}

#[tokio::test(start_paused = true)]
async fn tasks_over_a_shared_limit_wait_for_a_slot_and_never_retry() {
    let h = Harness::new();
    for _ in 0..WAITING_TASKS {
        h.client.enqueue(&Task::new("resize", ""), TaskOptions::new()).await.unwrap();
    }
    let (rec, peak) = (Recorder::default(), Arc::new(Peak::default()));
    let mut servers: Vec<Server> =
        (0..2).map(|_| limited_server(&h.broker, h.config("default", 4), &rec, &peak)).collect();
    let (ever_retried, took) = until_every_task_ran(&h).await;
    for server in &mut servers {
        server.shutdown().await;
    }
    assert_eq!(peak.max(), 2, "at most 2 ran at once across both servers, and 2 did");
    assert_eq!(ever_retried, 0, "no task over the limit ever went to the retry set");
    assert_eq!(rec.len(), WAITING_TASKS, "each task ran once");
    assert!(rec.calls().iter().all(|c| c.retry_count == 0), "waiting for a slot uses no retry");
    // Six rounds of two make 1.8 s; deferring through the retry set took a second per refusal.
    assert!(took < Duration::from_millis(2_400), "a freed slot starts a waiting task at once: {took:?}");
    use asynq_core::broker::ConcurrencySlots;
    let holders = h.broker.slot_holders(&asynq_core::slots::SlotKey::new("type:resize").unwrap(), h.now()).await;
    assert!(holders.unwrap().is_empty(), "every slot was given back");
}

#[tokio::test(start_paused = true)]
async fn a_task_over_a_type_limit_waits_for_its_turn_and_never_retries() {
    let h = Harness::new();
    for _ in 0..WAITING_TASKS {
        h.client.enqueue(&Task::new("resize", ""), TaskOptions::new()).await.unwrap();
    }
    let (rec, peak) = (Recorder::default(), Arc::new(Peak::default()));
    let config = Config { type_concurrency: [("resize".to_owned(), 2)].into(), ..h.config("default", 4) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let p = peak.clone();
    server
        .start(rec.handler(h.clock.clone(), move |_, _| {
            let peak = p.clone();
            async move {
                peak.around(WORK).await;
                Ok(())
            }
        }))
        .unwrap();
    let (ever_retried, took) = until_every_task_ran(&h).await;
    server.shutdown().await;
    assert_eq!(peak.max(), 2, "at most 2 ran at once, and 2 did");
    assert_eq!(ever_retried, 0, "no task over the limit ever went to the retry set");
    assert!(rec.calls().iter().all(|c| c.retry_count == 0), "waiting for a turn uses no retry");
    assert!(took < Duration::from_millis(2_400), "a finished task lets a waiting one start at once: {took:?}");
}

#[tokio::test(start_paused = true)]
async fn a_task_waits_for_a_slot_longer_than_a_lease_and_still_runs_once() {
    let h = Harness::new();
    for _ in 0..2 {
        h.client.enqueue(&Task::new("resize", ""), TaskOptions::new()).await.unwrap();
    }
    let config = Config { shared_type_concurrency: [("resize".to_owned(), 1)].into(), ..h.config("default", 4) };
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let work = asynq_core::LEASE_DURATION * 3;
    let begin = h.now();
    server
        .start(rec.handler(h.clock.clone(), move |_, _| async move {
            tokio::time::sleep(work).await;
            Ok(())
        }))
        .unwrap();
    h.eventually(secs(600), "both tasks have run", || async { h.queue("default").await.processed == 2 }).await;
    server.shutdown().await;
    let calls = rec.calls();
    assert_eq!(calls.len(), 2, "each task ran once: the waiting one's lease was renewed while it waited");
    assert!(calls.iter().all(|c| c.retry_count == 0), "waiting uses no retry");
    let second = calls[1].at.duration_since(begin).unwrap();
    assert!((work..work + secs(2)).contains(&second), "the second started when the first finished: {second:?}");
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_tasks_waiting_for_a_slot_back_to_their_queue_uncharged() {
    use asynq_core::broker::ConcurrencySlots;
    use asynq_core::slots::SlotKey;
    let h = Harness::new();
    for _ in 0..3 {
        h.client.enqueue(&Task::new("resize", ""), TaskOptions::new()).await.unwrap();
    }
    let config = Config {
        shared_type_concurrency: [("resize".to_owned(), 1)].into(),
        shutdown_timeout: secs(1),
        ..h.config("default", 4)
    };
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config.clone()).unwrap();
    server
        .start(rec.handler(h.clock.clone(), |_, _| async {
            tokio::time::sleep(secs(600)).await;
            Ok(())
        }))
        .unwrap();
    h.eventually(secs(10), "one task runs and two wait", || async {
        rec.len() == 1 && h.queue("default").await.active == 3
    })
    .await;
    server.shutdown().await;
    let info = h.queue("default").await;
    assert_eq!((info.pending, info.active, info.retry), (3, 0, 0), "all three went back to pending: {info:?}");
    let holders = h.broker.slot_holders(&SlotKey::new("type:resize").unwrap(), h.now()).await.unwrap();
    assert!(holders.is_empty(), "no slot is left held: {holders:?}");

    let again = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(again.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(10), "every task has run", || async { h.queue("default").await.processed == 3 }).await;
    server.shutdown().await;
    assert!(again.calls().iter().all(|c| c.retry_count == 0), "giving a task back uses no retry");
}

/// Two servers on the Redis (or Cluster) at `url`, each with its own connection as separate
/// processes would have, under a shared limit of 2: never more than 2 at once, no task ever in
/// the retry set, none retried, every slot given back.
async fn tasks_wait_for_a_shared_slot_on(url: &str) {
    use asynq_core::broker::ConcurrencySlots;
    use asynq_core::broker::Inspect;
    use asynq_core::slots::SlotKey;
    let monitor = asynq_redis::RedisBroker::connect(url).await.unwrap();
    let client = asynq_client::Client::new(monitor.clone());
    for _ in 0..WAITING_TASKS {
        client.enqueue(&Task::new("resize", ""), TaskOptions::new()).await.unwrap();
    }
    let (rec, peak) = (Recorder::default(), Arc::new(Peak::default()));
    let begin = std::time::Instant::now();
    let mut servers = Vec::new();
    for _ in 0..2 {
        let broker = asynq_redis::RedisBroker::connect(url).await.unwrap();
        let config = Config { concurrency: 4, ..Config::default() };
        servers.push(limited_server(&broker, config, &rec, &peak));
    }
    let queue = asynq_core::QueueName::new("default").unwrap();
    let ever_retried = AtomicU64::new(0);
    asynq_tests::wait_for("every task ran to its end", || async {
        let info = monitor.queue_info(&queue).await.unwrap();
        ever_retried.fetch_max(info.retry as u64, Ordering::SeqCst);
        rec.len() >= WAITING_TASKS && peak.running() == 0
    })
    .await;
    // Not asserted (wall-clock time); `cargo xtask bench` is where time is measured.
    eprintln!("{WAITING_TASKS} tasks of {WORK:?} under a shared limit of 2 took {:?}", begin.elapsed());
    for server in &mut servers {
        server.shutdown().await;
    }
    assert_eq!(peak.max(), 2, "at most 2 ran at once across both servers, and 2 did");
    assert_eq!(ever_retried.load(Ordering::SeqCst), 0, "no task over the limit ever went to the retry set");
    assert_eq!(rec.len(), WAITING_TASKS, "each task ran once");
    assert!(rec.calls().iter().all(|c| c.retry_count == 0), "waiting for a slot uses no retry");
    let now = asynq_core::SystemClock.now();
    let holders = monitor.slot_holders(&SlotKey::new("type:resize").unwrap(), now).await.unwrap();
    assert!(holders.is_empty(), "every slot was given back: {holders:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_tasks_over_a_shared_limit_wait_for_a_slot_and_never_retry() {
    let redis = asynq_tests::RedisServer::start();
    tasks_wait_for_a_shared_slot_on(&redis.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_tasks_over_a_shared_limit_wait_for_a_slot_and_never_retry() {
    let cluster = asynq_tests::RedisCluster::start(3);
    tasks_wait_for_a_shared_slot_on(&format!("redis-cluster://{}", cluster.addrs().join(","))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_waiting_server_takes_a_dead_holders_slot_once_its_hold_expires() {
    use asynq_core::broker::ConcurrencySlots;
    use asynq_core::slots::SharedLimit;
    let redis = asynq_tests::RedisServer::start();
    let broker = asynq_redis::RedisBroker::connect(&redis.url()).await.unwrap();
    // A worker that died held both slots; its holds run out in two seconds, nobody renews them
    // and nothing is published when they do.
    let limit = SharedLimit::new("type:resize", 2).unwrap();
    let held_until = asynq_core::SystemClock.now() + secs(2);
    for dead in ["dead-1", "dead-2"] {
        let holder = asynq_core::TaskId::new(dead).unwrap();
        assert!(broker.take_slot(&limit, &holder, asynq_core::SystemClock.now(), held_until).await.unwrap());
    }
    asynq_client::Client::new(broker.clone()).enqueue(&Task::new("resize", ""), TaskOptions::new()).await.unwrap();
    let (rec, peak) = (Recorder::default(), Arc::new(Peak::default()));
    let config = Config { concurrency: 2, task_check_interval: secs(10), ..Config::default() };
    let mut server = limited_server(&broker, config, &rec, &peak);
    asynq_tests::wait_for("the task ran", || {
        let done = rec.len() == 1 && peak.running() == 0;
        async move { done }
    })
    .await;
    server.shutdown().await;
    let call = &rec.calls()[0];
    assert!(call.at >= held_until, "the task waited for the dead holds to expire");
    assert_eq!(call.retry_count, 0, "waiting for a slot uses no retry");
}

#[tokio::test]
async fn limits_that_cannot_apply_are_refused() {
    let h = Harness::new();
    let limit = RateLimit::new(1.0, 1).unwrap();
    let unknown_queue = Config { rate_limits: [("elsewhere".to_owned(), limit)].into(), ..h.config("default", 1) };
    let zero_type_limit = Config { type_concurrency: [("video".to_owned(), 0)].into(), ..h.config("default", 1) };
    let empty_type = Config { type_concurrency: [(String::new(), 1)].into(), ..h.config("default", 1) };
    let zero_shared = Config { shared_type_concurrency: [("video".to_owned(), 0)].into(), ..h.config("default", 1) };
    let empty_shared = Config { shared_type_concurrency: [(String::new(), 1)].into(), ..h.config("default", 1) };
    for config in [unknown_queue, zero_type_limit, empty_type, zero_shared, empty_shared] {
        let result = Server::new(h.broker.clone(), config);
        assert!(matches!(result, Err(Error::InvalidArgument { .. })), "{:?}", result.err());
    }
}

/// Waits (in tokio time, up to a minute) until the `WAITING_TASKS` tasks of queue `default` have
/// run; returns the most tasks its retry set ever held meanwhile, and how long it took.
async fn until_every_task_ran(h: &Harness) -> (u64, std::time::Duration) {
    let begin = tokio::time::Instant::now();
    let ever_retried = AtomicU64::new(0);
    h.eventually(secs(60), "every task has run", || async {
        let info = h.queue("default").await;
        ever_retried.fetch_max(info.retry as u64, Ordering::SeqCst);
        info.processed == WAITING_TASKS as u64
    })
    .await;
    (ever_retried.load(Ordering::SeqCst), begin.elapsed())
}
