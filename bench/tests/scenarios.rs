//! Every scenario of `asynq-bench` runs to completion against a throwaway Redis, with small
//! sizes, and reports numbers that make sense.

use asynq_bench::scenarios::{self, Layout};
use asynq_bench::workload::QUEUE;
use asynq_core::QueueName;
use asynq_core::broker::Inspect;
use asynq_redis::RedisBroker;
use asynq_tests::RedisServer;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

async fn queue_counts(url: &str) -> (usize, u64) {
    let info = RedisBroker::connect(url).await.unwrap().queue_info(&QueueName::from_static(QUEUE)).await.unwrap();
    (info.pending, info.processed_total)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_baseline_counts_commands_in_whole_pipelines() {
    let redis = RedisServer::start();
    let single = scenarios::redis_ping(&redis.url(), 20, 1).await.unwrap();
    assert_eq!((single.scenario.as_str(), single.tasks), ("redis-ping", 20));
    assert_eq!(scenarios::redis_ping(&redis.url(), 25, 10).await.unwrap().tasks, 30);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_script_baseline_counts_calls_in_whole_evals_and_leaves_nothing() {
    let redis = RedisServer::start();
    let measured = scenarios::redis_calls_from_lua(&redis.url(), 1).await.unwrap();
    assert_eq!((measured.scenario.as_str(), measured.tasks), ("redis-calls-from-lua", scenarios::CALLS_PER_EVAL));
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let keys: i64 = redis::cmd("DBSIZE").query_async(&mut connection).await.unwrap();
    assert_eq!(keys, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn enqueue_scenarios_store_every_task() {
    let redis = RedisServer::start();
    let one_by_one = scenarios::enqueue(&redis.url(), 50, None).await.unwrap();
    assert_eq!((one_by_one.scenario.as_str(), one_by_one.tasks), ("enqueue", 50));
    assert!(one_by_one.tasks_per_s.is_some_and(|rate| rate > 0.0));
    let spinning = scenarios::enqueue(&redis.url(), 50, Some(Duration::from_micros(200))).await.unwrap();
    assert_eq!(spinning.tasks, 50);
    let batched = scenarios::enqueue_batch(&redis.url(), 50, 20, false, None).await.unwrap();
    assert_eq!(batched.tasks, 50);
    let concurrent = scenarios::enqueue_concurrent(&redis.url(), 70, 8).await.unwrap();
    assert_eq!((concurrent.tasks, concurrent.concurrency), (70, Some(8)));
    scenarios::fill(&redis.url(), 30, Some(1_000)).await.unwrap();
    assert_eq!(queue_counts(&redis.url()).await, (250, 0));
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let logged = asynq_core::broker::EventLog::read_events(
        &broker,
        &QueueName::from_static(QUEUE),
        asynq_core::events::EventPosition::Oldest,
        1_000,
    )
    .await
    .unwrap();
    assert_eq!(logged.events.len(), 30, "fill --events logs the tasks it enqueues, and only those");
    scenarios::enqueue_batch(&redis.url(), 40, 20, true, None).await.unwrap();
    let info =
        RedisBroker::connect(&redis.url()).await.unwrap().queue_info(&QueueName::from_static(QUEUE)).await.unwrap();
    assert_eq!((info.pending, info.scheduled), (250, 40));
}

#[tokio::test(flavor = "multi_thread")]
async fn drain_needs_a_filled_queue_and_empties_it() {
    let redis = RedisServer::start();
    assert!(scenarios::drain(&redis.url(), 10, 4, 0, TIMEOUT).await.is_err());
    scenarios::fill(&redis.url(), 100, None).await.unwrap();
    let drained = scenarios::drain(&redis.url(), 100, 4, 0, TIMEOUT).await.unwrap();
    assert_eq!((drained.tasks, drained.concurrency), (100, Some(4)));
    assert!(drained.started_unix_us < drained.finished_unix_us);
    assert_eq!(queue_counts(&redis.url()).await, (0, 100));
}

#[tokio::test(flavor = "multi_thread")]
async fn drain_beside_empty_queues_empties_the_busy_one() {
    let redis = RedisServer::start();
    scenarios::fill(&redis.url(), 100, None).await.unwrap();
    let drained = scenarios::drain(&redis.url(), 100, 4, 50, TIMEOUT).await.unwrap();
    assert_eq!(drained.tasks, 100);
    assert_eq!(queue_counts(&redis.url()).await, (0, 100));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_drains_share_one_queue() {
    let redis = RedisServer::start();
    let url = redis.url();
    scenarios::fill(&url, 200, None).await.unwrap();
    let (a, b) = tokio::join!(scenarios::drain(&url, 200, 3, 0, TIMEOUT), scenarios::drain(&url, 200, 3, 0, TIMEOUT));
    a.unwrap();
    b.unwrap();
    assert_eq!(queue_counts(&url).await, (0, 200));
}

#[tokio::test(flavor = "multi_thread")]
async fn enqueue_and_process_processes_everything_it_enqueues() {
    let redis = RedisServer::start();
    let measured = scenarios::enqueue_and_process(&redis.url(), 100, 4, TIMEOUT).await.unwrap();
    assert_eq!(measured.tasks, 100);
    assert_eq!(queue_counts(&redis.url()).await, (0, 100));
}

#[tokio::test(flavor = "multi_thread")]
async fn pickup_latency_reports_percentiles_of_its_samples() {
    let redis = RedisServer::start();
    // With the start recorded apart, and with the fetch (`Config::start_with_fetch`).
    for start_with_fetch in [false, true] {
        let layout = Layout::Named { empty_queues: 0 };
        let (gap, max) = (Duration::from_millis(5), Duration::from_secs(30));
        let measured = scenarios::pickup_latency(&redis.url(), 5, 2, layout, start_with_fetch, gap, max).await.unwrap();
        assert_eq!((measured.tasks, measured.tasks_per_s), (5, None));
        let (p50, p99) = (measured.pickup_p50_ms.unwrap(), measured.pickup_p99_ms.unwrap());
        assert!(0.0 < p50 && p50 <= p99, "p50 {p50} ms, p99 {p99} ms");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quiet_tenant_is_sampled_beside_a_busy_one_served_by_a_pattern() {
    let redis = RedisServer::start();
    let layout = Layout::Tenants { tenants: 3, busy_backlog: 200 };
    let (gap, max) = (Duration::from_millis(5), Duration::from_secs(30));
    let measured = scenarios::pickup_latency(&redis.url(), 5, 2, layout, false, gap, max).await.unwrap();
    assert_eq!(measured.tasks, 5, "only the quiet tenant's tasks are samples");
    assert!(measured.pickup_p50_ms.unwrap() > 0.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_runs_a_server_for_the_given_time() {
    let redis = RedisServer::start();
    let measured = scenarios::idle(&redis.url(), 2, None, Duration::from_millis(300)).await.unwrap();
    assert_eq!((measured.tasks, measured.tasks_per_s), (0, None));
    assert!(measured.elapsed_s >= 0.3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_drain_takes_a_slice_of_a_deeper_backlog() {
    let redis = RedisServer::start();
    scenarios::fill(&redis.url(), 300, None).await.unwrap();
    let drained = scenarios::drain(&redis.url(), 100, 4, 0, TIMEOUT).await.unwrap();
    assert_eq!(drained.tasks, 100);
    // The server stops in the middle of its fetches: none of them may leave a task active
    // (taken, then dropped with the fetch, until lease recovery).
    let info =
        RedisBroker::connect(&redis.url()).await.unwrap().queue_info(&QueueName::from_static(QUEUE)).await.unwrap();
    let (pending, processed) = (info.pending, info.processed_total);
    assert_eq!(info.active, 0, "{info:?}");
    assert!(processed >= 100 && pending + processed as usize == 300, "{pending} pending, {processed} processed");
}

#[tokio::test(flavor = "multi_thread")]
async fn failing_for_good_fills_the_archive_up_to_its_cap() {
    let redis = RedisServer::start();
    let url = redis.url();
    let broker = RedisBroker::connect(&url).await.unwrap();
    scenarios::fill_failing(&url, 30, 20).await.unwrap();
    let info = broker.queue_info(&QueueName::from_static(QUEUE)).await.unwrap();
    assert_eq!((info.pending, info.archived), (30, 20));
    let failed = scenarios::fail_for_good(&url, 30, 4, TIMEOUT).await.unwrap();
    assert_eq!((failed.scenario.as_str(), failed.tasks), ("fail-for-good", 30));
    let info = broker.queue_info(&QueueName::from_static(QUEUE)).await.unwrap();
    assert_eq!((info.pending, info.archived, info.processed_total, info.failed_total), (0, 50, 30, 30));
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_servers_are_all_listed_by_the_inspector() {
    let redis = RedisServer::start();
    let measured = scenarios::idle_servers(&redis.url(), 3, 1, Duration::from_millis(300)).await.unwrap();
    assert_eq!((measured.tasks, measured.concurrency), (0, Some(1)));
    assert!(measured.servers_ls_ms.is_some_and(|ms| ms > 0.0));
    assert!(scenarios::idle_servers(&redis.url(), 0, 1, Duration::ZERO).await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_storm_of_scheduled_tasks_is_forwarded_while_fresh_tasks_are_picked_up() {
    let redis = RedisServer::start();
    let url = redis.url();
    assert!(scenarios::scheduled_storm(&url, 10, 2, Duration::from_millis(5), TIMEOUT).await.is_err(), "not filled");
    scenarios::fill_scheduled(&url, 3_000).await.unwrap();
    let info = RedisBroker::connect(&url).await.unwrap().queue_info(&QueueName::from_static(QUEUE)).await.unwrap();
    assert_eq!((info.pending, info.scheduled), (0, 3_000));
    let storm = scenarios::scheduled_storm(&url, 3_000, 4, Duration::from_millis(1), TIMEOUT).await.unwrap();
    assert_eq!((storm.scenario.as_str(), storm.tasks), ("scheduled-storm", 3_000));
    assert!(storm.tasks_per_s.is_some_and(|rate| rate > 0.0));
    // The forwarder looks at the server's start: the whole storm is due then.
    assert!(storm.elapsed_s > 0.0, "{}", storm.elapsed_s);
    let info = RedisBroker::connect(&url).await.unwrap().queue_info(&QueueName::from_static(QUEUE)).await.unwrap();
    assert_eq!(info.scheduled, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn scheduled_tasks_are_timed_from_their_due_second() {
    let redis = RedisServer::start();
    let measured =
        asynq_bench::schedule::scheduled_on_time(&redis.url(), 10, Duration::from_secs(1), 2, TIMEOUT).await.unwrap();
    assert_eq!((measured.scenario.as_str(), measured.tasks), ("scheduled-on-time", 10));
    assert!(measured.pickup_p50_ms.is_some() && measured.pickup_p99_ms.is_some());
    assert!(asynq_bench::schedule::scheduled_on_time(&redis.url(), 0, Duration::ZERO, 1, TIMEOUT).await.is_err());
}
