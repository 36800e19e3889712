//! The default delay before a failed task is retried.

use rand::Rng;
use std::time::Duration;

/// Go asynq's (and Sidekiq's) default retry delay: `n⁴ + 15 + rand(0..=29)·(n + 1)` seconds,
/// where `n` is the number of retries so far. Grows from 15–44 s for the first retry to about
/// 4.5 days for the 25th.
pub fn default_retry_delay(retried: u32, rng: &mut impl Rng) -> Duration {
    let n = u64::from(retried);
    let jitter: u64 = rng.random_range(0..30);
    let secs = n.saturating_pow(4).saturating_add(15).saturating_add(jitter.saturating_mul(n + 1));
    Duration::from_secs(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;

    proptest! {
        #[test]
        fn delay_stays_within_its_bounds(retried in 0u32..10_000, seed: u64) {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let n = u64::from(retried);
            let secs = default_retry_delay(retried, &mut rng).as_secs();
            prop_assert!(secs >= n.pow(4) + 15);
            prop_assert!(secs <= n.pow(4) + 15 + 29 * (n + 1));
        }
    }

    #[test]
    fn huge_retry_counts_saturate_instead_of_overflowing() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        assert!(default_retry_delay(u32::MAX, &mut rng) > Duration::from_secs(u64::from(u32::MAX)));
    }
}
