//! The producer's trait.

use super::Capabilities;
#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::error::Result;
use crate::options::EnqueueRequest;
use async_trait::async_trait;

/// Stores new tasks. The only trait a producer needs.
///
/// Its supertrait [`Capabilities`] is where a producer finds the capabilities it uses when the
/// broker has them: a client places tasks on the shards of a sharded queue when the broker
/// keeps their declarations ([`Capabilities::as_sharded_queues`]). A backend with none writes
/// `impl Capabilities for MyBroker {}`.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Enqueue: Capabilities {
    /// Stores `request.message` in its queue, as pending, scheduled or aggregating according to
    /// `request.placement`, and registers the queue in the set of known queues.
    ///
    /// When `request.unique_ttl` is set the broker first takes the uniqueness lock for the
    /// queue, type and payload (held for that TTL, or until the task succeeds or is deleted) and
    /// records its key in the stored message's `unique_key`.
    ///
    /// Errors: [`Error::DuplicateTask`] if another task holds the
    /// lock (nothing is written); [`Error::TaskIdConflict`] if a
    /// task with this ID exists in the queue (nothing is written, except that a lock taken just
    /// before is kept until its TTL, as in Go asynq).
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()>;

    /// Stores many tasks, each exactly as [`Enqueue::enqueue`] would, in as few round trips as
    /// the backend allows. Each task succeeds or fails on its own (the batch is not atomic);
    /// the results are in the order of `requests`.
    ///
    /// The default implementation enqueues one task after the other.
    async fn enqueue_batch(&self, requests: Vec<EnqueueRequest>) -> Vec<Result<()>> {
        let mut results = Vec::with_capacity(requests.len());
        for request in requests {
            results.push(self.enqueue(request).await);
        }
        results
    }
}

/// The mock has no capability: a client over it sends every task to the queue it names.
#[cfg(feature = "mock")]
impl Capabilities for MockEnqueue {}
