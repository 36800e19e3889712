//! [`ShardedQueues`] for [`MemoryBroker`]: declarations kept beside the queues, shards named
//! without salt (one process has no hash slots to spread).

use super::*;
use asynq_core::broker::{Inspect, ShardedQueues, drained_totals, remove_dropped_strays, remove_shard_queues};
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
        let registered = self.queues().await?;
        let Some(declared) = self.sharded_queue(logical).await? else { return Ok(false) };
        // Removing strays writes no declaration; the swaps below check it is still `declared`.
        let removed = remove_dropped_strays(self, &declared, &registered).await?;
        let Some(draining) = declared.draining() else { return Ok(removed) };
        let Some(totals) = drained_totals(self, draining, self.now()).await? else { return Ok(removed) };
        // The totals recorded before any shard goes, as the Redis broker writes them.
        let recorded = declared.clone().with_drained_totals(totals);
        if !self.swap_declaration(logical, &declared, &recorded) || !remove_shard_queues(self, draining).await? {
            return Ok(removed);
        }
        Ok(self.swap_declaration(logical, &recorded, &recorded.drained(totals)) || removed)
    }

    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>> {
        Ok(self.state().sharded.get(logical).cloned())
    }

    async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>> {
        Ok(self.state().sharded.values().cloned().collect())
    }
}

impl MemoryBroker {
    /// Writes `sharded` as the declaration of `logical` if it is still `read`; returns whether it
    /// did (as the Redis broker's `swap_sharded_queue.lua`).
    fn swap_declaration(&self, logical: &QueueName, read: &ShardedQueue, sharded: &ShardedQueue) -> bool {
        let mut state = self.state();
        if state.sharded.get(logical) != Some(read) {
            return false;
        }
        state.sharded.insert(logical.clone(), sharded.clone());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::broker::{Inspect, Manage};
    use asynq_core::shard::{DRAIN_GRACE, RetiredTotals, logical_queue_info};

    /// A drop cut short once it had recorded the old shards' totals and removed one of them is
    /// taken up again, counting the removed shard by what was recorded, as on Redis.
    #[tokio::test]
    async fn a_drop_cut_short_is_taken_up_again_with_the_totals_it_recorded() {
        let clock =
            asynq_core::SimulatedClock::new(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000));
        let broker = MemoryBroker::with_clock(Arc::new(clock.clone()));
        let orders = QueueName::from_static("orders");
        broker.declare_sharded_queue(&orders, 2).await.unwrap();
        let resharded = broker.reshard_queue(&orders, 3).await.unwrap();
        clock.advance(DRAIN_GRACE);
        let recorded = resharded.clone().with_drained_totals(RetiredTotals { processed: 12, failed: 1 });
        assert!(broker.swap_declaration(&orders, &resharded, &recorded));
        broker.delete_queue(&QueueName::from_static("orders~0"), false).await.unwrap();

        assert!(broker.drop_drained_shards(&orders).await.unwrap(), "the drop is taken up again");
        let dropped = broker.sharded_queue(&orders).await.unwrap().unwrap();
        assert_eq!(dropped, resharded.drained(RetiredTotals { processed: 12, failed: 1 }));
        let mut infos = Vec::new();
        for shard in dropped.all_shards() {
            infos.push(broker.queue_info(shard).await.unwrap());
        }
        assert_eq!(logical_queue_info(&dropped, &infos, &[]).processed_total, 12);
    }
}
