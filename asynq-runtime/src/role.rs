//! A background loop with the token that stops it.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A spawned background loop (a server role, a scheduler's heartbeat) and the token that stops
/// it.
#[derive(Debug)]
pub struct Role {
    /// Cancelled to stop the loop; cancelling it without awaiting [`Role::stop`] abandons the
    /// loop to stop by itself.
    pub stop: CancellationToken,
    handle: JoinHandle<()>,
}

impl Role {
    /// Spawns a loop through `spawn`, which receives the token that will stop it.
    pub fn spawn(spawn: impl FnOnce(CancellationToken) -> JoinHandle<()>) -> Self {
        let stop = CancellationToken::new();
        let handle = spawn(stop.clone());
        Self { stop, handle }
    }

    /// Cancels the loop and waits for it to end; a loop that panicked is logged.
    pub async fn stop(self) {
        self.stop.cancel();
        if let Err(e) = self.handle.await {
            tracing::error!(error = %e, "a background role panicked");
        }
    }

    /// Cancels the loop and waits for it to end until `deadline`, then aborts it (a loop stuck in
    /// a call to a backend that does not answer); returns whether it ended by itself. `name`
    /// names the loop in the log.
    pub async fn stop_by(mut self, deadline: tokio::time::Instant, name: &str) -> bool {
        self.stop.cancel();
        match tokio::time::timeout_at(deadline, &mut self.handle).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::error!(role = name, error = %e, "a background role panicked");
                true
            }
            Err(_) => {
                self.handle.abort();
                tracing::warn!(role = name, "a background role did not stop in time; abandoned it");
                false
            }
        }
    }
}
