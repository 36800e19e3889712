//! The error type shared by the core model, the broker traits and the client.

use crate::names::{GroupName, QueueName, TaskId};
use std::error::Error as StdError;
use std::fmt;

/// A `Result` whose error is [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between a caller and a broker.
///
/// Variants are classified by meaning, so callers match on them instead of parsing messages.
/// Backend failures (a lost connection, a script error) are [`Error::Broker`]; the backend's own
/// error type never appears here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument was refused before anything was written.
    #[error("invalid {field}: {reason}")]
    InvalidArgument {
        /// The argument or option at fault, e.g. `"queue"` or `"task type"`.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A task with the same ID already exists in the queue (Go's `ErrTaskIDConflict`).
    #[error("task ID conflicts with another task: queue {queue:?}, id {id:?}")]
    TaskIdConflict {
        /// The queue the task was enqueued to.
        queue: QueueName,
        /// The conflicting task ID.
        id: TaskId,
    },
    /// Another task holds the uniqueness lock for this queue, type and payload (Go's
    /// `ErrDuplicateTask`).
    #[error("task already exists: a unique task of type {type_name:?} with the same payload is in queue {queue:?}")]
    DuplicateTask {
        /// The queue the task was enqueued to.
        queue: QueueName,
        /// The task type.
        type_name: String,
    },
    /// No task with this ID exists in the queue (or it is not in the state the operation needs).
    /// A task that succeeded without a retention is deleted at once, so it is not found either.
    #[error(
        "task not found: queue {queue:?}, id {id:?} (no such task now: it never existed, was deleted, or \
         succeeded without a retention, which deletes it at once)"
    )]
    TaskNotFound {
        /// The queue that was searched.
        queue: QueueName,
        /// The task ID.
        id: TaskId,
    },
    /// The queue does not exist.
    #[error("queue not found: {queue:?}")]
    QueueNotFound {
        /// The queue name.
        queue: QueueName,
    },
    /// No workflow with this ID is kept: it never existed, or its record expired
    /// ([`WORKFLOW_RESULT_TTL`](crate::workflow::WORKFLOW_RESULT_TTL) after it was stored).
    #[error("workflow not found: {id:?}")]
    WorkflowNotFound {
        /// The workflow ID.
        id: crate::WorkflowId,
    },
    /// No live server has this ID: it never ran, or it shut down or died (its heartbeat record
    /// expired).
    #[error("server not found: {id:?} (no live server has this ID)")]
    ServerNotFound {
        /// The server ID.
        id: String,
    },
    /// A queue name is taken: a sharded queue's name or one of its shards' is a queue already,
    /// or the logical queue is declared otherwise ([`ShardedQueues`](crate::broker::ShardedQueues)).
    /// Nothing was written.
    #[error("queue name {queue:?} is taken: {reason}; nothing was written")]
    QueueNameConflict {
        /// The name at fault.
        queue: QueueName,
        /// What holds it.
        reason: String,
    },
    /// The queue still holds tasks.
    #[error("queue is not empty: {queue:?}")]
    QueueNotEmpty {
        /// The queue name.
        queue: QueueName,
    },
    /// The operation is not allowed in the current state, e.g. pausing a paused queue.
    #[error("{0}")]
    FailedPrecondition(String),
    /// The aggregation set does not exist: it was completed or deleted, or reclaimed after its
    /// deadline and its tasks put back in their group.
    #[error("aggregation set not found: queue {queue:?}, group {group:?}, set {set_id:?}")]
    AggregationSetNotFound {
        /// The queue.
        queue: QueueName,
        /// The group.
        group: GroupName,
        /// The set ID.
        set_id: String,
    },
    /// A wait for a task to finish ran out of time; the task had not finished.
    #[error("timed out after {timeout:?} waiting for task {id:?} in queue {queue:?} to finish")]
    WaitTimeout {
        /// The task's queue.
        queue: QueueName,
        /// The task ID.
        id: TaskId,
        /// How long the wait lasted.
        timeout: std::time::Duration,
    },
    /// A value is larger than a limit allows; nothing was written. Retrying the same call fails
    /// again.
    #[error("{what} of {size} bytes is over the limit of {limit} bytes ({limit_by}); nothing was written")]
    TooLarge {
        /// What is too large, e.g. `"payload"`.
        what: &'static str,
        /// Its size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
        /// Who sets the limit, e.g. `"Client::with_max_payload"`.
        limit_by: &'static str,
    },
    /// The broker lacks a capability the call needs (see
    /// [`Capabilities`](crate::broker::Capabilities)); nothing was done.
    #[error("the broker does not support {capability}")]
    Unsupported {
        /// The capability, e.g. `"cancelling tasks"`.
        capability: &'static str,
    },
    /// The backend failed.
    #[error(transparent)]
    Broker(#[from] BrokerError),
}

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument { field, reason: reason.into() }
    }

    /// A copy of a broker error (see [`BrokerError::duplicate`]); other errors are copied by
    /// their message as failed preconditions.
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Broker(e) => Error::Broker(e.duplicate()),
            other => Error::FailedPrecondition(other.to_string()),
        }
    }

    /// True when retrying the same call later may succeed (a backend outage), false when the
    /// call itself is at fault.
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Broker(e) if e.is_transient())
    }

    /// What the caller may do about this failure: retry ([`FailureKind::NotApplied`]), retry
    /// only a call that is safe to repeat ([`FailureKind::OutcomeUnknown`]), or give up
    /// ([`FailureKind::Permanent`]). Every error but [`Error::Broker`] is permanent: the call
    /// itself is at fault, and nothing was written.
    pub fn kind(&self) -> FailureKind {
        match self {
            Error::Broker(e) => e.kind(),
            _ => FailureKind::Permanent,
        }
    }
}

