//! Cancellation requests and finish notifications, within the process: [`Cancel`] keeps each
//! request for [`CANCEL_KEEP`] and fans it out to every live subscription, and [`Wait`] sleeps
//! until a task finishes for good, then looks again.

use crate::MemoryBroker;
use async_trait::async_trait;
use asynq_core::broker::{Cancel, Inspect, Wait};
use asynq_core::time::{from_unix_nanos, unix_nanos};
use asynq_core::{
    CANCEL_KEEP, CancelOutcome, Error, MAX_KEPT_CANCELS, Progress, QueueName, Result, TaskId, TaskOutcome,
    cancel_outcome, progress_from_lookup, validate_wait,
};
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use futures::stream::BoxStream;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// What the broker's clones share for cancellation and waiting.
#[derive(Default)]
pub(crate) struct Signals {
    /// Notified whenever a task is done, completed or archived.
    finished: Notify,
    /// One sender per live [`Cancel::cancellations`] stream; closed ones are dropped on the
    /// next request.
    cancellations: Mutex<Vec<UnboundedSender<String>>>,
    /// The kept cancellation requests: task ID to expiry, in Unix milliseconds as Redis scores them.
    kept: Mutex<HashMap<TaskId, i64>>,
}

impl Signals {
    /// Wakes every wait, to look whether its task is the one that finished. Whatever makes a
    /// task leave for good (done, completed, archived, deleted) calls it.
    pub(crate) fn task_finished(&self) {
        self.finished.notify_waiters();
    }

    fn subscribers(&self) -> std::sync::MutexGuard<'_, Vec<UnboundedSender<String>>> {
        self.cancellations.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, i64>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps a request to cancel `id` until `now + CANCEL_KEEP`, as Redis's `keep_cancel.lua`
    /// does: past [`MAX_KEPT_CANCELS`], expired requests go, then the ones closest to expiry.
    fn keep(&self, id: &TaskId, now: SystemTime) {
        let (now, expiry) = (millis(now), millis(now + CANCEL_KEEP));
        let mut kept = self.kept();
        kept.insert(id.to_owned(), expiry);
        // Expired requests are never listed nor settled, so they need going only to make room.
        if kept.len() > MAX_KEPT_CANCELS {
            kept.retain(|_, e| *e > now);
        }
        if kept.len() > MAX_KEPT_CANCELS {
            let mut by_expiry: Vec<(i64, TaskId)> = kept.iter().map(|(id, e)| (*e, id.clone())).collect();
            by_expiry.sort();
            for (_, id) in by_expiry.into_iter().take(kept.len() - MAX_KEPT_CANCELS) {
                kept.remove(&id);
            }
        }
    }
}

impl fmt::Debug for Signals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signals").field("cancellation_subscribers", &self.subscribers().len()).finish_non_exhaustive()
    }
}

/// `t` in Unix milliseconds.
fn millis(t: SystemTime) -> i64 {
    unix_nanos(t).div_euclid(1_000_000)
}

#[async_trait]
impl Cancel for MemoryBroker {
    async fn cancel(&self, id: &TaskId) -> Result<CancelOutcome> {
        self.inner.signals.keep(id, self.now());
        self.inner.signals.subscribers().retain(|subscriber| subscriber.unbounded_send(id.to_string()).is_ok());
        cancel_outcome(self, id).await
    }

    /// Never ends: an in-process subscription cannot be lost.
    async fn cancellations(&self) -> Result<BoxStream<'static, String>> {
        let (sender, receiver) = unbounded();
        self.inner.signals.subscribers().push(sender);
        Ok(receiver.boxed())
    }

    async fn kept_cancellations(&self) -> Result<Vec<(TaskId, SystemTime)>> {
        let now = millis(self.now());
        let mut kept: Vec<(i64, TaskId)> =
            self.inner.signals.kept().iter().filter(|(_, e)| **e > now).map(|(id, e)| (*e, id.clone())).collect();
        kept.sort();
        Ok(kept.into_iter().map(|(expiry, id)| (id, from_unix_nanos(expiry * 1_000_000))).collect())
    }

    async fn settle_cancellation(&self, id: &TaskId) -> Result<bool> {
        let now = millis(self.now());
        Ok(self.inner.signals.kept().remove(id).is_some_and(|expiry| expiry > now))
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

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::SimulatedClock;
    use std::sync::Arc;

    #[tokio::test]
    async fn at_most_max_kept_cancels_are_kept_the_soonest_to_expire_going_first() {
        let clock = SimulatedClock::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000));
        let broker = MemoryBroker::with_clock(Arc::new(clock.clone()));
        for i in 0..=MAX_KEPT_CANCELS {
            broker.cancel(&TaskId::new(format!("t{i}")).unwrap()).await.unwrap();
            clock.advance(Duration::from_millis(1));
        }
        let kept = broker.kept_cancellations().await.unwrap();
        assert_eq!(kept.len(), MAX_KEPT_CANCELS);
        assert_eq!(kept[0].0.as_str(), "t1", "the oldest request went");
        assert_eq!(kept.last().unwrap().0.to_string(), format!("t{MAX_KEPT_CANCELS}"));
    }
}
