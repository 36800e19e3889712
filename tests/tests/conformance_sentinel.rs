//! The broker conformance suite against `RedisBroker` connected through Sentinel.

use asynq_conformance::{BrokerFactory, Capability};
use asynq_core::{ArchiveLimits, Clock};
use asynq_redis::RedisBroker;
use asynq_tests::RedisSentinel;
use asynq_tests::{redis_broker, redis_broker_with_archive_limits};
use std::sync::Arc;

/// Builds brokers on the master of one private master + replica + Sentinel set.
struct SentinelFactory(RedisSentinel);

impl BrokerFactory for SentinelFactory {
    type Broker = RedisBroker;
    type Store = RedisBroker;

    fn name(&self) -> &'static str {
        "redis-sentinel"
    }

    /// Redis expires uniqueness locks (`SET NX EX`) by its own clock, not the simulated one.
    fn lacks(&self) -> &'static [Capability] {
        &[Capability::ClockDrivenExpiry]
    }

    async fn broker(&self, clock: Arc<dyn Clock>) -> RedisBroker {
        let url = format!("redis-sentinel://{}?master={}", self.0.sentinel_addr(), self.0.master_name());
        redis_broker(&url, clock).await
    }

    async fn broker_with_archive_limits(&self, clock: Arc<dyn Clock>, limits: ArchiveLimits) -> RedisBroker {
        let url = format!("redis-sentinel://{}?master={}", self.0.sentinel_addr(), self.0.master_name());
        redis_broker_with_archive_limits(&url, clock, limits).await
    }

    fn store(&self, broker: &RedisBroker) -> RedisBroker {
        broker.clone()
    }
}

asynq_conformance::broker_conformance!(SentinelFactory(RedisSentinel::start("asynq-conformance")));
