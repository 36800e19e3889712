//! [`ShardedQueues`] for [`MemoryBroker`]: declarations kept beside the queues, shards named
//! without salt (one process has no hash slots to spread).

use super::*;
use asynq_core::broker::{ShardedQueues, remove_drained_shards};
use asynq_core::shard::{ShardedQueue, check_declaration, check_reshard};

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

    async fn reshard_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue> {
        let now = self.now();
        let mut state = self.state();
        let declared = state.sharded.get(logical);
        if let Some(answer) = check_reshard(logical, count, declared, state.known.iter().map(|q| q.as_str()))? {
            return Ok(answer);
        }
        let declared = declared.expect("check_reshard refuses a queue not declared");
        let shards = ShardedQueue::plain_shards(logical, declared.generation() + 1, count)?;
        let resharded = declared.resharded(shards, now)?;
        for shard in resharded.shards() {
            state.known.insert(shard.clone());
            state.queue_entry(shard);
        }
        state.sharded.insert(logical.clone(), resharded.clone());
        Ok(resharded)
    }

    async fn drop_drained_shards(&self, logical: &QueueName) -> Result<bool> {
        let Some(declared) = self.sharded_queue(logical).await? else { return Ok(false) };
        let Some(draining) = declared.draining() else { return Ok(false) };
        let Some(totals) = remove_drained_shards(self, draining, self.now()).await? else { return Ok(false) };
        let mut state = self.state();
        if state.sharded.get(logical) != Some(&declared) {
            return Ok(false);
        }
        state.sharded.insert(logical.clone(), declared.drained(totals));
        Ok(true)
    }

    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>> {
        Ok(self.state().sharded.get(logical).cloned())
    }

    async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>> {
        Ok(self.state().sharded.values().cloned().collect())
    }
}
