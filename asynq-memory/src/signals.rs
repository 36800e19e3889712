//! Cancellation requests and finish notifications, within the process: [`Cancel`] fans each
//! request out to every live subscription, and [`Wait`] sleeps until a task finishes for good,
//! then looks again.

use crate::MemoryBroker;
use async_trait::async_trait;
use asynq_core::broker::{Cancel, Inspect, Wait};
use asynq_core::{Error, Progress, QueueName, Result, TaskId, TaskOutcome, progress_from_lookup, validate_wait};
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use futures::stream::BoxStream;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// What the broker's clones share for cancellation and waiting.
#[derive(Default)]
pub(crate) struct Signals {
    /// Notified whenever a task is done, completed or archived.
    finished: Notify,
    /// One sender per live [`Cancel::cancellations`] stream; closed ones are dropped on the
    /// next request.
    cancellations: Mutex<Vec<UnboundedSender<String>>>,
}

impl Signals {
    /// Wakes every wait, to look whether its task is the one that finished. Whatever makes a
    /// task leave for good (done, completed, archived, deleted) calls it.
    pub(crate) fn task_finished(&self) {
        self.finished.notify_waiters();
    }

    fn subscribers(&self) -> std::sync::MutexGuard<'_, Vec<UnboundedSender<String>>> {
        self.cancellations.lock().expect("cancellation subscribers lock poisoned")
    }
}

impl fmt::Debug for Signals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signals").field("cancellation_subscribers", &self.subscribers().len()).finish_non_exhaustive()
    }
}

#[async_trait]
impl Cancel for MemoryBroker {
    async fn cancel(&self, id: &TaskId) -> Result<()> {
        self.inner.signals.subscribers().retain(|subscriber| subscriber.unbounded_send(id.to_string()).is_ok());
        Ok(())
    }

    /// Never ends: an in-process subscription cannot be lost.
    async fn cancellations(&self) -> Result<BoxStream<'static, String>> {
        let (sender, receiver) = unbounded();
        self.inner.signals.subscribers().push(sender);
        Ok(receiver.boxed())
    }
}

#[async_trait]
impl Wait for MemoryBroker {
    async fn wait_for_outcome(&self, queue: &QueueName, id: &TaskId, timeout: Duration) -> Result<TaskOutcome> {
        validate_wait(timeout)?;
        let outcome = async {
            let mut seen = false;
            loop {
                // Created before looking, so a task that finishes after the look wakes this
                // wait (`notify_waiters` reaches every `Notified` that exists, polled or not).
                let finished = self.inner.signals.finished.notified();
                if let Some(outcome) = TaskOutcome::from_lookup(self.task_info(queue, id).await, seen)? {
                    return Ok(outcome);
                }
                seen = true;
                finished.await;
            }
        };
        tokio::time::timeout(timeout, outcome)
            .await
            .unwrap_or_else(|_| Err(Error::WaitTimeout { queue: queue.to_owned(), id: id.to_owned(), timeout }))
    }

    async fn task_progress(&self, queue: &QueueName, id: &TaskId) -> Result<Option<Progress>> {
        progress_from_lookup(self.task_info(queue, id).await)
    }
}
