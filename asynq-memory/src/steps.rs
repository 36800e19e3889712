//! Durable steps for [`MemoryBroker`]: records kept in the task's record, gone with it.

use super::*;
use asynq_core::broker::Steps;
use asynq_core::steps::StepRecord;
use asynq_core::{QueueName, TaskId};

#[async_trait]
impl Steps for MemoryBroker {
    async fn step_records(&self, queue: &QueueName, id: &TaskId) -> Result<Vec<StepRecord>> {
        Ok(self.state().queues.get(queue).map(|q| q.step_records(id)).unwrap_or_default())
    }

    async fn record_step(&self, queue: &QueueName, id: &TaskId, record: &StepRecord) -> Result<()> {
        let written = self.state().queues.get_mut(queue).is_some_and(|q| q.record_step(id, record));
        if written { Ok(()) } else { Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }) }
    }
}
