//! Shorthands for the end-to-end tests on a real redis-server: a broker on a given clock, and a
//! bounded wait for a condition that real network IO makes true.

use asynq_core::Clock;
use asynq_redis::{RedisBroker, RedisConfig};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A `RedisBroker` on the Redis at `url` (in the namespace the URL names, if any) that reads time
/// from `clock`.
pub async fn redis_broker(url: &str, clock: Arc<dyn Clock>) -> RedisBroker {
    let config = RedisConfig { clock, ..RedisConfig::from_url(url).expect("a valid test URL") };
    RedisBroker::connect_with(config).await.expect("the test Redis accepts connections")
}

/// [`redis_broker`] with every queue's archive trimmed to `limits`.
pub async fn redis_broker_with_archive_limits(
    url: &str,
    clock: Arc<dyn Clock>,
    limits: asynq_core::ArchiveLimits,
) -> RedisBroker {
    let config = RedisConfig { clock, archive_limits: limits, ..RedisConfig::from_url(url).expect("a valid test URL") };
    RedisBroker::connect_with(config).await.expect("the test Redis accepts connections")
}

/// Polls `done` every 20 ms for up to 20 s of real time; panics with `what` if it never holds.
pub async fn wait_for<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..1_000 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}
