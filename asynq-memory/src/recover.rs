//! Recover for [`MemoryBroker`]: the active tasks whose lease expired.

use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Recover for MemoryBroker {
    async fn list_lease_expired(&self, queues: &[QueueName], cutoff: SystemTime) -> Result<Vec<ExpiredLease>> {
        let cutoff = unix_secs(cutoff);
        let state = self.state();
        Ok(queues
            .iter()
            .filter_map(|name| state.queues.get(name))
            .flat_map(|queue| queue.lease_expired(cutoff))
            .collect())
    }

    async fn recover(&self, items: Vec<(StoredTask, Outcome)>, cutoff: SystemTime) -> Vec<Result<()>> {
        let cutoff = unix_secs(cutoff);
        self.settle(items, Some(cutoff))
    }
}
