//! Requests operators make of running servers: to quiet (finish what runs, take nothing new) or
//! to stop (shut down gracefully, as on SIGTERM). A request is kept for one server ID and read by
//! that server on its next heartbeat; one kept for a server that died expires by itself.
//!
//! Go asynq's servers never read these requests: they go on as before, and the request expires.

use crate::error::{Error, Result};
use std::fmt;
use std::time::{Duration, SystemTime};

/// What an operator asks a server to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerRequest {
    /// Stop taking new tasks and let the running ones finish (Go's "stop processing", the state
    /// SIGTSTP puts a server in); the server then reports [`ServerStatus::Stopped`](crate::ServerStatus::Stopped).
    Quiet,
    /// Shut down gracefully, as on SIGTERM: take nothing new, let running tasks finish within
    /// the shutdown timeout and give back those that do not, then end `Server::run`.
    Stop,
}

impl ServerRequest {
    /// The request's name: `quiet` or `stop`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerRequest::Quiet => "quiet",
            ServerRequest::Stop => "stop",
        }
    }

    /// The request named `name` (`quiet` or `stop`), or `None`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "quiet" => Some(ServerRequest::Quiet),
            "stop" => Some(ServerRequest::Stop),
            _ => None,
        }
    }

    /// What a server kept asked both `self` and `other` must do: a stop includes a quiet, so a
    /// quiet never takes the place of a stop kept before it.
    pub fn merged(self, other: ServerRequest) -> ServerRequest {
        self.max(other)
    }
}

impl fmt::Display for ServerRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How long a request outlives the server record it was made for: a live server rewrites its
/// record before it expires and reads its request in the same heartbeat, so a request is read
/// unless the server died, and then it is gone a minute after the server's record.
pub const SERVER_REQUEST_GRACE: Duration = Duration::from_secs(60);

/// The longest server ID a request may name.
pub const MAX_SERVER_ID_LEN: usize = 256;

/// Checks a server ID given by an operator: 1 to [`MAX_SERVER_ID_LEN`] bytes, not blank, without
/// control characters.
///
/// Errors: [`Error::InvalidArgument`] naming the field `server ID`.
pub fn check_server_id(id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::invalid("server ID", "it is empty"));
    }
    if id.len() > MAX_SERVER_ID_LEN {
        return Err(Error::invalid("server ID", format!("it is {} bytes, over {MAX_SERVER_ID_LEN}", id.len())));
    }
    if id.chars().any(char::is_control) {
        return Err(Error::invalid("server ID", "it contains a control character"));
    }
    Ok(())
}

/// When a request made at the time a server's record expires at `record_expiry` expires itself:
/// [`SERVER_REQUEST_GRACE`] later.
pub fn server_request_expiry(record_expiry: SystemTime) -> SystemTime {
    crate::time::add_clamped(record_expiry, SERVER_REQUEST_GRACE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_back_by_name_and_a_stop_outweighs_a_quiet() {
        for request in [ServerRequest::Quiet, ServerRequest::Stop] {
            assert_eq!(ServerRequest::parse(request.as_str()), Some(request));
            assert_eq!(request.to_string(), request.as_str());
        }
        assert_eq!(ServerRequest::parse("pause"), None);
        assert_eq!(ServerRequest::Stop.merged(ServerRequest::Quiet), ServerRequest::Stop);
        assert_eq!(ServerRequest::Quiet.merged(ServerRequest::Stop), ServerRequest::Stop);
        assert_eq!(ServerRequest::Quiet.merged(ServerRequest::Quiet), ServerRequest::Quiet);
    }

    #[test]
    fn server_ids_are_checked_as_names() {
        assert!(check_server_id("8f2a6c4e-1d3b-4f5a-9c7e-2b1d0e3f4a5b").is_ok());
        assert!(check_server_id(&"x".repeat(MAX_SERVER_ID_LEN)).is_ok());
        for bad in ["", " \t", "a\nb", "\u{7f}"] {
            assert!(matches!(check_server_id(bad), Err(Error::InvalidArgument { field: "server ID", .. })), "{bad:?}");
        }
        assert!(check_server_id(&"x".repeat(MAX_SERVER_ID_LEN + 1)).is_err());
    }
}
