//! The broker conformance suite against `RedisBroker`, each case on its own redis-server.

use asynq_conformance::{BrokerFactory, Capability};
use asynq_core::{ArchiveLimits, Clock};
use asynq_redis::RedisBroker;
use asynq_tests::RedisServer;
use asynq_tests::{redis_broker, redis_broker_with_archive_limits};
use std::sync::Arc;

/// Builds brokers on one private redis-server.
struct RedisFactory(RedisServer);

impl BrokerFactory for RedisFactory {
    type Broker = RedisBroker;
    type Store = RedisBroker;

    fn name(&self) -> &'static str {
        "redis"
    }

    /// Redis expires uniqueness locks (`SET NX EX`) by its own clock, not the simulated one.
    fn lacks(&self) -> &'static [Capability] {
        &[Capability::ClockDrivenExpiry]
    }

    async fn broker(&self, clock: Arc<dyn Clock>) -> RedisBroker {
        redis_broker(&self.0.url(), clock).await
    }

    async fn broker_with_archive_limits(&self, clock: Arc<dyn Clock>, limits: ArchiveLimits) -> RedisBroker {
        redis_broker_with_archive_limits(&self.0.url(), clock, limits).await
    }

    fn store(&self, broker: &RedisBroker) -> RedisBroker {
        broker.clone()
    }
}

asynq_conformance::broker_conformance!(RedisFactory(RedisServer::start()));
