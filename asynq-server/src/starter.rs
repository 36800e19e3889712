//! A starter records that this server starts tasks ([`LeaseStage::Started`]) before it runs or
//! holds them, batching what is recorded together: a fetch's tasks, those it runs at once and
//! those it takes ahead, cost one broker call per queue.
//!
//! Until that record is written a task is only taken, and an expired lease gives it back to its
//! queue uncharged (a lost dequeue reply). The tasks a fetch runs at once need no record here when
//! the dequeue itself started them ([`Dequeue::dequeue_starting`]): they run before it is
//! written for the others. Once written, an expired lease is a stall: the first
//! is forgiven ([`asynq_core::FREE_STALLS`]; a worker killed holding tasks taken ahead, or in the
//! moment before a handler's first line), and later ones are failed attempts, so a handler that
//! keeps killing its worker is still charged.

use asynq_core::broker::Dequeue;
use asynq_core::{BrokerError, Error, QueueName, Result, TaskId};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::{mpsc, oneshot};

/// The most requests gathered into one round of broker calls.
const MAX_BATCH: usize = 256;

struct Request {
    queue: QueueName,
    ids: Vec<TaskId>,
    reply: oneshot::Sender<Result<SystemTime>>,
}

/// The handle workers record starts through. The writing task ends when every handle is gone.
#[derive(Clone)]
pub(crate) struct Starter {
    requests: mpsc::UnboundedSender<Request>,
}

impl Starter {
    /// Starts the writing task on the current runtime.
    pub(crate) fn spawn(broker: Arc<dyn Dequeue>) -> Self {
        let (requests, mut incoming) = mpsc::unbounded_channel::<Request>();
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(MAX_BATCH);
            while incoming.recv_many(&mut batch, MAX_BATCH).await > 0 {
                let mut by_queue: BTreeMap<QueueName, (Vec<TaskId>, Vec<oneshot::Sender<_>>)> = BTreeMap::new();
                for Request { queue, ids, reply } in batch.drain(..) {
                    let (all_ids, replies) = by_queue.entry(queue).or_default();
                    all_ids.extend(ids);
                    replies.push(reply);
                }
                let calls = by_queue.into_iter().map(|(queue, (ids, replies))| {
                    let broker = Arc::clone(&broker);
                    async move { (broker.extend_leases(&queue, &ids).await, replies) }
                });
                for (result, replies) in futures::future::join_all(calls).await {
                    for reply in replies {
                        // The worker may have stopped waiting (its runtime is shutting down).
                        let _ = reply.send(result.as_ref().map(|expiry| *expiry).map_err(Error::duplicate));
                    }
                }
            }
        });
        Self { requests }
    }

    /// Records that handlers start `ids`, active tasks of `queue`, and renews their leases;
    /// returns the new lease expiry. Until it succeeds, none of them may start.
    pub(crate) async fn start(&self, queue: &QueueName, ids: Vec<TaskId>) -> Result<SystemTime> {
        let (reply, result) = oneshot::channel();
        let stopped = || Error::Broker(BrokerError::permanent("the start recorder has stopped"));
        self.requests.send(Request { queue: queue.to_owned(), ids, reply }).map_err(|_| stopped())?;
        result.await.unwrap_or_else(|_| Err(stopped()))
    }
}

impl fmt::Debug for Starter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Starter").finish_non_exhaustive()
    }
}
