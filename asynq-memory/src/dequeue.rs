//! Dequeue for [`MemoryBroker`]: tasks leased to workers, outcomes recorded, leases extended, results written, and idle waits woken.

use super::*;
use asynq_core::workflow::{ParentOutcome, TaskRef};
use asynq_core::{Progress, QueueName, TaskId};

#[async_trait]
impl Dequeue for MemoryBroker {
    async fn dequeue(&self, queues: &[QueueName], max: usize) -> Result<Vec<Dequeued>> {
        let now = self.now();
        let mut state = self.state();
        let mut taken = Vec::new();
        for name in queues {
            let remaining = max - taken.len();
            if remaining == 0 {
                break;
            }
            if let Some(queue) = state.queues.get_mut(name) {
                taken.extend(queue.dequeue(remaining, now));
            }
        }
        Ok(taken)
    }

    async fn wait_for_tasks(&self, queues: &[QueueName]) {
        // A `Notified` receives every `notify_waiters` made after its creation, polled or not:
        // creating it before looking means a task enqueued after the look wakes this waiter.
        // Wake-ups for other queues are looked at and slept through.
        loop {
            let notified = self.inner.ready.notified();
            let ready = {
                let state = self.state();
                queues.iter().any(|name| state.queues.get(name).is_some_and(Queue::has_ready))
            };
            if ready {
                return;
            }
            notified.await;
        }
    }

    async fn finish(&self, message: &StoredTask, outcome: Outcome) -> Result<()> {
        self.settle(message, outcome, None)
    }

    async fn extend_leases(&self, queue: &QueueName, ids: &[TaskId]) -> Result<SystemTime> {
        let expiry = lease_expiry(self.now());
        if let Some(queue) = self.state().queues.get_mut(queue) {
            queue.extend_leases(ids, expiry);
        }
        Ok(from_unix_secs(expiry))
    }

    async fn write_result(&self, queue: &QueueName, id: &TaskId, result: Bytes) -> Result<()> {
        let written = self.state().queues.get_mut(queue).is_some_and(|q| q.write_result(id, result));
        if written { Ok(()) } else { Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }) }
    }

    async fn write_progress(&self, queue: &QueueName, id: &TaskId, progress: &Progress) -> Result<()> {
        let written = self.state().queues.get_mut(queue).is_some_and(|q| q.write_progress(id, progress));
        if written { Ok(()) } else { Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }) }
    }
}

impl MemoryBroker {
    /// Records `outcome` for the active task `message`; with a `lease_cutoff` (Unix seconds),
    /// only while its lease expired at or before it (see [`Recover::recover`]).
    pub(crate) fn settle(&self, message: &StoredTask, outcome: Outcome, lease_cutoff: Option<i64>) -> Result<()> {
        let now = self.now();
        let requeue = matches!(outcome, Outcome::Requeue | Outcome::Stalled);
        let finished_for_good = matches!(outcome, Outcome::Done | Outcome::Complete | Outcome::Archive { .. });
        let mut released = false;
        {
            let not_found = || Error::TaskNotFound { queue: message.queue.clone(), id: message.id.clone() };
            let mut state = self.state();
            let queue = state.queues.get_mut(&message.queue).ok_or_else(not_found)?;
            if lease_cutoff.is_some_and(|cutoff| !queue.lease_expired_by(message.id.as_str(), cutoff)) {
                return Err(not_found());
            }
            let passed_on = (finished_for_good && workflow::in_workflow(message)).then(|| match &outcome {
                Outcome::Archive { error } => ParentOutcome::Failed { error: error.clone() },
                _ => ParentOutcome::Succeeded { result: queue.result_of(message.id.as_str()) },
            });
            queue.finish(message, outcome, now)?;
            if let Some(outcome) = passed_on {
                released = state.pass_workflow_outcome(TaskRef::of(message), outcome, now)?;
            }
        }
        if requeue || released {
            self.wake_waiters();
        }
        if finished_for_good {
            self.inner.signals.task_finished();
        }
        Ok(())
    }
}
