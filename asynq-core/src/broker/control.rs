//! The capability to carry operators' requests to running servers.

#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::control::ServerRequest;
use crate::error::Result;
use async_trait::async_trait;

/// Carries operators' requests to running servers, one kept per server ID. Opt-in, through
/// [`Capabilities::as_server_control`](crate::broker::Capabilities::as_server_control): a server
/// over a broker without it hears no request, and operators' tools answer
/// [`Error::Unsupported`].
#[async_trait]
pub trait ServerControl: Send + Sync {
    /// Operator's side: asks the live server `server_id` (a server whose heartbeat record has
    /// not expired) to quiet or to stop. The request is kept until the server reads it, or until
    /// [`server_request_expiry`](crate::control::server_request_expiry) of the server's record as it is now; a kept stop stays a stop
    /// when a quiet is asked after it ([`ServerRequest::merged`]), and a stop replaces a quiet.
    ///
    /// Errors, with nothing written: [`Error::InvalidArgument`] for a malformed ID
    /// ([`check_server_id`](crate::control::check_server_id)), [`Error::ServerNotFound`] when no live server has this ID.
    async fn request_server(&self, server_id: &str, request: ServerRequest) -> Result<()>;

    /// Worker's side: the request kept for `server_id`, removed as it is read (so each is acted
    /// on once); `None` when there is none, or it expired.
    async fn take_server_request(&self, server_id: &str) -> Result<Option<ServerRequest>>;
}
