//! Janitor for [`MemoryBroker`]: completed tasks past their retention deleted.

use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Janitor for MemoryBroker {
    async fn delete_expired_completed(&self, queue: &QueueName, batch_size: usize) -> Result<usize> {
        let now = self.now();
        Ok(self.state().queues.get_mut(queue).map_or(0, |queue| queue.delete_expired_completed(batch_size, now)))
    }
}
