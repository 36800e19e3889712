//! Per-queue rate limits: a token bucket, shared by every server through the broker, that
//! bounds how many tasks of a queue start per second.
//!
//! [`RateLimit`] is the validated setting, [`TokenBucket`] the pure refill-and-take arithmetic
//! every backend applies atomically, and [`RateLimiter`](crate::broker::RateLimiter) the broker role the processor asks
//! for tokens before it dequeues from a limited queue. Time comes from the caller's clock, so a
//! simulated clock drives the bucket as it drives everything else. Go asynq has no rate limits
//! (its issue #609); nothing here is read or written by Go.

use crate::{Error, Result};
use std::time::Duration;

/// How many tasks of a queue may start per second, across every server sharing the broker.
///
/// A bucket holds up to `burst` tokens and gains `per_second` tokens a second; each started
/// task takes one. An idle queue may therefore start `burst` tasks at once, then `per_second`
/// a second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    per_second: f64,
    burst: u32,
}

impl RateLimit {
    /// A limit of `per_second` tasks a second (fractions allowed: `0.5` is one task every two
    /// seconds) with bursts of up to `burst` tasks.
    ///
    /// Errors: [`Error::InvalidArgument`] when `per_second` is not a finite number above zero
    /// or `burst` is zero.
    pub fn new(per_second: f64, burst: u32) -> Result<Self> {
        if !per_second.is_finite() || per_second <= 0.0 {
            return Err(Error::invalid("per_second", format!("must be a finite number above zero, got {per_second}")));
        }
        if burst == 0 {
            return Err(Error::invalid("burst", "must be at least 1"));
        }
        Ok(Self { per_second, burst })
    }

    /// Tokens gained per second.
    pub fn per_second(&self) -> f64 {
        self.per_second
    }

    /// The most tokens the bucket holds.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// How long an empty bucket takes to gain one token: the longest a caller that was granted
    /// fewer tokens than it wanted must wait before asking again.
    pub fn token_interval(&self) -> Duration {
        Duration::try_from_secs_f64(1.0 / self.per_second).unwrap_or(Duration::MAX)
    }

    /// How long a full bucket keeps meaning anything: after this long unused, a bucket is full
    /// again, so a backend may forget it.
    pub fn refill_time(&self) -> Duration {
        Duration::try_from_secs_f64(f64::from(self.burst) / self.per_second).unwrap_or(Duration::MAX)
    }
}

/// The state of one queue's bucket: the tokens it held when last updated, and when that was.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TokenBucket {
    /// Tokens held at `updated_at_micros`, between 0 and the burst.
    pub tokens: f64,
    /// Unix microseconds of the last update.
    pub updated_at_micros: i64,
}

impl TokenBucket {
    /// Refills `bucket` (a new bucket, `None`, starts full) up to `now_micros` and takes up to
    /// `wanted` whole tokens. Returns the new state and how many were taken.
    ///
    /// A `now_micros` before the last update (clocks of several servers disagree) refills
    /// nothing and keeps the later update time, so the bucket never gains tokens twice.
    pub fn take(bucket: Option<Self>, limit: &RateLimit, wanted: u32, now_micros: i64) -> (Self, u32) {
        let burst = f64::from(limit.burst);
        let mut bucket = bucket.unwrap_or(Self { tokens: burst, updated_at_micros: now_micros });
        let elapsed = now_micros.saturating_sub(bucket.updated_at_micros).max(0) as f64 / 1e6;
        bucket.tokens = (bucket.tokens + elapsed * limit.per_second).min(burst);
        bucket.updated_at_micros = bucket.updated_at_micros.max(now_micros);
        let granted = bucket.tokens.floor().min(f64::from(wanted)).max(0.0);
        bucket.tokens -= granted;
        (bucket, granted as u32)
    }

    /// Puts back `count` tokens taken but not used, up to the burst.
    pub fn give_back(mut self, limit: &RateLimit, count: u32) -> Self {
        self.tokens = (self.tokens + f64::from(count)).min(f64::from(limit.burst));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_limits_that_mean_nothing() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(RateLimit::new(bad, 1), Err(Error::InvalidArgument { field: "per_second", .. })));
        }
        assert!(matches!(RateLimit::new(1.0, 0), Err(Error::InvalidArgument { field: "burst", .. })));
    }

    #[test]
    fn refills_at_the_rate_and_caps_at_the_burst() {
        let limit = RateLimit::new(5.0, 3).unwrap();
        let (bucket, granted) = TokenBucket::take(None, &limit, 10, 0);
        assert_eq!((granted, bucket.tokens), (3, 0.0));
        let (bucket, granted) = TokenBucket::take(Some(bucket), &limit, 10, 500_000);
        assert_eq!(granted, 2);
        let (bucket, granted) = TokenBucket::take(Some(bucket), &limit, 10, 100_000_000);
        assert_eq!(granted, 3);
        let (_, granted) = TokenBucket::take(Some(bucket), &limit, 10, 99_000_000);
        assert_eq!(granted, 0, "an earlier clock refills nothing");
    }

    #[test]
    fn given_back_tokens_stay_under_the_burst() {
        let limit = RateLimit::new(1.0, 2).unwrap();
        let (bucket, _) = TokenBucket::take(None, &limit, 1, 0);
        assert_eq!(bucket.give_back(&limit, 5).tokens, 2.0);
        assert_eq!(limit.token_interval(), Duration::from_secs(1));
        assert_eq!(limit.refill_time(), Duration::from_secs(2));
    }
}
