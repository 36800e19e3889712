//! [`Peak`]: the most tasks that ran at once, as handlers count them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The most that ran at once, kept by handlers that each run their work through
/// [`Peak::around`].
#[derive(Debug, Default)]
pub struct Peak {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl Peak {
    /// Counts one more running for `work` (a tokio sleep, so paused time runs it at once).
    pub async fn around(&self, work: Duration) {
        let running = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(running, Ordering::SeqCst);
        tokio::time::sleep(work).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
    }

    /// How many run now.
    pub fn running(&self) -> usize {
        self.now.load(Ordering::SeqCst)
    }

    /// The most that ran at once so far.
    pub fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}
