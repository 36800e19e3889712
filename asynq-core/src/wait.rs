//! Waiting for a task to finish: how a task ended ([`TaskOutcome`]) and the broker trait that
//! waits for it ([`Wait`](crate::broker::Wait)).
//!
//! Go asynq has no such call (its users poll the inspector, asynq issues #511 and #851). A
//! broker waits by notification where it can, so a waiter costs no polling while its task runs.

use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::state::TaskState;
use crate::task::TaskInfo;
use bytes::Bytes;
use std::time::Duration;

/// How a task ended, as [`Wait::wait_for_outcome`](crate::broker::Wait::wait_for_outcome) reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskOutcome {
    /// It succeeded and is kept for its retention; the snapshot holds the result its handler
    /// wrote, if any.
    Completed(Box<TaskInfo>),
    /// It failed for good (its retries used up, or its handler skipped retries); the snapshot
    /// holds the last error.
    Archived(Box<TaskInfo>),
    /// It was there when the wait began and is gone now, so nothing is left to read: it
    /// succeeded without retention, was revoked, was deleted by an operator, or outlived its
    /// retention. Enqueue a task with a retention to read its result after it succeeds.
    Deleted,
}

impl TaskOutcome {
    /// The outcome of a task in the state `info` shows, or `None` while it is not finished
    /// (pending, scheduled, active, waiting to retry or aggregating).
    pub fn from_info(info: TaskInfo) -> Option<Self> {
        match info.state {
            TaskState::Completed => Some(TaskOutcome::Completed(Box::new(info))),
            TaskState::Archived => Some(TaskOutcome::Archived(Box::new(info))),
            _ => None,
        }
    }

    /// The outcome a wait's task lookup (such as
    /// [`Inspect::task_info`](crate::broker::Inspect::task_info)) tells: `None` while the task is
    /// unfinished; when the lookup found no such task, [`TaskOutcome::Deleted`] if an earlier
    /// lookup of the same wait found it (`seen`), else the lookup's
    /// [`Error::TaskNotFound`]: a task missing when the wait begins may never have existed.
    /// Other errors are passed on.
    pub fn from_lookup(lookup: Result<TaskInfo>, seen: bool) -> Result<Option<Self>> {
        match lookup {
            Ok(info) => Ok(Self::from_info(info)),
            Err(Error::TaskNotFound { .. }) if seen => Ok(Some(TaskOutcome::Deleted)),
            Err(e) => Err(e),
        }
    }

    /// The state the task ended in; `None` when it was deleted.
    pub fn state(&self) -> Option<TaskState> {
        self.info().map(|info| info.state)
    }

    /// The snapshot of the finished task; `None` when it was deleted.
    pub fn info(&self) -> Option<&TaskInfo> {
        match self {
            TaskOutcome::Completed(info) | TaskOutcome::Archived(info) => Some(info),
            TaskOutcome::Deleted => None,
        }
    }

    /// The result the handler wrote, for a completed task that wrote one.
    pub fn result(&self) -> Option<&Bytes> {
        match self {
            TaskOutcome::Completed(info) => info.result.as_ref(),
            _ => None,
        }
    }

    /// The error that archived the task.
    pub fn error(&self) -> Option<&str> {
        match self {
            TaskOutcome::Archived(info) => info.last_error.as_deref(),
            _ => None,
        }
    }
}

/// The progress in the answer to a task lookup: what a backend whose task info carries
/// progress answers [`Wait::task_progress`](crate::broker::Wait::task_progress) with (a task that is gone has none).
pub fn progress_from_lookup(lookup: Result<TaskInfo>) -> Result<Option<Progress>> {
    match lookup {
        Ok(info) => Ok(info.progress),
        Err(Error::TaskNotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Checks the timeout of [`Wait::wait_for_outcome`](crate::broker::Wait::wait_for_outcome) (its queue and task ID are checked by their
/// types): above zero.
pub fn validate_wait(timeout: Duration) -> Result<()> {
    if timeout.is_zero() {
        return Err(Error::invalid("timeout", "a wait needs a timeout above zero"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoredTask;
    use crate::names::{QueueName, TaskId};

    fn info(state: TaskState, error: &str, result: Option<&'static str>) -> TaskInfo {
        let msg = StoredTask {
            last_error: (!error.is_empty()).then(|| error.into()),
            ..StoredTask::new(TaskId::from_static("a"), QueueName::from_static("q"), "t")
        };
        TaskInfo::new(&msg, state, None, result.map(Bytes::from))
    }

    #[test]
    fn only_completed_and_archived_tasks_are_finished() {
        for state in TaskState::ALL {
            let outcome = TaskOutcome::from_info(info(state, "", None));
            let finished = matches!(state, TaskState::Completed | TaskState::Archived);
            assert_eq!(outcome.is_some(), finished, "{state}");
            if let Some(outcome) = outcome {
                assert_eq!(outcome.state(), Some(state));
            }
        }
    }

    #[test]
    fn a_task_that_went_is_deleted_one_never_seen_is_not_found_and_other_errors_pass() {
        let missing = || Err(Error::TaskNotFound { queue: QueueName::from_static("q"), id: TaskId::from_static("a") });
        assert_eq!(TaskOutcome::from_lookup(missing(), true).unwrap(), Some(TaskOutcome::Deleted));
        let never = TaskOutcome::from_lookup(missing(), false);
        assert!(matches!(never, Err(Error::TaskNotFound { .. })), "{never:?}");
        let message = never.unwrap_err().to_string();
        assert!(message.contains("without a retention"), "the error says why a finished task is not found: {message}");
        for seen in [false, true] {
            let unknown =
                TaskOutcome::from_lookup(Err(Error::QueueNotFound { queue: QueueName::from_static("q") }), seen);
            assert!(matches!(unknown, Err(Error::QueueNotFound { .. })), "{unknown:?}");
            assert_eq!(TaskOutcome::from_lookup(Ok(info(TaskState::Retry, "boom", None)), seen).unwrap(), None);
        }
    }

    #[test]
    fn accessors_report_the_result_or_the_error() {
        let completed = TaskOutcome::from_info(info(TaskState::Completed, "", Some("42"))).unwrap();
        assert_eq!((completed.result().map(|r| &r[..]), completed.error()), (Some(&b"42"[..]), None));
        let archived = TaskOutcome::from_info(info(TaskState::Archived, "boom", None)).unwrap();
        assert_eq!((archived.result(), archived.error()), (None, Some("boom")));
        let deleted = TaskOutcome::Deleted;
        assert_eq!((deleted.state(), deleted.info(), deleted.result(), deleted.error()), (None, None, None, None));
    }

    #[test]
    fn bad_wait_arguments_are_refused() {
        let invalid =
            |r: Result<()>, field: &str| matches!(r, Err(Error::InvalidArgument { field: f, .. }) if f == field);
        assert!(invalid(validate_wait(Duration::ZERO), "timeout"));
        assert!(validate_wait(Duration::from_millis(1)).is_ok());
    }
}
