//! The [`Tracker`](https://docs.rs/asynq-client)'s capability to wait for a task to finish.

#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::error::Result;
use crate::names::{QueueName, TaskId};
use crate::progress::Progress;
use crate::wait::TaskOutcome;
use async_trait::async_trait;
use std::time::Duration;

/// Waits for tasks to finish. Used by the client's `Tracker`.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Wait: Send + Sync {
    /// Resolves when task `id` of `queue` is completed, archived or gone, with how it ended; at
    /// once if it already is completed or archived. A task that is retried is not finished: the
    /// wait goes on through its retries.
    ///
    /// Errors: [`Error::InvalidArgument`] for a zero timeout (checked with [`validate_wait`](crate::validate_wait)
    /// before anything is written);
    /// [`Error::QueueNotFound`] for a queue that never had a task;
    /// [`Error::TaskNotFound`] for a task that is not there when the wait begins (it never
    /// existed, or it is already gone: one that succeeded without a retention is deleted at
    /// once, so a wait that may begin after it finished needs the task to have a retention);
    /// [`Error::WaitTimeout`] when the task is still unfinished after `timeout`;
    /// [`Error::Broker`] when the backend fails.
    async fn wait_for_outcome(&self, queue: &QueueName, id: &TaskId, timeout: Duration) -> Result<TaskOutcome>;

    /// The last progress report of task `id` of `queue` (see
    /// [`Dequeue::write_progress`](crate::broker::Dequeue::write_progress)); `None` when it made
    /// none, when the task is gone, or from a backend that keeps no progress (the default).
    ///
    /// Errors: [`Error::QueueNotFound`] for a queue that never had a task; [`Error::Broker`] when
    /// the backend fails.
    async fn task_progress(&self, queue: &QueueName, id: &TaskId) -> Result<Option<Progress>> {
        let _ = (queue, id);
        Ok(None)
    }
}
