//! Enqueue for [`MemoryBroker`]: tasks stored as pending, scheduled or aggregating, one lock per call.

use super::*;

#[async_trait]
impl Enqueue for MemoryBroker {
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()> {
        let now = self.now();
        let to_pending = request.placement == Placement::Pending;
        let scheduled = matches!(request.placement, Placement::Scheduled { .. }).then(|| request.message.queue.clone());
        // A debounced task may delete the task it replaces: waits on its outcome look again.
        let may_delete = request.replace.is_some();
        {
            let mut state = self.state();
            // Registered even when the enqueue then fails, as Go's `SADD` runs first.
            state.known.insert(request.message.queue.clone());
            state.queue_entry(&request.message.queue).enqueue(request, now)?;
        }
        if to_pending {
            self.wake_waiters();
        }
        if let Some(queue) = scheduled {
            self.inner.due.notice(&queue);
        }
        if may_delete {
            self.inner.signals.task_finished();
        }
        Ok(())
    }
}
