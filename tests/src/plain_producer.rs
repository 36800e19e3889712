//! [`PlainProducer`]: a producer that does not place tasks on shards, as Go's producers.

use async_trait::async_trait;
use asynq_core::broker::{Capabilities, Enqueue};
use asynq_core::{EnqueueRequest, Result};

/// A producer's view of the broker `B` that shows none of its capabilities: a
/// [`Client`](asynq_client::Client) over it sends each task to the queue it names, as Go asynq's
/// producers do, so a task enqueued to a sharded queue's logical name goes to the plain queue of
/// that name.
#[derive(Debug, Clone)]
pub struct PlainProducer<B>(pub B);

impl<B: Enqueue> Capabilities for PlainProducer<B> {}

#[async_trait]
impl<B: Enqueue> Enqueue for PlainProducer<B> {
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()> {
        self.0.enqueue(request).await
    }

    async fn enqueue_batch(&self, requests: Vec<EnqueueRequest>) -> Vec<Result<()>> {
        self.0.enqueue_batch(requests).await
    }
}
