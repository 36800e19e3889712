//! A settler writes the outcomes of finished attempts, batching those that finish together:
//! under load, one broker call (one round trip, and on Redis one script for all successes of a
//! queue) settles many tasks; when idle, an outcome is written at once.

use asynq_core::broker::{Dequeue, Outcome};
use asynq_core::{BrokerError, Error, Result, StoredTask};
use std::fmt;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// The most outcomes written by one broker call.
const MAX_BATCH: usize = 256;

struct Request {
    message: StoredTask,
    outcome: Outcome,
    reply: oneshot::Sender<Result<()>>,
}

/// The handle workers send outcomes through. The writing task ends when every handle is gone.
#[derive(Clone)]
pub(crate) struct Settler {
    requests: mpsc::UnboundedSender<Request>,
}

impl Settler {
    /// Starts the writing task on the current runtime.
    pub(crate) fn spawn(broker: Arc<dyn Dequeue>) -> Self {
        let (requests, mut incoming) = mpsc::unbounded_channel::<Request>();
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(MAX_BATCH);
            while incoming.recv_many(&mut batch, MAX_BATCH).await > 0 {
                let (items, replies): (Vec<_>, Vec<_>) =
                    batch.drain(..).map(|r| ((r.message, r.outcome), r.reply)).unzip();
                let results = match <[_; 1]>::try_from(items) {
                    Ok([(message, outcome)]) => vec![broker.finish(&message, outcome).await],
                    Err(items) => broker.finish_batch(items).await,
                };
                for (reply, result) in replies.into_iter().zip(results) {
                    // The worker may have stopped waiting (its runtime is shutting down).
                    let _ = reply.send(result);
                }
            }
        });
        Self { requests }
    }

    /// Writes `outcome` for the active task `message`, batched with the outcomes of other
    /// tasks finishing at the same moment.
    pub(crate) async fn settle(&self, message: StoredTask, outcome: Outcome) -> Result<()> {
        let (reply, result) = oneshot::channel();
        let stopped = || Error::Broker(BrokerError::permanent("the outcome writer has stopped"));
        self.requests.send(Request { message, outcome, reply }).map_err(|_| stopped())?;
        result.await.unwrap_or_else(|_| Err(stopped()))
    }
}

impl fmt::Debug for Settler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settler").finish_non_exhaustive()
    }
}
