//! A settler writes the outcomes of finished attempts, batching those that finish together:
//! one broker call (one round trip, and on Redis one script for all successes of a queue)
//! settles many tasks.
//!
//! When an outcome arrives it takes every outcome that is ready, and while other attempts of
//! the server are running it lets the runtime run what is ready before it writes, a pass at a
//! time, taking what each pass brings: attempts that finish in the meantime (at low
//! concurrency, short tasks finish one after the other rather than together) join the same
//! call. It stops at the first passes that bring nothing, after [`MAX_GATHER_PASSES`] at most,
//! so an outcome waits for no timer and no attempt that is still working; with no other attempt
//! running (an idle server's lone task), it is written at once.
//!
//! Every outcome handed over is written and answered: the writing task ends only once every
//! handle is gone and nothing is left to write, so shutdown loses none.

use asynq_core::broker::{Dequeue, Outcome};
use asynq_core::{BrokerError, Error, Result, StoredTask};
use std::fmt;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::oneshot;

/// The most outcomes written by one broker call.
const MAX_BATCH: usize = 256;

/// The most passes of the runtime an outcome waits for others while attempts are running.
const MAX_GATHER_PASSES: usize = 8;

/// How many passes in a row that bring no outcome end the wait.
const IDLE_PASSES: usize = 2;

struct Request {
    message: StoredTask,
    outcome: Outcome,
    reply: oneshot::Sender<Result<()>>,
}

/// Says whether attempts are running on the server, whose outcomes may follow soon.
pub(crate) type Running = Box<dyn Fn() -> bool + Send + Sync>;

/// The handle workers send outcomes through. The writing task ends when every handle is gone.
#[derive(Clone)]
pub(crate) struct Settler {
    requests: mpsc::UnboundedSender<Request>,
}

impl Settler {
    /// Starts the writing task on the current runtime; `running` says whether to wait for the
    /// outcomes of attempts still running (see the module docs).
    pub(crate) fn spawn(broker: Arc<dyn Dequeue>, running: Running) -> Self {
        let (requests, mut incoming) = mpsc::unbounded_channel::<Request>();
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(MAX_BATCH);
            while incoming.recv_many(&mut batch, MAX_BATCH).await > 0 {
                gather(&mut incoming, &mut batch, &running).await;
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

/// Adds to `batch` the outcomes that arrive while the runtime runs what is ready, as long as
/// attempts are running and passes bring outcomes (see the module docs).
async fn gather(incoming: &mut mpsc::UnboundedReceiver<Request>, batch: &mut Vec<Request>, running: &Running) {
    let (mut passes, mut idle) = (0, 0);
    while batch.len() < MAX_BATCH && passes < MAX_GATHER_PASSES && idle < IDLE_PASSES && running() {
        tokio::task::yield_now().await;
        passes += 1;
        let before = batch.len();
        while batch.len() < MAX_BATCH {
            match incoming.try_recv() {
                Ok(request) => batch.push(request),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        idle = if batch.len() == before { idle + 1 } else { 0 };
    }
}

impl fmt::Debug for Settler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settler").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use asynq_core::broker::{Dequeued, Enqueue};
    use asynq_core::{QueueName, Task, TaskId, TaskOptions, resolve_enqueue};
    use asynq_memory::MemoryBroker;
    use bytes::Bytes;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::SystemTime;

    /// The memory broker, recording how many outcomes each write carried.
    struct Counting {
        inner: MemoryBroker,
        writes: Mutex<Vec<usize>>,
    }

    #[async_trait]
    impl Dequeue for Counting {
        async fn dequeue(&self, queues: &[QueueName], max: usize) -> Result<Vec<Dequeued>> {
            self.inner.dequeue(queues, max).await
        }
        async fn finish(&self, message: &StoredTask, outcome: Outcome) -> Result<()> {
            self.writes.lock().unwrap().push(1);
            self.inner.finish(message, outcome).await
        }
        async fn finish_batch(&self, items: Vec<(StoredTask, Outcome)>) -> Vec<Result<()>> {
            self.writes.lock().unwrap().push(items.len());
            self.inner.finish_batch(items).await
        }
        async fn extend_leases(&self, queue: &QueueName, ids: &[TaskId]) -> Result<SystemTime> {
            self.inner.extend_leases(queue, ids).await
        }
        async fn write_result(&self, queue: &QueueName, id: &TaskId, result: Bytes) -> Result<()> {
            self.inner.write_result(queue, id, result).await
        }
    }

    /// A broker holding `n` active tasks, and their messages.
    async fn active_tasks(n: usize) -> (Arc<Counting>, Vec<StoredTask>) {
        let inner = MemoryBroker::new();
        for i in 0..n {
            let task = Task::new("t", format!("{i}"));
            let request =
                resolve_enqueue(&task, &TaskOptions::new(), SystemTime::UNIX_EPOCH, || format!("t{i}")).unwrap();
            inner.enqueue(request).await.unwrap();
        }
        let taken = inner.dequeue(&[QueueName::default()], n).await.unwrap();
        let messages = taken.into_iter().map(|t| t.message).collect();
        (Arc::new(Counting { inner, writes: Mutex::default() }), messages)
    }

    /// Attempts that finish one after the other while the first outcome is being handed over
    /// (as short tasks at low concurrency do) are written by one call.
    #[tokio::test]
    async fn outcomes_of_attempts_finishing_one_after_the_other_share_a_write() {
        let (broker, messages) = active_tasks(5).await;
        let running = Arc::new(AtomicUsize::new(messages.len()));
        let still_running = Arc::clone(&running);
        let settler = Settler::spawn(broker.clone(), Box::new(move || still_running.load(Ordering::SeqCst) > 0));
        let attempts: Vec<_> = messages
            .into_iter()
            .enumerate()
            .map(|(i, message)| {
                let (settler, running) = (settler.clone(), Arc::clone(&running));
                tokio::spawn(async move {
                    // Each attempt finishes a pass of the runtime after the one before.
                    for _ in 0..i {
                        tokio::task::yield_now().await;
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    settler.settle(message, Outcome::Done).await
                })
            })
            .collect();
        for attempt in attempts {
            attempt.await.unwrap().unwrap();
        }
        assert_eq!(*broker.writes.lock().unwrap(), [5]);
    }

    /// An outcome waits for no attempt that goes on working: with one still running and
    /// nothing more arriving, it is written alone, after a bounded number of passes.
    #[tokio::test]
    async fn a_lone_outcome_is_written_without_waiting_for_running_attempts() {
        let (broker, mut messages) = active_tasks(1).await;
        let settler = Settler::spawn(broker.clone(), Box::new(|| true));
        settler.settle(messages.remove(0), Outcome::Done).await.unwrap();
        assert_eq!(*broker.writes.lock().unwrap(), [1]);
    }

    /// With no other attempt running, each outcome is written as it comes, each by its own call.
    #[tokio::test]
    async fn an_idle_servers_outcomes_are_written_at_once() {
        let (broker, messages) = active_tasks(2).await;
        let settler = Settler::spawn(broker.clone(), Box::new(|| false));
        for message in messages {
            settler.settle(message, Outcome::Done).await.unwrap();
        }
        assert_eq!(*broker.writes.lock().unwrap(), [1, 1]);
    }
}
