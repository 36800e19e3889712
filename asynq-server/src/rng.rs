//! The server's one source of randomness: the weighted order of the queues at each fetch, the
//! jitter of an idle processor's polls and of the default retry delay all draw from it. Seeded
//! from [`Config::rng_seed`](crate::Config::rng_seed) when set, so that a test on a simulated
//! clock makes the same choices every run; from the operating system's entropy otherwise.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A seedable random number generator shared by a server's parts. Cheap to clone; clones draw
/// from one sequence.
#[derive(Clone)]
pub(crate) struct ServerRng(Arc<Mutex<StdRng>>);

impl ServerRng {
    /// A generator seeded with `seed`, or from the operating system's entropy when `None`.
    pub(crate) fn new(seed: Option<u64>) -> Self {
        let rng = match seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_rng(&mut rand::rng()),
        };
        Self(Arc::new(Mutex::new(rng)))
    }

    /// Runs `draw` with the generator (held only for that call).
    pub(crate) fn with<T>(&self, draw: impl FnOnce(&mut StdRng) -> T) -> T {
        // A panic while drawing leaves the generator as usable as before.
        draw(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Go's idle sleep: `interval / 2 + rand[0, interval)`.
    pub(crate) fn jitter(&self, interval: Duration) -> Duration {
        let extra = self.with(|rng| rng.random_range(0..interval.as_nanos().clamp(1, u128::from(u64::MAX)) as u64));
        interval / 2 + Duration::from_nanos(extra)
    }
}

impl fmt::Debug for ServerRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerRng").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_draws_one_sequence_and_the_jitter_stays_in_go_s_range() {
        let interval = Duration::from_secs(1);
        let draws = |rng: &ServerRng| (0..32).map(|_| rng.jitter(interval)).collect::<Vec<_>>();
        let first = draws(&ServerRng::new(Some(7)));
        assert_eq!(first, draws(&ServerRng::new(Some(7))));
        assert_ne!(first, draws(&ServerRng::new(Some(8))));
        assert!(first.iter().all(|d| *d >= interval / 2 && *d < interval * 3 / 2), "{first:?}");
        assert_eq!(ServerRng::new(None).jitter(Duration::ZERO), Duration::ZERO);
    }
}
