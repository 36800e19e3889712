//! Inspect for [`MemoryBroker`]: queues, tasks, history, servers and backend information for operators.

use super::*;
use asynq_core::{GroupName, QueueName, TaskId};

#[async_trait]
impl Inspect for MemoryBroker {
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>> {
        let now = self.now();
        Ok(self.state().servers.alive(now))
    }

    async fn queues(&self) -> Result<Vec<QueueName>> {
        Ok(self.state().known.iter().cloned().collect())
    }

    async fn queue_info(&self, queue: &QueueName) -> Result<QueueInfo> {
        let now = self.now();
        Ok(self.state().known_queue(queue)?.info(queue, now))
    }

    async fn task_info(&self, queue: &QueueName, id: &TaskId) -> Result<TaskInfo> {
        let now = self.now();
        let state = self.state();
        let queue_state = state.known_queue(queue)?;
        let info = queue_state
            .task_info(id, now)
            .ok_or_else(|| Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() })?;
        Ok(queue_state.with_durable_steps(id, info))
    }

    async fn list_tasks(&self, queue: &QueueName, state: TaskState, page: Page) -> Result<Vec<TaskInfo>> {
        let now = self.now();
        Ok(self.state().known_queue(queue)?.list(state, page, now))
    }

    async fn list_group_tasks(&self, queue: &QueueName, group: &GroupName, page: Page) -> Result<Vec<TaskInfo>> {
        Ok(self.state().known_queue(queue)?.group_tasks(group, page))
    }

    async fn history(&self, queue: &QueueName, days: usize) -> Result<Vec<asynq_core::DailyStats>> {
        asynq_core::DailyStats::validate_days(days)?;
        let now = self.now();
        Ok(self.state().known_queue(queue)?.history(queue, days, now))
    }

    /// Kind `memory`, with the fields `queues` (known queues) and `tasks` (task records in
    /// them, in any state); no nodes, and no eviction risk: it never drops a task to free memory.
    async fn backend_info(&self) -> Result<asynq_core::BackendInfo> {
        let state = self.state();
        let tasks: usize = state.known.iter().filter_map(|name| state.queues.get(name)).map(Queue::task_count).sum();
        let fields = [("queues", state.known.len()), ("tasks", tasks)]
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.to_string()))
            .collect();
        Ok(asynq_core::BackendInfo::new("memory", fields, Vec::new()))
    }

    /// Always `None`: there is no cluster.
    async fn queue_location(&self, _queue: &QueueName) -> Result<Option<asynq_core::QueueLocation>> {
        Ok(None)
    }

    async fn pause_queue(&self, queue: &QueueName) -> Result<()> {
        let now = self.now();
        self.state().queue_entry(queue).pause(queue, now)
    }

    async fn unpause_queue(&self, queue: &QueueName) -> Result<()> {
        let unpaused = match self.state().queues.get_mut(queue) {
            Some(q) => q.unpause(queue),
            None => Err(Error::FailedPrecondition(format!("queue {queue:?} is not paused"))),
        };
        if unpaused.is_ok() {
            self.wake_waiters();
        }
        unpaused
    }
}
