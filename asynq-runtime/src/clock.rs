//! A wall clock that follows tokio's clock, for tests that run in paused time.

use asynq_core::Clock;
use std::time::SystemTime;

/// A wall clock that reads `start` plus the time tokio's clock has moved since it was made.
///
/// In a runtime whose time is paused (`#[tokio::test(start_paused = true)]`), tokio's clock
/// jumps ahead whenever every task waits on a timer, so a test of a server that retries in a
/// minute, or of a task scheduled for tomorrow, runs in milliseconds. Give the same clock to the
/// memory broker, the client and the server's configuration, so that they agree on the time
/// the timers reach.
///
/// ```
/// use asynq_core::Clock;
/// use asynq_runtime::TokioClock;
/// use std::time::{Duration, UNIX_EPOCH};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let clock = TokioClock::new(start);
/// tokio::time::sleep(Duration::from_secs(3600)).await; // returns at once: the time is paused
/// assert_eq!(clock.now(), start + Duration::from_secs(3600));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TokioClock {
    start: SystemTime,
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `start` now. Call inside a tokio runtime.
    pub fn new(start: SystemTime) -> Self {
        Self { start, origin: tokio::time::Instant::now() }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> SystemTime {
        self.start + self.origin.elapsed()
    }
}