/// What a failed call means for whoever made it.
///
/// A call whose outcome is unknown may have taken effect. For an enqueue, retry it with the
/// same task ID ([`TaskOptions::task_id`](crate::TaskOptions::task_id)): if the first attempt
/// stored the task, the retry fails with [`Error::TaskIdConflict`], which then means "already
/// stored", and the task is never stored twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The call did not take effect (nothing reached the backend, or it refused the command
    /// before running it) and may succeed later: retrying is safe.
    NotApplied,
    /// The call may have taken effect: no reply came (a timeout, or the connection was lost
    /// after the command was sent). It may succeed later; retry only what is safe to repeat.
    OutcomeUnknown,
    /// Trying again will not help: bad input, a conflict, a bug, corrupt data or a
    /// misconfiguration.
    Permanent,
}

/// A failure inside a broker backend, with the backend's own error as its source.
pub struct BrokerError {
    kind: FailureKind,
    message: String,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl BrokerError {
    /// A failure that may go away by itself (a lost connection, a timeout) and whose call may
    /// have taken effect ([`FailureKind::OutcomeUnknown`]): the safe assumption when the backend
    /// cannot tell.
    pub fn transient(message: impl Into<String>, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self { kind: FailureKind::OutcomeUnknown, message: message.into(), source: Some(source.into()) }
    }

    /// A failure that may go away by itself and whose call certainly did not take effect
    /// ([`FailureKind::NotApplied`]): the connection was refused, or the backend refused the
    /// command before running it (Redis loading its data, a Cluster slot moving).
    pub fn not_applied(message: impl Into<String>, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self { kind: FailureKind::NotApplied, message: message.into(), source: Some(source.into()) }
    }

    /// A failure that retrying will not fix (a bug, corrupt data, a misconfiguration).
    pub fn permanent(message: impl Into<String>) -> Self {
        Self { kind: FailureKind::Permanent, message: message.into(), source: None }
    }

    /// Attaches the backend error that caused this one.
    pub fn with_source(mut self, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The backend's own error that caused this one, if any (for example to downcast it to
    /// the Redis client's error type). Its message is part of this error's.
    pub fn backend_error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.source.as_deref()
    }

    /// True when retrying later may succeed.
    pub fn is_transient(&self) -> bool {
        self.kind != FailureKind::Permanent
    }

    /// Whether the call took effect, and whether retrying may help.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// A copy with the same classification, its source folded into the message: for reporting
    /// one failure of a batch call as the error of each item in the batch.
    pub fn duplicate(&self) -> BrokerError {
        let message = match &self.source {
            Some(source) => format!("{}: {source}", self.message),
            None => self.message.clone(),
        };
        BrokerError { kind: self.kind, message, source: None }
    }
}

impl fmt::Display for BrokerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("broker error: ")?;
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        match self.kind {
            FailureKind::OutcomeUnknown => f.write_str(" (the command may have run)"),
            FailureKind::NotApplied => f.write_str(" (the command did not run)"),
            FailureKind::Permanent => Ok(()),
        }
    }
}

impl fmt::Debug for BrokerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("source", &self.source)
            .finish()
    }
}

impl StdError for BrokerError {
    /// The backend error's own cause: the message already includes the backend error, so a
    /// reporter that walks the chain (`anyhow`'s `{:#}`, `tracing`'s error fields) does not print
    /// it twice. [`BrokerError::backend_error`] gives the backend error itself.
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().and_then(|e| e.source())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend error with a cause of its own, as a Redis client's I/O error has.
    #[derive(Debug)]
    struct Backend(std::io::Error);

    impl fmt::Display for Backend {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection lost")
        }
    }

    impl StdError for Backend {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_chain_of_causes_names_the_backend_error_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let err = Error::from(BrokerError::transient("enqueue", Backend(io)));
        let mut chain = vec![err.to_string()];
        let mut cause = err.source();
        while let Some(next) = cause {
            chain.push(next.to_string());
            cause = next.source();
        }
        assert_eq!(chain, ["broker error: enqueue: connection lost (the command may have run)", "reset by peer"]);
        let Error::Broker(broker) = &err else { unreachable!() };
        assert!(broker.backend_error().is_some_and(|backend| backend.is::<Backend>()));
    }
}
