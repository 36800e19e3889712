//! Per-queue rate-limit token buckets, kept beside the queues and updated under the broker's
//! one lock, so every clone of the broker shares them and each take is atomic.

use crate::MemoryBroker;
use async_trait::async_trait;
use asynq_core::QueueName;
use asynq_core::Result;
use asynq_core::broker::RateLimiter;
use asynq_core::rate_limit::{RateLimit, TokenBucket};
use asynq_core::time::unix_nanos;
use std::time::SystemTime;

#[async_trait]
impl RateLimiter for MemoryBroker {
    async fn take_tokens(&self, queue: &QueueName, limit: &RateLimit, wanted: u32, now: SystemTime) -> Result<u32> {
        let mut state = self.state();
        let bucket = state.rate_buckets.get(queue).copied();
        let (bucket, granted) = TokenBucket::take(bucket, limit, wanted, unix_nanos(now) / 1_000);
        state.rate_buckets.insert(queue.to_owned(), bucket);
        Ok(granted)
    }

    async fn give_back_tokens(&self, queue: &QueueName, limit: &RateLimit, count: u32) -> Result<()> {
        if let Some(bucket) = self.state().rate_buckets.get_mut(queue) {
            *bucket = bucket.give_back(limit, count);
        }
        Ok(())
    }
}
