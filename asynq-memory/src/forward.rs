//! Forward for [`MemoryBroker`]: due scheduled and retry tasks moved to pending (or their group),
//! and the notices that tell a sleeping forwarder of a task scheduled or set to retry.

use super::*;
use asynq_core::QueueName;
use asynq_core::broker::Forwarded;
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use futures::stream::BoxStream;
use std::sync::PoisonError;

#[async_trait]
impl Forward for MemoryBroker {
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<Forwarded> {
        let now = self.now();
        let (moved, next_due) = {
            let mut state = self.state();
            let mut moved = 0;
            let mut next_due = None::<i64>;
            for name in queues {
                let Some(queue) = state.queues.get_mut(name) else { continue };
                moved += queue.forward(now);
                next_due = next_due.into_iter().chain(queue.next_due()).min();
            }
            (moved, next_due)
        };
        // Some may have gone to a group rather than to pending; waking for nothing is allowed.
        if moved > 0 {
            self.wake_waiters();
        }
        Ok(Forwarded::new(moved, next_due.map(from_unix_secs)))
    }

    /// Never ends: an in-process subscription cannot be lost. Names the queue of every task
    /// scheduled or set to retry.
    async fn due_notices(&self) -> Result<BoxStream<'static, String>> {
        let (sender, receiver) = unbounded();
        self.inner.due.listeners().push(sender);
        Ok(receiver.boxed())
    }
}

/// The live [`Forward::due_notices`] streams.
#[derive(Debug, Default)]
pub(crate) struct DueNotices {
    listeners: std::sync::Mutex<Vec<UnboundedSender<String>>>,
}

impl DueNotices {
    fn listeners(&self) -> std::sync::MutexGuard<'_, Vec<UnboundedSender<String>>> {
        self.listeners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells every listener that a task of `queue` was scheduled or set to retry.
    pub(crate) fn notice(&self, queue: &QueueName) {
        self.listeners().retain(|listener| listener.unbounded_send(queue.to_string()).is_ok());
    }
}
