//! Forward for [`MemoryBroker`]: due scheduled and retry tasks moved to pending (or their group).

use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Forward for MemoryBroker {
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<usize> {
        let now = self.now();
        let moved: usize = {
            let mut state = self.state();
            queues.iter().map(|name| state.queues.get_mut(name).map_or(0, |queue| queue.forward(now))).sum()
        };
        // Some may have gone to a group rather than to pending; waking for nothing is allowed.
        if moved > 0 {
            self.wake_waiters();
        }
        Ok(moved)
    }
}
