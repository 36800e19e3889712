//! A broker decorator that can be taken down and brought back, to test how the server rides
//! out an outage.

use async_trait::async_trait;
use asynq_core::broker::{
    Dequeue, Dequeued, Enqueue, ExpiredLease, Forward, Forwarded, Health, Inspect, Janitor, Outcome, Page, Recover,
    ServerState, Steps,
};
use asynq_core::steps::{Parked, StepName, StepRecord};
use asynq_core::{
    BrokerError, EnqueueRequest, Error, GroupName, Progress, QueueInfo, QueueName, Result, ServerInfo, StoredTask,
    TaskId, TaskInfo, TaskState, WorkerInfo,
};
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// Wraps a broker; while [down](FlakyBroker::go_down), every call fails with a transient
/// [`Error::Broker`]. Clones share the switch.
#[derive(Debug, Clone)]
pub struct FlakyBroker<B> {
    inner: B,
    down: Arc<AtomicBool>,
    lose_dequeue_reply: Arc<AtomicBool>,
    fail_parks: Arc<AtomicBool>,
    /// While set, every call waits this long (a response timeout) and then fails.
    frozen: Arc<std::sync::Mutex<Option<Duration>>>,
}

impl<B> FlakyBroker<B> {
    /// Wraps `inner`, up.
    pub fn new(inner: B) -> Self {
        Self {
            inner,
            down: Arc::default(),
            lose_dequeue_reply: Arc::default(),
            fail_parks: Arc::default(),
            frozen: Arc::default(),
        }
    }

    /// Makes the next dequeue run on the inner broker and then fail as if its reply were lost
    /// (the connection dropped after the command ran): the tasks it took are leased to nobody.
    pub fn lose_next_dequeue_reply(&self) {
        self.lose_dequeue_reply.store(true, Ordering::SeqCst);
    }

    /// Makes every following park of a task ([`Steps::park`]) fail, transiently, writing
    /// nothing, while every other call succeeds; `false` lets parks through again.
    pub fn fail_parks(&self, fail: bool) {
        self.fail_parks.store(fail, Ordering::SeqCst);
    }

    /// Makes every following call fail.
    pub fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
    }

    /// Makes calls succeed again (after [`go_down`](Self::go_down) or [`freeze`](Self::freeze)).
    pub fn come_back(&self) {
        self.down.store(false, Ordering::SeqCst);
        *self.frozen.lock().expect("frozen lock poisoned") = None;
    }

    /// Makes every following call hang for `response_timeout` and then fail with a transient
    /// timeout, as calls to a frozen Redis do.
    pub fn freeze(&self, response_timeout: Duration) {
        *self.frozen.lock().expect("frozen lock poisoned") = Some(response_timeout);
    }

    async fn check(&self) -> Result<()> {
        let frozen = *self.frozen.lock().expect("frozen lock poisoned");
        if let Some(timeout) = frozen {
            tokio::time::sleep(timeout).await;
            let cause = std::io::Error::new(std::io::ErrorKind::TimedOut, "no reply within the response timeout");
            return Err(Error::Broker(BrokerError::transient("broker frozen", cause)));
        }
        if self.down.load(Ordering::SeqCst) {
            let cause = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
            return Err(Error::Broker(BrokerError::transient("broker unreachable", cause)));
        }
        Ok(())
    }
}

#[async_trait]
impl<B: asynq_core::Broker + Steps> Enqueue for FlakyBroker<B> {
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()> {
        self.check().await?;
        self.inner.enqueue(request).await
    }
}

#[async_trait]
impl<B: Dequeue> Dequeue for FlakyBroker<B> {
    async fn dequeue(&self, queues: &[QueueName], max: usize) -> Result<Vec<Dequeued>> {
        self.check().await?;
        let taken = self.inner.dequeue(queues, max).await?;
        if !taken.is_empty() && self.lose_dequeue_reply.swap(false, Ordering::SeqCst) {
            let cause = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset by peer");
            return Err(Error::Broker(BrokerError::transient("dequeue reply lost", cause)));
        }
        Ok(taken)
    }

    async fn wait_for_tasks(&self, queues: &[QueueName]) {
        self.inner.wait_for_tasks(queues).await
    }

    async fn finish(&self, message: &StoredTask, outcome: Outcome) -> Result<()> {
        self.check().await?;
        self.inner.finish(message, outcome).await
    }

    async fn extend_leases(&self, queue: &QueueName, ids: &[TaskId]) -> Result<SystemTime> {
        self.check().await?;
        self.inner.extend_leases(queue, ids).await
    }

    async fn write_result(&self, queue: &QueueName, id: &TaskId, result: Bytes) -> Result<()> {
        self.check().await?;
        self.inner.write_result(queue, id, result).await
    }

