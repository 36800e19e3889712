//! Capabilities of [`RedisBroker`]: it has them all.

use super::*;

/// Every capability: the Redis broker has them all.
impl Capabilities for RedisBroker {
    fn as_cancel(self: Arc<Self>) -> Option<Arc<dyn Cancel>> {
        Some(self)
    }

    fn as_aggregate(self: Arc<Self>) -> Option<Arc<dyn Aggregate>> {
        Some(self)
    }

    fn as_rate_limiter(self: Arc<Self>) -> Option<Arc<dyn RateLimiter>> {
        Some(self)
    }

    fn as_scheduler_state(self: Arc<Self>) -> Option<Arc<dyn SchedulerState>> {
        Some(self)
    }

    fn as_concurrency_slots(self: Arc<Self>) -> Option<Arc<dyn asynq_core::slots::ConcurrencySlots>> {
        Some(self)
    }

    fn as_event_log(self: Arc<Self>) -> Option<Arc<dyn asynq_core::events::EventLog>> {
        Some(self)
    }

    fn as_workflows(self: Arc<Self>) -> Option<Arc<dyn asynq_core::workflow::Workflows>> {
        Some(self)
    }

    fn as_queue_directory(self: Arc<Self>) -> Option<Arc<dyn asynq_core::broker::QueueDirectory>> {
        Some(self)
    }

    fn as_task_metrics(self: Arc<Self>) -> Option<Arc<dyn asynq_core::task_metrics::TaskMetrics>> {
        Some(self)
    }

    fn as_server_control(self: Arc<Self>) -> Option<Arc<dyn asynq_core::ServerControl>> {
        Some(self)
    }
}

#[async_trait]
impl asynq_core::broker::QueueDirectory for RedisBroker {
    async fn registered_queue_count(&self) -> Result<usize> {
        self.conn().scard(self.namespace().all_queues()).await.map_err(|e| broker_error("count queues", e))
    }

    async fn registered_queues(&self) -> Result<Vec<QueueName>> {
        Inspect::queues(self).await
    }
}
