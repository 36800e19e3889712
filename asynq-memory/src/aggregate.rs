//! [`Aggregate`] for the memory broker: each call checks its arguments, then does its work on
//! one queue under the broker's lock, so it is atomic as the Redis scripts are.

use crate::MemoryBroker;
use async_trait::async_trait;
use asynq_core::broker::{Aggregate, AggregationLimits, AggregationSet, GroupInfo};
use asynq_core::{
    EnqueueRequest, Error, GroupName, Placement, QueueName, Result, validate_aggregation_completion,
    validate_aggregation_set,
};

/// The error for a set that does not exist.
pub(crate) fn set_not_found(queue: &QueueName, group: &GroupName, set_id: &str) -> Error {
    Error::AggregationSetNotFound { queue: queue.clone(), group: group.clone(), set_id: set_id.to_owned() }
}

#[async_trait]
impl Aggregate for MemoryBroker {
    async fn groups(&self, queue: &QueueName) -> Result<Vec<GroupInfo>> {
        Ok(self.state().queues.get(queue).map(|q| q.group_stats()).unwrap_or_default())
    }

    async fn group_size(&self, queue: &QueueName, group: &GroupName) -> Result<usize> {
        Ok(self.state().queues.get(queue).map_or(0, |q| q.group_size(group)))
    }

    async fn ready_groups(&self, queue: &QueueName, limits: AggregationLimits, limit: usize) -> Result<Vec<GroupName>> {
        limits.validate()?;
        let now = self.now();
        Ok(self.state().queues.get(queue).map(|q| q.ready_groups(&limits, now, limit)).unwrap_or_default())
    }

    async fn aggregation_check(
        &self,
        queue: &QueueName,
        group: &GroupName,
        limits: AggregationLimits,
    ) -> Result<Option<String>> {
        limits.validate()?;
        let now = self.now();
        Ok(self.state().queues.get_mut(queue).and_then(|q| q.aggregation_check(group, &limits, now)))
    }

    async fn read_aggregation_set(&self, queue: &QueueName, group: &GroupName, set_id: &str) -> Result<AggregationSet> {
        validate_aggregation_set(set_id)?;
        self.state()
            .queues
            .get(queue)
            .and_then(|q| q.read_aggregation_set(group, set_id))
            .ok_or_else(|| set_not_found(queue, group, set_id))
    }

    async fn complete_aggregation(
        &self,
        queue: &QueueName,
        group: &GroupName,
        set_id: &str,
        request: EnqueueRequest,
    ) -> Result<()> {
        validate_aggregation_completion(queue, set_id, &request)?;
        let now = self.now();
        let to_pending = request.placement == Placement::Pending;
        {
            let mut state = self.state();
            let completed = match state.queues.get_mut(queue) {
                Some(q) => q.complete_aggregation(queue, group, set_id, request, now),
                None => Err(set_not_found(queue, group, set_id)),
            };
            // Registered even when the enqueue then fails, as an enqueue does.
            state.known.insert(queue.clone());
            completed?;
        }
        if to_pending {
            self.wake_waiters();
        }
        // The members are gone: waits on them end.
        self.inner.signals.task_finished();
        Ok(())
    }

    async fn delete_aggregation_set(&self, queue: &QueueName, group: &GroupName, set_id: &str) -> Result<()> {
        validate_aggregation_set(set_id)?;
        if let Some(q) = self.state().queues.get_mut(queue) {
            q.delete_aggregation_set(group, set_id);
        }
        self.inner.signals.task_finished();
        Ok(())
    }

    async fn reclaim_stale_aggregation_sets(&self, queue: &QueueName) -> Result<usize> {
        let now = self.now();
        Ok(self.state().queues.get_mut(queue).map_or(0, |q| q.reclaim_stale_aggregation_sets(now)))
    }
}
