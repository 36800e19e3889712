//! The sharded scenarios of `asynq-bench` on a 2-master Redis Cluster, with small sizes: the
//! fill spreads the tasks over the shards, two drains side by side run each task once between
//! them, and the check tells a drained queue from one that is not.

use asynq_bench::scenarios::{self, SHARDED_QUEUE};
use asynq_client::Inspector;
use asynq_redis::RedisBroker;
use asynq_tests::RedisCluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_drains_run_every_task_of_a_sharded_queue_once() {
    let cluster = RedisCluster::start(2);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    let filled = scenarios::sharded_fill(&url, 301, 4, 3).await.unwrap();
    assert_eq!((filled.scenario.as_str(), filled.tasks), ("sharded-fill", 301));
    let inspector = Inspector::new(RedisBroker::connect(&url).await.unwrap());
    let info = inspector.queue_info(SHARDED_QUEUE).await.unwrap();
    assert_eq!((info.pending, info.shards.len()), (301, 4));
    for shard in &info.shards {
        let pending = inspector.queue_info(shard).await.unwrap().pending;
        assert!((75..=76).contains(&pending), "{shard} holds {pending} of 301 placed in turn");
    }
    let early = scenarios::sharded_check(&url, 301).await.unwrap_err();
    assert!(early.to_string().contains("301 tasks left"), "{early}");

    let (first, second) = tokio::join!(
        scenarios::sharded_drain(&url, 301, 10, TIMEOUT),
        scenarios::sharded_drain(&url, 301, 10, TIMEOUT)
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!((first.scenario.as_str(), first.tasks, first.concurrency), ("sharded-drain", 301, Some(10)));
    assert_eq!(first.handled.unwrap() + second.handled.unwrap(), 301, "every task ran once between them");
    let checked = scenarios::sharded_check(&url, 301).await.unwrap();
    assert_eq!(checked.handled, Some(301));
    let wrong = scenarios::sharded_check(&url, 300).await.unwrap_err();
    assert!(wrong.to_string().contains("301 processed of 300"), "{wrong}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_needs_the_queue_declared_and_a_cluster() {
    let cluster = RedisCluster::start(1);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    let undeclared = scenarios::sharded_drain(&url, 1, 1, TIMEOUT).await.unwrap_err();
    assert!(format!("{undeclared:#}").contains("not declared"), "{undeclared:#}");
    scenarios::sharded_fill(&url, 2, 2, 1).await.unwrap();
    // One master serves every slot, so a plain connection reads the declaration; the counters
    // are read over a Cluster connection, which a plain URL does not give.
    let plain = scenarios::sharded_drain(&cluster.urls()[0], 2, 1, TIMEOUT).await.unwrap_err();
    assert!(format!("{plain:#}").contains("run on a Redis Cluster"), "{plain:#}");
}
