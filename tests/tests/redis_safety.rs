//! A Redis configured to evict keys when full can drop tasks without an error; the broker says
//! so when it connects.

use asynq_redis::RedisBroker;
use asynq_tests::RedisServer;

#[tokio::test]
async fn an_evicting_redis_is_reported_at_connect() {
    let server = RedisServer::start();
    let broker = RedisBroker::connect(&server.url()).await.unwrap();
    assert_eq!(broker.data_loss_warnings(), &[] as &[String], "the default policy is noeviction");

    server.command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]).unwrap();
    let broker = RedisBroker::connect(&server.url()).await.unwrap();
    let warnings = broker.data_loss_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("maxmemory-policy allkeys-lru"), "{}", warnings[0]);
    assert!(warnings[0].contains("set maxmemory-policy noeviction"), "{}", warnings[0]);
}

#[tokio::test]
async fn every_master_of_a_cluster_is_checked() {
    let cluster = asynq_tests::RedisCluster::start(3);
    let broker = RedisBroker::connect(&format!("redis-cluster://{}", cluster.addrs().join(","))).await.unwrap();
    assert!(broker.data_loss_warnings().is_empty());

    cluster.nodes()[1].command(&["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"]).unwrap();
    let broker = RedisBroker::connect(&format!("redis-cluster://{}", cluster.addrs().join(","))).await.unwrap();
    assert_eq!(broker.data_loss_warnings().len(), 1, "{:?}", broker.data_loss_warnings());
    assert!(broker.data_loss_warnings()[0].contains("volatile-ttl"));
}
