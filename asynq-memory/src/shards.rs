//! [`ShardedQueues`] for [`MemoryBroker`]: declarations kept beside the queues, shards named
//! without salt (one process has no hash slots to spread).

use super::*;
use asynq_core::broker::ShardedQueues;
use asynq_core::shard::{ShardedQueue, check_declaration};

#[async_trait]
impl ShardedQueues for MemoryBroker {
    async fn declare_sharded_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue> {
        let mut state = self.state();
        let declared = state.sharded.get(logical);
        if let Some(answer) = check_declaration(logical, count, declared, state.known.iter().map(|q| q.as_str()))? {
            return Ok(answer);
        }
        let sharded = ShardedQueue::plain(logical.clone(), count)?;
        for shard in sharded.shards() {
            state.known.insert(shard.clone());
            state.queue_entry(shard);
        }
        state.sharded.insert(logical.clone(), sharded.clone());
        Ok(sharded)
    }

    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>> {
        Ok(self.state().sharded.get(logical).cloned())
    }

    async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>> {
        Ok(self.state().sharded.values().cloned().collect())
    }
}
