//! A Redis configured to evict keys when full can drop tasks without an error; the broker says
//! so when it connects, and the inspector says so to operators' tools whenever they ask.

use asynq_client::Inspector;
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

#[tokio::test]
async fn operators_read_the_eviction_risk_through_the_inspector() {
    let server = RedisServer::start();
    let inspector = Inspector::new(RedisBroker::connect(&server.url()).await.unwrap());
    assert_eq!(inspector.backend_info().await.unwrap().eviction_risks, [], "noeviction keeps every task");

    // The inspector reads the policy in force now, not the one seen at connect time.
    server.command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]).unwrap();
    let info = inspector.backend_info().await.unwrap();
    let policies: Vec<&str> = info.eviction_risks.iter().map(|r| r.policy.as_str()).collect();
    assert_eq!(policies, ["allkeys-lru"]);
    // The same sentence the connect-time check logs.
    let reconnected = RedisBroker::connect(&server.url()).await.unwrap();
    assert_eq!(reconnected.data_loss_warnings(), [info.eviction_risks[0].warning.clone()]);

    let memory = Inspector::new(asynq_memory::MemoryBroker::new());
    assert_eq!(memory.backend_info().await.unwrap().eviction_risks, [], "the memory broker never evicts");
}

#[tokio::test]
async fn the_inspector_reports_the_policy_of_every_cluster_master() {
    let cluster = asynq_tests::RedisCluster::start(3);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    let inspector = Inspector::new(RedisBroker::connect(&url).await.unwrap());
    assert_eq!(inspector.backend_info().await.unwrap().eviction_risks, []);

    cluster.nodes()[2].command(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]).unwrap();
    let risks = inspector.backend_info().await.unwrap().eviction_risks;
    assert_eq!(risks.iter().map(|r| r.policy.as_str()).collect::<Vec<_>>(), ["volatile-lru"]);
}

/// With Redis's default `hash-max-listpack-value` (64 bytes) a task's hash, whose `msg` alone is
/// longer, is stored as a hash table; with the 512 bytes the connect-time note recommends it is
/// one compact listpack and takes less memory. The note appears only while the limit is lower.
#[tokio::test]
async fn a_limit_that_stores_tasks_the_large_way_is_noted_at_connect() {
    let server = RedisServer::start();
    let stored = async |id: &str| {
        let client = asynq_client::Client::new(RedisBroker::connect(&server.url()).await.unwrap());
        let payload = "x".repeat(40);
        let options = asynq_client::TaskOptions::new().task_id(id);
        client.enqueue(&asynq_client::Task::new("email:welcome", payload), options).await.unwrap();
        let key = format!("asynq:{{default}}:t:{id}");
        let encoding = server.command(&["OBJECT", "ENCODING", &key]).unwrap();
        let usage = server.command(&["MEMORY", "USAGE", &key]).unwrap();
        (encoding.as_str().map(str::to_owned), usage.as_int().expect("MEMORY USAGE is a number"))
    };

    let broker = RedisBroker::connect(&server.url()).await.unwrap();
    let notes = broker.footprint_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("(now 64)") && notes[0].contains("set hash-max-listpack-value 512"), "{}", notes[0]);
    let (large, large_bytes) = stored("default-limit").await;
    assert_eq!(large.as_deref(), Some("hashtable"));

    server.command(&["CONFIG", "SET", "hash-max-listpack-value", "512"]).unwrap();
    assert!(RedisBroker::connect(&server.url()).await.unwrap().footprint_notes().is_empty());
    let (compact, compact_bytes) = stored("recommended-limit").await;
    assert_eq!(compact.as_deref(), Some("listpack"));
    assert!(compact_bytes < large_bytes, "{compact_bytes} < {large_bytes}");
}
