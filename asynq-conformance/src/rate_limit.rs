//! Rate-limit token buckets (`RateLimiter`): a new bucket starts full at the burst, refills at
//! the rate by the caller's clock and never beyond the burst, given-back tokens count again,
//! and every clone of a broker takes from the same bucket of a queue.

use super::BrokerFactory;
use super::fixture::{Fixture, millis, secs};
use asynq_core::QueueName;
use asynq_core::broker::RateLimiter;
use asynq_core::rate_limit::RateLimit;

/// A full bucket grants the burst, then refills at the rate as the clock moves.
pub async fn case_rate_bucket_refills_at_the_rate<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: RateLimiter,
{
    let t = Fixture::new(factory).await;
    let limit = RateLimit::new(5.0, 3).unwrap();
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("q"), &limit, 10, t.now()).await.unwrap(),
        3,
        "a new bucket is full"
    );
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("q"), &limit, 10, t.now()).await.unwrap(),
        0,
        "an empty bucket grants nothing"
    );
    t.advance(millis(100));
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("q"), &limit, 10, t.now()).await.unwrap(),
        0,
        "half a token is no token"
    );
    t.advance(millis(300));
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("q"), &limit, 10, t.now()).await.unwrap(),
        2,
        "0.4 s at 5/s is 2 tokens"
    );
    t.advance(secs(1));
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("q"), &limit, 1, t.now()).await.unwrap(),
        1,
        "no more than wanted"
    );
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("other"), &limit, 10, t.now()).await.unwrap(),
        3,
        "each queue has its own bucket"
    );
}

/// However long a bucket is left alone, it holds at most the burst.
pub async fn case_rate_bucket_caps_at_the_burst<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: RateLimiter,
{
    let t = Fixture::new(factory).await;
    let limit = RateLimit::new(2.0, 4).unwrap();
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 4, t.now()).await.unwrap(), 4);
    t.advance(secs(3600));
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 100, t.now()).await.unwrap(), 4);
    t.broker.give_back_tokens(&QueueName::from_static("q"), &limit, 100).await.unwrap();
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("q"), &limit, 100, t.now()).await.unwrap(),
        4,
        "given back up to the burst only"
    );
    t.broker.give_back_tokens(&QueueName::from_static("q"), &limit, 1).await.unwrap();
    assert_eq!(
        t.broker.take_tokens(&QueueName::from_static("q"), &limit, 100, t.now()).await.unwrap(),
        1,
        "a given-back token counts again"
    );
}

/// Two handles on one broker take from one bucket: together they never exceed the limit.
pub async fn case_rate_bucket_is_shared_by_every_handle<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: RateLimiter,
{
    let t = Fixture::new(factory).await;
    let other = t.broker.clone();
    let limit = RateLimit::new(1.0, 2).unwrap();
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 1, t.now()).await.unwrap(), 1);
    assert_eq!(other.take_tokens(&QueueName::from_static("q"), &limit, 5, t.now()).await.unwrap(), 1);
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 5, t.now()).await.unwrap(), 0);
    t.advance(secs(1));
    assert_eq!(other.take_tokens(&QueueName::from_static("q"), &limit, 5, t.now()).await.unwrap(), 1);
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 5, t.now()).await.unwrap(), 0);
}

/// A clock behind the bucket's last update (servers whose clocks disagree) adds no tokens.
pub async fn case_rate_bucket_ignores_a_clock_running_behind<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: RateLimiter,
{
    let t = Fixture::new(factory).await;
    let limit = RateLimit::new(1.0, 1).unwrap();
    let later = t.now() + secs(10);
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 1, later).await.unwrap(), 1);
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 1, t.now()).await.unwrap(), 0);
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 1, later + millis(999)).await.unwrap(), 0);
    assert_eq!(t.broker.take_tokens(&QueueName::from_static("q"), &limit, 1, later + secs(1)).await.unwrap(), 1);
}
