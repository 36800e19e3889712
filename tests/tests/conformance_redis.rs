//! The broker conformance suite against `RedisBroker`, each case on its own redis-server.

use asynq_core::Clock;
use asynq_redis::{RedisBroker, RedisConfig, RedisTarget};
use asynq_tests::RedisServer;
use asynq_tests::conformance::{BrokerFactory, Capability};
use std::sync::Arc;

/// Builds brokers on one private redis-server.
struct RedisFactory(RedisServer);

impl BrokerFactory for RedisFactory {
    type Broker = RedisBroker;

    fn name(&self) -> &'static str {
        "redis"
    }

    /// Redis expires uniqueness locks (`SET NX EX`) by its own clock, not the simulated one.
    fn lacks(&self) -> &'static [Capability] {
        &[Capability::ClockDrivenExpiry]
    }

    async fn broker(&self, clock: Arc<dyn Clock>) -> RedisBroker {
        let config = RedisConfig { clock, ..RedisConfig::new(RedisTarget::from_url(&self.0.url()).unwrap()) };
        RedisBroker::connect_with(config).await.unwrap()
    }
}

asynq_tests::broker_conformance!(RedisFactory(RedisServer::start()));