    async fn write_progress(&self, queue: &QueueName, id: &TaskId, progress: &Progress) -> Result<()> {
        self.check().await?;
        self.inner.write_progress(queue, id, progress).await
    }
}

#[async_trait]
impl<B: Forward> Forward for FlakyBroker<B> {
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<Forwarded> {
        self.check().await?;
        self.inner.forward_ready(queues).await
    }

    async fn due_notices(&self) -> Result<futures::stream::BoxStream<'static, String>> {
        self.check().await?;
        self.inner.due_notices().await
    }
}

#[async_trait]
impl<B: Recover> Recover for FlakyBroker<B> {
    async fn list_lease_expired(&self, queues: &[QueueName], cutoff: SystemTime) -> Result<Vec<ExpiredLease>> {
        self.check().await?;
        self.inner.list_lease_expired(queues, cutoff).await
    }

    async fn recover(&self, items: Vec<(StoredTask, Outcome)>, cutoff: SystemTime) -> Vec<Result<()>> {
        if let Err(e) = self.check().await {
            return items.iter().map(|_| Err(e.duplicate())).collect();
        }
        self.inner.recover(items, cutoff).await
    }
}

#[async_trait]
impl<B: Janitor> Janitor for FlakyBroker<B> {
    async fn delete_expired_completed(&self, queue: &QueueName, batch_size: usize) -> Result<usize> {
        self.check().await?;
        self.inner.delete_expired_completed(queue, batch_size).await
    }
}

#[async_trait]
impl<B: ServerState> ServerState for FlakyBroker<B> {
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()> {
        self.check().await?;
        self.inner.write_server_state(server, workers, ttl).await
    }

    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()> {
        self.check().await?;
        self.inner.clear_server_state(server).await
    }
}

/// The inner broker's capabilities, each failing while the broker is down.
impl<B: asynq_core::Broker + Steps> asynq_core::broker::Capabilities for FlakyBroker<B> {
    fn as_steps(self: Arc<Self>) -> Option<Arc<dyn Steps>> {
        Some(self)
    }

    fn as_cancel(self: Arc<Self>) -> Option<Arc<dyn asynq_core::broker::Cancel>> {
        Some(self)
    }

    fn as_aggregate(self: Arc<Self>) -> Option<Arc<dyn asynq_core::broker::Aggregate>> {
        Some(self)
    }

    fn as_rate_limiter(self: Arc<Self>) -> Option<Arc<dyn asynq_core::broker::RateLimiter>> {
        Some(self)
    }

    fn as_scheduler_state(self: Arc<Self>) -> Option<Arc<dyn asynq_core::broker::SchedulerState>> {
        Some(self)
    }
}

#[async_trait]
impl<B: Health> Health for FlakyBroker<B> {
    async fn ping(&self) -> Result<()> {
        self.check().await?;
        self.inner.ping().await
    }
}

#[async_trait]
impl<B: Inspect> Inspect for FlakyBroker<B> {
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>> {
        self.check().await?;
        self.inner.servers().await
    }

    async fn queues(&self) -> Result<Vec<QueueName>> {
        self.check().await?;
        self.inner.queues().await
    }

    async fn queue_info(&self, queue: &QueueName) -> Result<QueueInfo> {
        self.check().await?;
        self.inner.queue_info(queue).await
    }

    async fn task_info(&self, queue: &QueueName, id: &TaskId) -> Result<TaskInfo> {
        self.check().await?;
        self.inner.task_info(queue, id).await
    }

    async fn list_tasks(&self, queue: &QueueName, state: TaskState, page: Page) -> Result<Vec<TaskInfo>> {
        self.check().await?;
        self.inner.list_tasks(queue, state, page).await
    }

    async fn list_group_tasks(&self, queue: &QueueName, group: &GroupName, page: Page) -> Result<Vec<TaskInfo>> {
        self.check().await?;
        self.inner.list_group_tasks(queue, group, page).await
    }

    async fn history(&self, queue: &QueueName, days: usize) -> Result<Vec<asynq_core::DailyStats>> {
        self.check().await?;
        self.inner.history(queue, days).await
    }

    async fn backend_info(&self) -> Result<asynq_core::BackendInfo> {
        self.check().await?;
        self.inner.backend_info().await
    }

    async fn queue_location(&self, queue: &QueueName) -> Result<Option<asynq_core::QueueLocation>> {
        self.check().await?;
        self.inner.queue_location(queue).await
    }

    async fn pause_queue(&self, queue: &QueueName) -> Result<()> {
        self.check().await?;
        self.inner.pause_queue(queue).await
    }

    async fn unpause_queue(&self, queue: &QueueName) -> Result<()> {
        self.check().await?;
        self.inner.unpause_queue(queue).await
    }
}

