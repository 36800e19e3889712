//! Capabilities of [`MemoryBroker`]: it has them all.

use super::*;

// Every capability: the memory broker has them all.
asynq_core::every_capability!(MemoryBroker);

#[async_trait]
impl asynq_core::broker::QueueDirectory for MemoryBroker {
    async fn registered_queue_count(&self) -> Result<usize> {
        Ok(self.state().known.len())
    }

    async fn registered_queues(&self) -> Result<Vec<QueueName>> {
        Ok(self.state().known.iter().cloned().collect())
    }
}
