//! Forward for [`RedisBroker`]: due scheduled and retry tasks moved to pending (or their group).

use super::quiet::existing_keys;
use super::*;
use asynq_core::QueueName;
use asynq_core::broker::Forwarded;
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::stream::BoxStream;
use std::sync::PoisonError;

#[async_trait]
impl Forward for RedisBroker {
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<Forwarded> {
        let now = self.now();
        let mut conn = self.conn();
        let (mut moved, mut next_due) = (0, None::<i64>);
        // Only the sets that hold tasks are looked at: one command finds them when none does.
        let sources: Vec<(&QueueName, String)> = queues
            .iter()
            .flat_map(|q| [(q, self.queue_keys(q).scheduled()), (q, self.queue_keys(q).retry())])
            .collect();
        let keys: Vec<String> = sources.iter().map(|(_, key)| key.clone()).collect();
        let held = existing_keys(self.conn(), &keys).await.map_err(|e| broker_error("forward", e))?;
        for (queue, source) in held.into_iter().map(|i| &sources[i]) {
            let k = self.queue_keys(queue);
            loop {
                let mut invocation = ScriptCall::new(&SCRIPTS.forward);
                invocation
                    .key(source)
                    .key(k.pending())
                    .key(k.idle_workers())
                    .key(k.prioritized())
                    .key(k.priority_sequence())
                    .key(k.groups());
                invocation.arg(unix_secs(now)).arg(k.task_prefix()).arg(unix_nanos(now)).arg(k.group_prefix());
                invocation.arg(k.ready_channel());
                let (n, next): (i64, Option<String>) = invocation.run(&mut conn, "forward").await?;
                moved += n as usize;
                if n > 0 {
                    self.pubsub().made_pending(queue);
                }
                if n < FORWARD_BATCH {
                    // A score Go wrote as a float reads as its whole seconds.
                    let next = next.and_then(|score| score.parse::<f64>().ok()).map(|score| score.floor() as i64);
                    next_due = next_due.into_iter().chain(next).min();
                    break;
                }
            }
        }
        Ok(Forwarded::new(moved, next_due.map(from_unix_secs)))
    }

    /// The queues of the scheduled sets our enqueue scripts publish on the namespace's
    /// due-notice channel (a task became the earliest of its set), and those in which this
    /// process set a task to retry. Go's producers and servers publish nothing: their tasks are
    /// found at the forwarder's next look.
    async fn due_notices(&self) -> Result<BoxStream<'static, String>> {
        let namespace = self.namespace().clone();
        let published = self
            .pubsub()
            .listen(&namespace.due_channel())
            .await
            .map_err(|e| broker_error("listen for scheduled tasks", e))?
            .filter_map(move |key| std::future::ready(namespace.queue_of_key(&key).map(|queue| queue.to_string())));
        // Ends with the subscription (the caller subscribes anew), the local notices with it.
        let published = published.map(Some).chain(futures::stream::once(std::future::ready(None)));
        let local = self.inner_retry_notices().listen().map(Some);
        let merged = futures::stream::select(published, local)
            .take_while(|notice| std::future::ready(notice.is_some()))
            .filter_map(std::future::ready);
        Ok(merged.boxed())
    }
}

/// The live local [`Forward::due_notices`] streams of one process, told of each queue in which
/// this process set a task to retry (no script publishes those: the settling server's own
/// forwarder serves the queue).
#[derive(Debug, Default)]
pub(crate) struct RetryNotices {
    listeners: std::sync::Mutex<Vec<UnboundedSender<String>>>,
}

impl RetryNotices {
    fn listeners(&self) -> std::sync::MutexGuard<'_, Vec<UnboundedSender<String>>> {
        self.listeners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn listen(&self) -> UnboundedReceiver<String> {
        let (sender, receiver) = unbounded();
        self.listeners().push(sender);
        receiver
    }

    /// Tells every listener that a task of `queue` was set to retry.
    pub(crate) fn notice(&self, queue: &str) {
        self.listeners().retain(|listener| listener.unbounded_send(queue.to_owned()).is_ok());
    }
}
