//! What went wrong, as the tool reports it: a message, a hint saying what to do, and the exit
//! code that classifies it (documented in `asynq --help`).

use asynq_core::Error;
use std::fmt;

/// The meaning of a failure, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Failure {
    /// The operation failed (exit 1).
    Failed,
    /// Bad flags, arguments, config or URI (exit 2, as clap's own usage errors).
    Usage,
    /// No such queue or task (exit 3).
    NotFound,
    /// The task or queue is not in a state that allows the operation (exit 4).
    Precondition,
    /// Redis cannot be reached (exit 5).
    Connect,
    /// Whoever read stdout closed it (`asynq ... | head`): the command stops quietly (exit 141,
    /// what the shell shows for a process killed by `SIGPIPE`, as `ls | head` leaves `ls`).
    Closed,
}

impl Failure {
    /// The process exit code.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Failure::Failed => 1,
            Failure::Usage => 2,
            Failure::NotFound => 3,
            Failure::Precondition => 4,
            Failure::Connect => 5,
            Failure::Closed => 141,
        }
    }
}

/// An error to print on stderr before exiting with its code.
#[derive(Debug)]
pub(crate) struct CliError {
    /// What it means.
    pub(crate) failure: Failure,
    /// What went wrong.
    pub(crate) message: String,
    /// What to do about it, if there is something to say.
    pub(crate) hint: Option<String>,
    /// Already printed (by a [`Batch`]); only its exit code is left to give.
    pub(crate) reported: bool,
}

impl CliError {
    /// An error of the given kind.
    pub(crate) fn new(failure: Failure, message: impl Into<String>) -> Self {
        Self { failure, message: message.into(), hint: None, reported: false }
    }

    /// A usage error (exit 2).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self { failure: Failure::Usage, message: message.into(), hint: None, reported: false }
    }

    /// A failed write to stdout: [`Failure::Closed`], with nothing left to print, when the
    /// reader is gone (`EPIPE`), else a failure saying why (a full disk, say).
    pub(crate) fn stdout(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            return Self {
                failure: Failure::Closed,
                message: "stdout was closed".to_owned(),
                hint: None,
                reported: true,
            };
        }
        Self::new(Failure::Failed, format!("cannot write to stdout: {error}"))
    }

    /// Adds a hint.
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// An error of the broker or the client, classified, with the usual hint for its kind.
    pub(crate) fn from_core(error: Error) -> Self {
        let (failure, hint) = match &error {
            Error::QueueNotFound { .. } => {
                (Failure::NotFound, Some("run `asynq queue ls` to see the queues".to_owned()))
            }
            Error::TaskNotFound { queue, .. } => (
                Failure::NotFound,
                Some(format!("run `asynq task ls -q {queue} -s <state>` to see the tasks of the queue")),
            ),
            Error::WorkflowNotFound { .. } => (
                Failure::NotFound,
                Some("run `asynq workflow ls` to see the workflows kept (for 7 days after they are stored)".to_owned()),
            ),
            Error::ServerNotFound { .. } => {
                (Failure::NotFound, Some("run `asynq server ls` to see the live servers and their IDs".to_owned()))
            }
            Error::QueueNotEmpty { queue } => (
                Failure::Precondition,
                Some(format!("if you are sure you want to delete it, run `asynq queue rm --force {queue}`")),
            ),
            Error::FailedPrecondition(_)
            | Error::DuplicateTask { .. }
            | Error::TaskIdConflict { .. }
            | Error::QueueNameConflict { .. } => (Failure::Precondition, None),
            Error::InvalidArgument { .. } | Error::TooLarge { .. } => (Failure::Usage, None),
            Error::Broker(e) if e.is_transient() => {
                (Failure::Connect, Some("check that Redis is running and reachable, then try again".to_owned()))
            }
            _ => (Failure::Failed, None),
        };
        Self { failure, message: error.to_string(), hint, reported: false }
    }
}

impl From<Error> for CliError {
    fn from(error: Error) -> Self {
        Self::from_core(error)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

/// The outcome of a command.
pub(crate) type CliResult<T = ()> = Result<T, CliError>;

/// Runs an action per item, reporting each failure on stderr and going on, as Go's tool does
/// for commands that take several queues or IDs; the result is the first failure.
pub(crate) struct Batch {
    first: Option<CliError>,
}

impl Batch {
    /// No failure yet.
    pub(crate) fn new() -> Self {
        Self { first: None }
    }

    /// Records one item's failure, printing it now.
    pub(crate) fn fail(&mut self, error: CliError) {
        crate::output::errln!("{error}");
        if self.first.is_none() {
            self.first = Some(error);
        }
    }

    /// `Ok` when every item succeeded; else the first failure, already printed.
    pub(crate) fn finish(self) -> CliResult {
        match self.first {
            None => Ok(()),
            Some(first) => Err(CliError { reported: true, ..first }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{QueueName, TaskId};

    #[test]
    fn errors_map_to_documented_exit_codes() {
        let code = |e: Error| CliError::from_core(e).failure.exit_code();
        assert_eq!(code(Error::QueueNotFound { queue: QueueName::from_static("q") }), 3);
        assert_eq!(code(Error::TaskNotFound { queue: QueueName::from_static("q"), id: TaskId::from_static("i") }), 3);
        assert_eq!(code(Error::FailedPrecondition("task is already archived".into())), 4);
        assert_eq!(code(Error::QueueNotEmpty { queue: QueueName::from_static("q") }), 4);
        assert_eq!(code(Error::QueueNameConflict { queue: QueueName::from_static("q"), reason: "taken".into() }), 4);
        assert_eq!(code(Error::invalid("state", "bad")), 2);
        let shown = CliError::from_core(Error::QueueNotFound { queue: QueueName::from_static("q") }).to_string();
        assert!(shown.contains("asynq queue ls"), "{shown}");
    }

    #[test]
    fn a_closed_stdout_is_quiet_and_other_write_errors_are_failures() {
        let closed = CliError::stdout(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!((closed.failure.exit_code(), closed.reported), (141, true));
        let full = CliError::stdout(std::io::Error::from_raw_os_error(28));
        assert_eq!((full.failure.exit_code(), full.reported), (1, false));
        assert!(full.to_string().contains("cannot write to stdout"), "{full}");
    }
}
