//! The capability to cancel running tasks, and what a request finds ([`cancel_outcome`]); [`crate::CancelOutcome`] and the
//! rules are in the crate root.

use super::Inspect;
use crate::cancel::CancelOutcome;
use crate::error::{Error, Result};
use crate::names::TaskId;
use async_trait::async_trait;
use futures::stream::BoxStream;
use std::time::SystemTime;

/// Carries requests to cancel running tasks. Used by operators (to ask) and by the server's
/// subscriber (to listen).
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Cancel: Send + Sync {
    /// Asks every server that runs task `id` now, or takes it within [`CANCEL_KEEP`](crate::CANCEL_KEEP), to cancel
    /// it: keeps the request (dropping expired ones, and the ones closest to expiry past
    /// [`MAX_KEPT_CANCELS`](crate::MAX_KEPT_CANCELS)), publishes it to the servers subscribed now, then says what it
    /// found ([`cancel_outcome`](crate::cancel_outcome)). The task's handler sees its cancellation token fire and the
    /// attempt ends as a failure, so the task goes to retry (or to the archive when its retries
    /// are used up), as in Go asynq.
    ///
    /// Asking again renews the request. Nothing confirms the cancellation itself.
    ///
    /// Errors: [`Error::Broker`] when the backend cannot keep or publish
    /// the request, or cannot look for the task (the request is then kept and published).
    async fn cancel(&self, id: &TaskId) -> Result<CancelOutcome>;

    /// The IDs of tasks to cancel, as any process publishes them from the moment this returns
    /// (a request published just before may arrive too, if it was still on its way).
    ///
    /// The stream ends when the subscription is lost (a broken connection); call again to
    /// subscribe anew, then read [`Cancel::kept_cancellations`] for what was asked meanwhile.
    ///
    /// Errors: [`Error::Broker`] when the backend cannot subscribe now.
    async fn cancellations(&self) -> Result<BoxStream<'static, String>>;

    /// The cancellation requests kept now, each with the time it expires, soonest first: those
    /// [`Cancel::cancel`] made within [`CANCEL_KEEP`](crate::CANCEL_KEEP) that no server settled.
    ///
    /// Errors: [`Error::Broker`] when the backend cannot be read.
    async fn kept_cancellations(&self) -> Result<Vec<(TaskId, SystemTime)>>;

    /// Settles the kept request to cancel task `id`, as the server that cancels the task does:
    /// removes it, and says whether it was kept and not expired. Only one caller gets `true`
    /// for one request; a server cancels a task it took only when it does.
    ///
    /// Errors: [`Error::Broker`] when the backend cannot be written.
    async fn settle_cancellation(&self, id: &TaskId) -> Result<bool>;
}

/// What a request to cancel task `id` finds, looked up through `broker`: the servers whose
/// heartbeats report running it; if none, the first queue (by name) holding the task, and its
/// state; if none, [`CancelOutcome::UnknownTask`]. Brokers' [`Cancel::cancel`](crate::broker::Cancel::cancel) answers with it.
///
/// Errors: [`Error::Broker`](crate::Error::Broker) when the broker cannot be read.
pub async fn cancel_outcome<B: Inspect + ?Sized>(broker: &B, id: &TaskId) -> Result<CancelOutcome> {
    let servers: Vec<String> = broker
        .servers()
        .await?
        .into_iter()
        .filter(|(_, workers)| workers.iter().any(|w| w.task_id == id.as_str()))
        .map(|(server, _)| server.server_id)
        .collect();
    cancel_outcome_given(broker, id, servers).await
}

/// As [`cancel_outcome`], with `servers`, the IDs of the live servers whose heartbeats report
/// running task `id`, already found (by a backend that finds them more cheaply than by reading
/// every worker of every server).
///
/// Errors: [`Error::Broker`](crate::Error::Broker) when the broker cannot be read.
pub async fn cancel_outcome_given<B: Inspect + ?Sized>(
    broker: &B,
    id: &TaskId,
    mut servers: Vec<String>,
) -> Result<CancelOutcome> {
    if !servers.is_empty() {
        servers.sort();
        servers.dedup();
        return Ok(CancelOutcome::Running { servers });
    }
    for queue in broker.queues().await? {
        match broker.task_info(&queue, id).await {
            Ok(info) => return Ok(CancelOutcome::NotRunning { queue, state: info.state }),
            // A queue deleted meanwhile holds nothing.
            Err(Error::TaskNotFound { .. } | Error::QueueNotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(CancelOutcome::UnknownTask)
}
