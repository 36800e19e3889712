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
    /// The server is older than the scripts need.
    #[error("Redis {version} is too old: asynq needs Redis 6.2 or newer (for ZRANGE … BYSCORE and LMOVE)")]
    Unsupported {
        /// The server's version.
        version: String,
    },
}

/// A Redis error as a core broker error: transient when reconnecting or retrying may fix it.
pub(crate) fn broker_error(context: &str, err: redis::RedisError) -> asynq_core::Error {
    use redis::{ErrorKind, RetryMethod};
    let permanent = matches!(err.kind(), ErrorKind::AuthenticationFailed | ErrorKind::InvalidClientConfig)
        || matches!(err.retry_method(), RetryMethod::NoRetry);
    let error = if permanent {
        BrokerError::permanent(context.to_owned()).with_source(err)
    } else if err.is_timeout() {
        // Whoever retries must know that the first attempt may have taken effect.
        let message = format!(
            "{context}: no reply from Redis within the response timeout (RedisConfig::response_timeout); \
             the command may still have run"
        );
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
