//! Waiting for the signals that stop a server or a scheduler.

/// Waits for SIGTERM or Ctrl-C (SIGINT). Each SIGTSTP on the way calls `on_stop`.
#[cfg(unix)]
pub async fn wait_for_shutdown(mut on_stop: impl FnMut()) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut tstp)) = (signal(SignalKind::terminate()), signal(SignalKind::from_raw(20))) else {
        tracing::error!("could not install signal handlers; waiting for Ctrl-C only");
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    loop {
        tokio::select! {
            _ = term.recv() => return,
            _ = tokio::signal::ctrl_c() => return,
            _ = tstp.recv() => on_stop(),
        }
    }
}

/// Waits for Ctrl-C.
#[cfg(not(unix))]
pub async fn wait_for_shutdown(_on_stop: impl FnMut()) {
    let _ = tokio::signal::ctrl_c().await;
}
