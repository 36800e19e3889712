//! The broker conformance suite against `RedisBroker` on a 3-master Redis Cluster: every script
//! keeps to one hash slot, so every case behaves as on a single server. The brokers work in a
//! namespace of their own (`tenant-a`), so the suite also shows that every script and every
//! key works under another prefix; the single-server and Sentinel suites use Go's, `asynq`.

use asynq_conformance::{BrokerFactory, Capability};
use asynq_core::{ArchiveLimits, Clock};
use asynq_redis::RedisBroker;
use asynq_tests::RedisCluster;
use asynq_tests::{redis_broker, redis_broker_with_archive_limits};
use std::sync::Arc;

/// Builds brokers on one private 3-master cluster.
struct ClusterFactory(RedisCluster);

impl BrokerFactory for ClusterFactory {
    type Broker = RedisBroker;
    type Store = RedisBroker;

    fn name(&self) -> &'static str {
        "redis-cluster"
    }

    /// Redis expires uniqueness locks (`SET NX EX`) by its own clock, not the simulated one.
    fn lacks(&self) -> &'static [Capability] {
        &[Capability::ClockDrivenExpiry]
    }

    async fn broker(&self, clock: Arc<dyn Clock>) -> RedisBroker {
        let url = format!("redis-cluster://{}?namespace=tenant-a", self.0.addrs().join(","));
        redis_broker(&url, clock).await
    }

    async fn broker_with_archive_limits(&self, clock: Arc<dyn Clock>, limits: ArchiveLimits) -> RedisBroker {
        let url = format!("redis-cluster://{}?namespace=tenant-a", self.0.addrs().join(","));
        redis_broker_with_archive_limits(&url, clock, limits).await
    }

    fn store(&self, broker: &RedisBroker) -> RedisBroker {
        broker.clone()
    }
}

asynq_conformance::broker_conformance!(ClusterFactory(RedisCluster::start(3)));
