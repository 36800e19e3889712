//! Wall-clock time behind a trait, so that tests control it.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// A source of wall-clock time.
///
/// Every timestamp asynq stores (process times, lease expiries, retention, statistics dates) is
/// read through a `Clock`. Production code uses [`SystemClock`]; tests use [`SimulatedClock`] or
/// a clock that follows tokio's paused time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current wall-clock time.
    fn now(&self) -> SystemTime;
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the one place allowed to read the OS clock
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that stands still until it is [set](SimulatedClock::set) or
/// [advanced](SimulatedClock::advance). Clones share the same time.
///
/// ```
/// use asynq_core::{Clock, SimulatedClock};
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_000));
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_secs(1_005));
/// ```
#[derive(Clone)]
pub struct SimulatedClock {
    now: Arc<Mutex<SystemTime>>,
}

impl SimulatedClock {
    /// A clock reading `start`.
    pub fn new(start: SystemTime) -> Self {
        Self { now: Arc::new(Mutex::new(start)) }
    }

    /// Sets the time to `t` (which may be earlier than the current time).
    pub fn set(&self, t: SystemTime) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = t;
    }

    /// Moves the time forward by `d`.
    pub fn advance(&self, d: Duration) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) += d;
    }
}

impl Clock for SimulatedClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for SimulatedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimulatedClock").field("now", &self.now()).finish()
    }
}
