//! Capabilities of [`RedisBroker`]: it has them all.

use super::*;

// Every capability: the Redis broker has them all.
asynq_core::every_capability!(RedisBroker);

#[async_trait]
impl asynq_core::broker::QueueDirectory for RedisBroker {
    async fn registered_queue_count(&self) -> Result<usize> {
        self.conn().scard(self.namespace().all_queues()).await.map_err(|e| broker_error("count queues", e))
    }

    async fn registered_queues(&self) -> Result<Vec<QueueName>> {
        Inspect::queues(self).await
    }
}
