//! Cancelling running tasks: a broker carries cancellation requests from whoever asks (an
//! operator's tool) to every server, as a stream of task IDs, and keeps each request for a
//! while, so that a server that was not listening when it was made still honours it.
//!
//! The stream is backend-neutral: Redis carries it over the `asynq:cancel` pub/sub channel Go
//! asynq uses, the memory broker over an in-process channel. A request published while a server
//! is not subscribed (it is starting, or its connection dropped) would be lost, as in Go; so the
//! broker also keeps every request of ours for [`CANCEL_KEEP`] (at most [`MAX_KEPT_CANCELS`] of
//! them), and a server reads the kept requests each time it subscribes, and cancels a task it
//! takes later while a request for it is kept. The server that cancels a task settles its
//! request ([`Cancel::settle_cancellation`](crate::broker::Cancel::settle_cancellation)), so the task's next attempt runs.

use crate::names::QueueName;
use crate::state::TaskState;
use std::fmt;
use std::time::Duration;

/// How long a cancellation request is kept unless a server settles it first: a server that
/// subscribes, or takes the task, within this time after the request cancels the task.
pub const CANCEL_KEEP: Duration = Duration::from_secs(30);

/// The most cancellation requests kept at once; past it, the ones closest to expiry go first.
pub const MAX_KEPT_CANCELS: usize = 10_000;

/// What [`Cancel::cancel`](crate::broker::Cancel::cancel) found when it made its request. In every case the request is kept
/// for [`CANCEL_KEEP`]: a server that runs the task, or takes it within that time, cancels it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelOutcome {
    /// Servers report running the task (as their last heartbeats wrote it), and were asked to
    /// cancel it: their IDs ([`ServerInfo::server_id`](crate::ServerInfo::server_id)), sorted.
    Running {
        /// The IDs of the servers running the task.
        servers: Vec<String>,
    },
    /// The task is in `queue`, in `state`, and no server reports running it. An
    /// [`TaskState::Active`] task here started after its server's last heartbeat (or its
    /// server died): a live server running it cancels it all the same.
    NotRunning {
        /// The queue holding the task (the first, by name, if several hold a task of this ID).
        queue: QueueName,
        /// Its state.
        state: TaskState,
    },
    /// No queue holds a task of this ID and no server reports running it: it finished and was
    /// not retained, was deleted, or never existed.
    UnknownTask,
}

/// In words, for operators: "running on server a, b", "not running (pending in queue
/// default)", "unknown task".
impl fmt::Display for CancelOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Running { servers } => {
                let noun = if servers.len() == 1 { "server" } else { "servers" };
                write!(f, "running on {noun} {}", servers.join(", "))
            }
            Self::NotRunning { queue, state } => write!(f, "not running ({state} in queue {queue})"),
            Self::UnknownTask => f.write_str("unknown task"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_reads_as_what_it_found() {
        let running = CancelOutcome::Running { servers: vec!["a".into(), "b".into()] };
        assert_eq!(running.to_string(), "running on servers a, b");
        assert_eq!(CancelOutcome::Running { servers: vec!["a".into()] }.to_string(), "running on server a");
        let pending = CancelOutcome::NotRunning { queue: QueueName::from_static("default"), state: TaskState::Pending };
        assert_eq!(pending.to_string(), "not running (pending in queue default)");
        assert_eq!(CancelOutcome::UnknownTask.to_string(), "unknown task");
    }
}
