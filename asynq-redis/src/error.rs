//! The errors of this crate, and how Redis errors become the core error type.

use asynq_core::BrokerError;

/// Why the broker could not connect.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL cannot be used; `reason` says what to fix. Passwords are redacted.
    #[error("invalid Redis URL {url}: {reason}")]
    InvalidUrl {
        /// The URL, password redacted.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// Redis did not answer, or refused the connection.
    #[error("cannot connect to Redis at {target}: {source}")]
    Connect {
        /// Where we tried to connect (passwords redacted).
        target: String,
        /// The client's error.
        source: redis::RedisError,
    },
    /// The TLS settings cannot be used; `reason` says what to fix.
    #[error("TLS: {reason}")]
    Tls {
        /// What is wrong.
        reason: String,
    },
    /// The namespace cannot be used; `reason` says why (see
    /// [`Namespace`](crate::Namespace) for the rules).
    #[error("invalid namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The name given.
        namespace: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The server is older than the scripts need.
    #[error("Redis {version} is too old: asynq needs Redis 6.2 or newer (for ZRANGE … BYSCORE and LMOVE)")]
    Unsupported {
        /// The server's version.
        version: String,
    },
}

/// A Redis error as a core broker error, classified by what the caller may do
/// ([`FailureKind`](asynq_core::FailureKind)): permanent when retrying cannot help; not applied
/// when the connection was refused or Redis refused the command before running it (loading its
/// data, a Cluster slot moving or down, a replica that takes no writes); otherwise (a timeout, a
/// connection lost with the command sent) the command may have run.
pub(crate) fn broker_error(context: &str, err: redis::RedisError) -> asynq_core::Error {
    use redis::{ErrorKind, RetryMethod, ServerErrorKind};
    let permanent = matches!(err.kind(), ErrorKind::AuthenticationFailed | ErrorKind::InvalidClientConfig)
        || matches!(err.retry_method(), RetryMethod::NoRetry);
    let refused_before_running = err.is_connection_refusal()
        || matches!(
            err.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
                    | ServerErrorKind::Moved
                    | ServerErrorKind::Ask
            )
        );
    let error = if permanent {
        BrokerError::permanent(context.to_owned()).with_source(err)
    } else if refused_before_running {
        BrokerError::not_applied(context.to_owned(), err)
    } else if err.is_timeout() {
        let message =
            format!("{context}: no reply from Redis within the response timeout (RedisConfig::response_timeout)");
        BrokerError::transient(message, err)
    } else {
        BrokerError::transient(context.to_owned(), err)
    };
    asynq_core::Error::Broker(error)
}

/// A reply that does not have the shape the script promises: a bug or corrupt data.
pub(crate) fn unexpected(context: &str, what: impl std::fmt::Display) -> asynq_core::Error {
    asynq_core::Error::Broker(BrokerError::permanent(format!("{context}: {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::FailureKind;
    use redis::{ErrorKind, RedisError, ServerErrorKind};

    fn kind(err: RedisError) -> FailureKind {
        broker_error("enqueue", err).kind()
    }

    #[test]
    fn failures_say_whether_the_command_may_have_run() {
        let io = |kind| RedisError::from(std::io::Error::from(kind));
        assert_eq!(kind(io(std::io::ErrorKind::ConnectionRefused)), FailureKind::NotApplied);
        assert_eq!(
            kind(RedisError::from((ErrorKind::Server(ServerErrorKind::BusyLoading), "loading"))),
            FailureKind::NotApplied
        );
        assert_eq!(
            kind(RedisError::from((ErrorKind::Server(ServerErrorKind::ReadOnly), "replica"))),
            FailureKind::NotApplied
        );
        // Sent, and no reply: the command may have run.
        assert_eq!(kind(io(std::io::ErrorKind::BrokenPipe)), FailureKind::OutcomeUnknown);
        assert_eq!(kind(io(std::io::ErrorKind::ConnectionReset)), FailureKind::OutcomeUnknown);
        assert_eq!(kind(io(std::io::ErrorKind::TimedOut)), FailureKind::OutcomeUnknown);
        assert_eq!(kind(RedisError::from((ErrorKind::AuthenticationFailed, "bad password"))), FailureKind::Permanent);

        let text = broker_error("enqueue", io(std::io::ErrorKind::BrokenPipe)).to_string();
        assert!(text.ends_with("(the command may have run)"), "{text}");
        let text = broker_error("enqueue", io(std::io::ErrorKind::ConnectionRefused)).to_string();
        assert!(text.ends_with("(the command did not run)"), "{text}");
    }
}
