//! Durable steps for [`MemoryBroker`]: records kept in the task's record, gone with it.

use super::*;
use asynq_core::broker::Steps;
use asynq_core::steps::{Parked, StepName, StepRecord, check_signal_value};
use asynq_core::{QueueName, TaskId};

#[async_trait]
impl Steps for MemoryBroker {
    async fn step_records(&self, queue: &QueueName, id: &TaskId) -> Result<Vec<StepRecord>> {
        let mut state = self.state();
        let Some(q) = state.queues.get_mut(queue) else { return Ok(Vec::new()) };
        q.forget_ended_park(id);
        Ok(q.step_records(id))
    }

    async fn record_step(&self, queue: &QueueName, id: &TaskId, record: &StepRecord) -> Result<()> {
        let now = self.now();
        let written = self.state().queues.get_mut(queue).is_some_and(|q| q.record_step(id, record, now));
        if written { Ok(()) } else { Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }) }
    }

    async fn park(&self, message: &StoredTask, parked: &Parked, record: Option<&StepRecord>) -> Result<()> {
        let now = self.now();
        let parked_now = {
            let mut state = self.state();
            state.queues.get_mut(&message.queue).is_some_and(|q| q.park(&message.id, parked, record, now))
        };
        if !parked_now {
            return Err(Error::TaskNotFound { queue: message.queue.clone(), id: message.id.clone() });
        }
        self.inner.due.notice(&message.queue);
        Ok(())
    }

    async fn signal(&self, queue: &QueueName, id: &TaskId, name: &StepName, value: Bytes) -> Result<bool> {
        check_signal_value(&value)?;
        let now = self.now();
        let woke = self.state().queues.get_mut(queue).and_then(|q| q.signal(queue, id, name, value, now));
        match woke {
            None => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
            Some(woke) => {
                if woke {
                    self.wake_waiters();
                }
                Ok(woke)
            }
        }
    }

    async fn signal_value(&self, queue: &QueueName, id: &TaskId, name: &StepName) -> Result<Option<Bytes>> {
        Ok(self.state().queues.get(queue).and_then(|q| q.signal_value(id, name)))
    }
}
