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
}
