//! The capability of rate limits shared by every server.

use crate::rate_limit::RateLimit;
use crate::{QueueName, Result};
use async_trait::async_trait;
use std::time::SystemTime;

/// The broker role behind rate limits: one token bucket per queue, shared by every server of
/// the broker.
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Refills `queue`'s bucket up to `now` and takes up to `wanted` tokens, atomically, as
    /// [`TokenBucket::take`](crate::rate_limit::TokenBucket::take) does. Returns how many were granted (0 to `wanted`).
    async fn take_tokens(&self, queue: &QueueName, limit: &RateLimit, wanted: u32, now: SystemTime) -> Result<u32>;

    /// Puts back `count` tokens that [`RateLimiter::take_tokens`] granted but no task used
    /// (the queue had fewer ready tasks), up to the burst.
    async fn give_back_tokens(&self, queue: &QueueName, limit: &RateLimit, count: u32) -> Result<()>;
}
