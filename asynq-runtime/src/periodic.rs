//! The loop every periodic role shares, in the server and in the scheduler.

use std::future::Future;
use std::time::Duration;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

/// When a periodic role first runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstRun {
    /// At once, then every interval.
    Immediately,
    /// After one interval.
    AfterInterval,
}

/// Calls `tick` every `interval` until `stop` is cancelled. A tick that overruns delays the
/// next one rather than bunching them up; a tick in progress when `stop` fires is finished.
pub async fn run_every<F, Fut>(interval: Duration, first: FirstRun, stop: &CancellationToken, mut tick: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let start = match first {
        FirstRun::Immediately => tokio::time::Instant::now(),
        FirstRun::AfterInterval => tokio::time::Instant::now() + interval,
    };
    let mut ticks = tokio::time::interval_at(start, interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            _ = ticks.tick() => tick().await,
        }
    }
}
