//! What a server does when told to quiet or stop, by SIGTSTP, by [`Server::stop`](crate::Server::stop)
//! or by an operator's request that its heartbeat read ([`asynq_core::ServerControl`]): quieting
//! ends the fetch loop and reports the server `stopped`; a stop request quiets it and wakes
//! [`Server::run`](crate::Server::run) (or whoever awaits [`Server::stop_requested`](crate::Server::stop_requested)),
//! which then shuts it down as on SIGTERM. It holds the server's status ([`StatusCell`]), which the
//! heartbeater reports.

use asynq_core::{ServerRequest, ServerStatus};
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;

/// The server's status, shared by the server (which changes it) and the heartbeater (which
/// reports it).
#[derive(Debug, Clone)]
pub(crate) struct StatusCell(Arc<Mutex<ServerStatus>>);

impl StatusCell {
    pub(crate) fn new(status: ServerStatus) -> Self {
        Self(Arc::new(Mutex::new(status)))
    }

    pub(crate) fn get(&self) -> ServerStatus {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set(&self, status: ServerStatus) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    /// Sets `to` if the status is `from`; returns whether it was.
    pub(crate) fn replace(&self, from: ServerStatus, to: ServerStatus) -> bool {
        let mut status = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let was = *status == from;
        if was {
            *status = to;
        }
        was
    }
}

/// The server's quiet and stop switches, shared by the server and its heartbeater.
#[derive(Debug)]
pub(crate) struct Control {
    status: StatusCell,
    /// The fetch loop's stop token, once the loop runs.
    fetching: Mutex<Option<CancellationToken>>,
    /// Cancelled when a stop was requested.
    stop_requested: CancellationToken,
}

impl Control {
    pub(crate) fn new(status: StatusCell) -> Self {
        Self { status, fetching: Mutex::new(None), stop_requested: CancellationToken::new() }
    }

    fn fetching(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.fetching.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands over the token that stops the fetch loop; a server quieted before then stops it
    /// at once.
    pub(crate) fn fetching_started(&self, stop: CancellationToken) {
        let mut fetching = self.fetching();
        if self.status.get() == ServerStatus::Stopped {
            stop.cancel();
        }
        *fetching = Some(stop);
    }

    /// Stops taking new tasks; running ones go on. Only an active server becomes `stopped`
    /// (one shutting down stays `closed`). Returns whether it was active.
    pub(crate) fn quiet(&self) -> bool {
        let fetching = self.fetching();
        let quieted = self.status.replace(ServerStatus::Active, ServerStatus::Stopped);
        if let Some(stop) = fetching.as_ref() {
            stop.cancel();
        }
        quieted
    }

    /// Acts on an operator's request.
    pub(crate) fn apply(&self, request: ServerRequest) {
        match request {
            ServerRequest::Quiet => {
                if self.quiet() {
                    tracing::info!("an operator quieted the server: it takes no new tasks");
                }
            }
            ServerRequest::Stop => {
                self.quiet();
                if !self.stop_requested.is_cancelled() {
                    tracing::info!("an operator asked the server to stop: shutting down");
                }
                self.stop_requested.cancel();
            }
        }
    }

    /// Cancelled once a stop was requested.
    pub(crate) fn stop_requested(&self) -> CancellationToken {
        self.stop_requested.clone()
    }
}
