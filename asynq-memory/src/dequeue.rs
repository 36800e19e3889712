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
        let mut settled = self.settle(vec![(message.clone(), outcome)], None);
        settled.pop().expect("one reply per task")
    }

    async fn finish_batch(&self, items: Vec<(StoredTask, Outcome)>) -> Vec<Result<()>> {
        self.settle(items, None)
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
    /// Records the outcome of each active task of `items`, in one step; with a `lease_cutoff`
    /// (Unix seconds), each only while its lease expired at or before it (see
    /// [`Recover::recover`]). The outcomes of the workflow tasks among them that settled for
    /// good are passed on together once all are recorded, as the Redis broker's batch does.
    pub(crate) fn settle(&self, items: Vec<(StoredTask, Outcome)>, lease_cutoff: Option<i64>) -> Vec<Result<()>> {
        let now = self.now();
        let (mut wake, mut finished) = (false, false);
        let (mut passed_on, mut passing) = (Vec::new(), Vec::new());
        let mut retried: Vec<QueueName> = Vec::new();
        let mut replies = Vec::with_capacity(items.len());
        let mut state = self.state();
        for (message, outcome) in items {
            let requeue = matches!(outcome, Outcome::Requeue | Outcome::Stalled);
            let retry = matches!(outcome, Outcome::Retry { .. });
            let for_good = matches!(outcome, Outcome::Done | Outcome::Complete | Outcome::Archive { .. });
            let not_found = || Error::TaskNotFound { queue: message.queue.clone(), id: message.id.clone() };
            let Some(queue) = state.queues.get_mut(&message.queue) else {
                replies.push(Err(not_found()));
                continue;
            };
            if lease_cutoff.is_some_and(|cutoff| !queue.lease_expired_by(message.id.as_str(), cutoff)) {
                replies.push(Err(not_found()));
                continue;
            }
            let passes_on = (for_good && workflow::in_workflow(&message)).then(|| match &outcome {
                Outcome::Archive { error } => ParentOutcome::Failed { error: error.clone() },
                _ => ParentOutcome::Succeeded { result: queue.result_of(message.id.as_str()) },
            });
            let reply = queue.finish(&message, outcome, now);
            if reply.is_ok() {
                wake |= requeue;
                if retry && !retried.contains(&message.queue) {
                    retried.push(message.queue.clone());
                }
                finished |= for_good;
                if let Some(outcome) = passes_on {
                    passed_on.push((TaskRef::of(&message), outcome));
                    passing.push(replies.len());
                }
            }
            replies.push(reply);
        }
        if !passed_on.is_empty() {
            match state.pass_workflow_outcomes(passed_on, now) {
                Ok(changed) => wake |= changed,
                // Settled, but what waits for them may not have heard: the first says so.
                Err(e) => replies[passing[0]] = Err(e),
            }
        }
        drop(state);
        if wake {
            self.wake_waiters();
        }
        for queue in &retried {
            self.inner.due.notice(queue);
        }
        if finished {
            self.inner.signals.task_finished();
        }
        replies
    }
}
