//! Through Sentinel, the broker follows the master across a failover: writes go on to the new
//! master without a restart of the process.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Dequeue;
use asynq_redis::RedisBroker;
use asynq_tests::RedisSentinel;
use asynq_tests::wait_for;

fn sentinel_url(set: &RedisSentinel) -> String {
    format!("redis-sentinel://{}?master={}", set.sentinel_addr(), set.master_name())
}

/// Waits until the replica holds `count` pending tasks, so that the failover loses nothing
/// (replication is asynchronous; what a failover may lose is the chaos suite's subject).
async fn replicated(set: &RedisSentinel, count: i64) {
    wait_for("the replica to catch up", || async {
        set.replica().command(&["LLEN", "asynq:{default}:pending"]).ok().and_then(|n| n.as_int()) == Some(count)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_follow_the_master_after_a_failover() {
    let mut set = RedisSentinel::start("asynq-failover");
    let broker = RedisBroker::connect(&sentinel_url(&set)).await.unwrap();
    let client = Client::new(broker.clone());
    let before = client.enqueue(&Task::new("report", "before"), TaskOptions::new()).await.unwrap();
    replicated(&set, 1).await;

    // The old master becomes a replica of the new one: our connection to it now gets
    // READONLY, and the broker must move to the new master and send the write again.
    tokio::task::block_in_place(|| {
        set.failover();
        set.rejoin_replica();
    });
    // The refused write waits for the Sentinels to name the new master and goes there: the
    // caller sees no error.
    let after = client.enqueue(&Task::new("report", "after"), TaskOptions::new()).await.unwrap();

    let pending = set.master().command(&["LRANGE", "asynq:{default}:pending", "0", "-1"]).unwrap();
    let ids: Vec<String> = pending.as_array().unwrap().iter().filter_map(|v| v.as_str().map(str::to_owned)).collect();
    assert!(ids.iter().any(|id| *id == after.id), "the new master holds the task enqueued after the failover: {ids:?}");
    assert!(ids.iter().any(|id| *id == before.id), "and the one replicated before it: {ids:?}");
    let taken = broker.dequeue(&[QueueName::from_static("default")], 10).await.unwrap();
    assert_eq!(taken.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_reconnects_to_the_new_master_when_the_old_one_dies() {
    let mut set = RedisSentinel::start("asynq-failover-kill");
    let broker = RedisBroker::connect(&sentinel_url(&set)).await.unwrap();
    let inspector = Inspector::new(broker.clone());
    let client = Client::new(broker);
    client.enqueue(&Task::new("report", "before"), TaskOptions::new()).await.unwrap();
    replicated(&set, 1).await;

    tokio::task::block_in_place(|| {
        set.failover();
        set.replica_mut().kill();
    });
    // Calls fail while the connection still points at the dead server; the broker asks the
    // Sentinels again and the next calls reach the new master.
    wait_for("an enqueue to reach the new master", || async {
        client.enqueue(&Task::new("report", "after"), TaskOptions::new()).await.is_ok()
    })
    .await;
    assert_eq!(inspector.queue_info("default").await.unwrap().pending, 2);
}