#[async_trait]
impl<B: asynq_core::broker::Manage> asynq_core::broker::Manage for FlakyBroker<B> {
    async fn run_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.check().await?;
        self.inner.run_task(queue, id).await
    }

    async fn archive_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.check().await?;
        self.inner.archive_task(queue, id).await
    }

    async fn delete_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.check().await?;
        self.inner.delete_task(queue, id).await
    }

    fn archive_limits(&self) -> asynq_core::ArchiveLimits {
        self.inner.archive_limits()
    }

    async fn archive_outlook(&self, queue: &QueueName, adding: usize) -> Result<asynq_core::ArchiveOutlook> {
        self.check().await?;
        self.inner.archive_outlook(queue, adding).await
    }

    async fn archive_reporting(
        &self,
        queue: &QueueName,
        set: &asynq_core::TaskSet,
        progress: asynq_core::OnProgress<'_>,
    ) -> Result<asynq_core::ArchiveReport> {
        self.check().await?;
        self.inner.archive_reporting(queue, set, progress).await
    }

    async fn archive_task_reporting(&self, queue: &QueueName, id: &TaskId) -> Result<asynq_core::ArchiveReport> {
        self.check().await?;
        self.inner.archive_task_reporting(queue, id).await
    }

    async fn run_all(&self, queue: &QueueName, set: &asynq_core::TaskSet) -> Result<usize> {
        self.check().await?;
        self.inner.run_all(queue, set).await
    }

    async fn archive_all(&self, queue: &QueueName, set: &asynq_core::TaskSet) -> Result<usize> {
        self.check().await?;
        self.inner.archive_all(queue, set).await
    }

    async fn delete_all(&self, queue: &QueueName, set: &asynq_core::TaskSet) -> Result<usize> {
        self.check().await?;
        self.inner.delete_all(queue, set).await
    }

    async fn update_task_payload(&self, queue: &QueueName, id: &TaskId, payload: bytes::Bytes) -> Result<TaskInfo> {
        self.check().await?;
        self.inner.update_task_payload(queue, id, payload).await
    }

    async fn delete_queue(&self, queue: &QueueName, force: bool) -> Result<()> {
        self.check().await?;
        self.inner.delete_queue(queue, force).await
    }
}

#[async_trait]
impl<B: asynq_core::broker::Cancel> asynq_core::broker::Cancel for FlakyBroker<B> {
    async fn cancel(&self, id: &TaskId) -> Result<asynq_core::CancelOutcome> {
        self.check().await?;
        self.inner.cancel(id).await
    }

    async fn cancellations(&self) -> Result<futures::stream::BoxStream<'static, String>> {
        self.check().await?;
        self.inner.cancellations().await
    }

    async fn kept_cancellations(&self) -> Result<Vec<(TaskId, std::time::SystemTime)>> {
        self.check().await?;
        self.inner.kept_cancellations().await
    }

    async fn settle_cancellation(&self, id: &TaskId) -> Result<bool> {
        self.check().await?;
        self.inner.settle_cancellation(id).await
    }
}

#[async_trait]
impl<B: asynq_core::broker::Wait> asynq_core::broker::Wait for FlakyBroker<B> {
    async fn wait_for_outcome(
        &self,
        queue: &QueueName,
        id: &TaskId,
        timeout: Duration,
    ) -> Result<asynq_core::TaskOutcome> {
        self.check().await?;
        self.inner.wait_for_outcome(queue, id, timeout).await
    }
}

#[async_trait]
impl<B: asynq_core::broker::Aggregate> asynq_core::broker::Aggregate for FlakyBroker<B> {
    async fn groups(&self, queue: &QueueName) -> Result<Vec<asynq_core::broker::GroupInfo>> {
        self.check().await?;
        self.inner.groups(queue).await
    }

    async fn group_size(&self, queue: &QueueName, group: &GroupName) -> Result<usize> {
        self.check().await?;
        self.inner.group_size(queue, group).await
    }

    async fn ready_groups(
        &self,
        queue: &QueueName,
        limits: asynq_core::broker::AggregationLimits,
        limit: usize,
    ) -> Result<Vec<GroupName>> {
        self.check().await?;
        self.inner.ready_groups(queue, limits, limit).await
    }

    async fn aggregation_check(
        &self,
        queue: &QueueName,
        group: &GroupName,
        limits: asynq_core::broker::AggregationLimits,
    ) -> Result<Option<String>> {
        self.check().await?;
        self.inner.aggregation_check(&QueueName::new(queue).unwrap(), &GroupName::new(group).unwrap(), limits).await
    }

    async fn read_aggregation_set(
        &self,
        queue: &QueueName,
        group: &GroupName,
        set_id: &str,
    ) -> Result<asynq_core::broker::AggregationSet> {
        self.check().await?;
        self.inner.read_aggregation_set(&QueueName::new(queue).unwrap(), &GroupName::new(group).unwrap(), set_id).await
    }

