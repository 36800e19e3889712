//! [`RateLimiter`] over Redis: one token bucket per queue in `asynq:{<q>}:rate`, refilled and
//! taken from by one script, so every server sharing the Redis shares the limit. The time is
//! the caller's, in microseconds; the key expires once an unused bucket would be full again.

use crate::broker::RedisBroker;

use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::QueueName;
use asynq_core::Result;
use asynq_core::broker::RateLimiter;
use asynq_core::rate_limit::RateLimit;
use asynq_core::time::unix_nanos;
use redis::Script;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

/// The one script of this module: refill and take, or put back.
static TAKE_RATE_TOKENS: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/take_rate_tokens.lua")));

/// Runs the bucket script for `queue`; a negative `wanted` puts tokens back.
async fn run_bucket_script(
    broker: &RedisBroker,
    queue: &str,
    limit: &RateLimit,
    wanted: i64,
    now: SystemTime,
    context: &str,
) -> Result<u32> {
    let key_lifetime = limit.refill_time().saturating_add(Duration::from_secs(1));
    let mut call = ScriptCall::new(&TAKE_RATE_TOKENS);
    call.key(broker.queue_keys(queue).rate_limit());
    call.arg(unix_nanos(now) / 1_000);
    call.arg(limit.per_second());
    call.arg(limit.burst());
    call.arg(wanted);
    call.arg(u64::try_from(key_lifetime.as_millis()).unwrap_or(u64::MAX));
    call.run(&mut broker.conn(), context).await
}

#[async_trait]
impl RateLimiter for RedisBroker {
    async fn take_tokens(&self, queue: &QueueName, limit: &RateLimit, wanted: u32, now: SystemTime) -> Result<u32> {
        run_bucket_script(self, queue, limit, i64::from(wanted), now, "take rate-limit tokens").await
    }

    async fn give_back_tokens(&self, queue: &QueueName, limit: &RateLimit, count: u32) -> Result<()> {
        run_bucket_script(self, queue, limit, -i64::from(count), self.now(), "give back rate-limit tokens").await?;
        Ok(())
    }
}
