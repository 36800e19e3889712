//! Cancelling running tasks: a broker carries cancellation requests from whoever asks (an
//! operator's tool) to every server, as a stream of task IDs.
//!
//! The stream is backend-neutral: Redis carries it over the `asynq:cancel` pub/sub channel Go
//! asynq uses, the memory broker over an in-process channel. Delivery is best effort, as in Go:
//! a request reaches the servers subscribed when it is published, and nothing acknowledges it.

use crate::error::Result;
use crate::names::TaskId;
use async_trait::async_trait;
use futures::stream::BoxStream;

/// Carries requests to cancel running tasks. Used by operators (to ask) and by the server's
/// subscriber (to listen).
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Cancel: Send + Sync {
    /// Asks every server that runs task `id` right now to cancel it. The task's handler sees its
    /// cancellation token fire and the attempt ends as a failure, so the task goes to retry (or
    /// to the archive when its retries are used up), as in Go asynq.
    ///
    /// Fire and forget: succeeds whether or not any server runs the task, and a server that is
    /// not subscribed at this moment never hears of it.
    ///
    /// Errors: [`Error::Broker`](crate::Error::Broker) when the backend cannot publish.
    async fn cancel(&self, id: &TaskId) -> Result<()>;

    /// The IDs of tasks to cancel, as any process publishes them from the moment this returns
    /// (a request published just before may arrive too, if it was still on its way).
    ///
    /// The stream ends when the subscription is lost (a broken connection); call again to
    /// subscribe anew. Requests published in between are missed.
    ///
    /// Errors: [`Error::Broker`](crate::Error::Broker) when the backend cannot subscribe now.
    async fn cancellations(&self) -> Result<BoxStream<'static, String>>;
}