    async fn complete_aggregation(
        &self,
        queue: &QueueName,
        group: &GroupName,
        set_id: &str,
        request: EnqueueRequest,
    ) -> Result<()> {
        self.check().await?;
        self.inner
            .complete_aggregation(&QueueName::new(queue).unwrap(), &GroupName::new(group).unwrap(), set_id, request)
            .await
    }

    async fn delete_aggregation_set(&self, queue: &QueueName, group: &GroupName, set_id: &str) -> Result<()> {
        self.check().await?;
        self.inner.delete_aggregation_set(queue, group, set_id).await
    }

    async fn reclaim_stale_aggregation_sets(&self, queue: &QueueName) -> Result<usize> {
        self.check().await?;
        self.inner.reclaim_stale_aggregation_sets(queue).await
    }
}

#[async_trait]
impl<B: asynq_core::broker::SchedulerState> asynq_core::broker::SchedulerState for FlakyBroker<B> {
    async fn write_scheduler_entries(
        &self,
        scheduler_id: &str,
        entries: &[asynq_core::broker::SchedulerEntry],
        ttl: Duration,
    ) -> Result<()> {
        self.check().await?;
        self.inner.write_scheduler_entries(scheduler_id, entries, ttl).await
    }

    async fn clear_scheduler_entries(&self, scheduler_id: &str) -> Result<()> {
        self.check().await?;
        self.inner.clear_scheduler_entries(scheduler_id).await
    }

    async fn scheduler_entries(&self) -> Result<Vec<asynq_core::broker::SchedulerEntry>> {
        self.check().await?;
        self.inner.scheduler_entries().await
    }

    async fn record_scheduler_enqueue(
        &self,
        entry_id: &str,
        event: &asynq_core::broker::SchedulerEnqueueEvent,
    ) -> Result<()> {
        self.check().await?;
        self.inner.record_scheduler_enqueue(entry_id, event).await
    }

    async fn clear_scheduler_history(&self, entry_id: &str) -> Result<()> {
        self.check().await?;
        self.inner.clear_scheduler_history(entry_id).await
    }

    async fn scheduler_history(
        &self,
        entry_id: &str,
        page: Page,
    ) -> Result<Vec<asynq_core::broker::SchedulerEnqueueEvent>> {
        self.check().await?;
        self.inner.scheduler_history(entry_id, page).await
    }

    async fn mark_fire_enqueued(&self, fire_id: &str, ttl: Duration) -> Result<()> {
        self.check().await?;
        self.inner.mark_fire_enqueued(fire_id, ttl).await
    }

    async fn fire_enqueued(&self, fire_id: &str) -> Result<bool> {
        self.check().await?;
        self.inner.fire_enqueued(fire_id).await
    }
}

#[async_trait]
impl<B: asynq_core::broker::RateLimiter> asynq_core::broker::RateLimiter for FlakyBroker<B> {
    async fn take_tokens(
        &self,
        queue: &QueueName,
        limit: &asynq_core::rate_limit::RateLimit,
        wanted: u32,
        now: SystemTime,
    ) -> Result<u32> {
        self.check().await?;
        self.inner.take_tokens(&QueueName::new(queue).unwrap(), limit, wanted, now).await
    }

    async fn give_back_tokens(
        &self,
        queue: &QueueName,
        limit: &asynq_core::rate_limit::RateLimit,
        count: u32,
    ) -> Result<()> {
        self.check().await?;
        self.inner.give_back_tokens(queue, limit, count).await
    }
}

#[async_trait]
impl<B: Steps> Steps for FlakyBroker<B> {
    async fn step_records(&self, queue: &QueueName, id: &TaskId) -> Result<Vec<StepRecord>> {
        self.check().await?;
        self.inner.step_records(queue, id).await
    }

    async fn record_step(&self, queue: &QueueName, id: &TaskId, record: &StepRecord) -> Result<()> {
        self.check().await?;
        self.inner.record_step(queue, id, record).await
    }

    async fn park(&self, message: &StoredTask, parked: &Parked, record: Option<&StepRecord>) -> Result<()> {
        self.check().await?;
        if self.fail_parks.load(Ordering::SeqCst) {
            let cause = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset");
            return Err(Error::Broker(BrokerError::transient("park failed", cause)));
        }
        self.inner.park(message, parked, record).await
    }

    async fn signal(&self, queue: &QueueName, id: &TaskId, name: &StepName, value: Bytes) -> Result<bool> {
        self.check().await?;
        self.inner.signal(queue, id, name, value).await
    }

    async fn signal_value(&self, queue: &QueueName, id: &TaskId, name: &StepName) -> Result<Option<Bytes>> {
        self.check().await?;
        self.inner.signal_value(queue, id, name).await
    }
}
