//! A forwarder moves scheduled and retry tasks whose time has come to pending.
//!
//! It does not poll faster to be on time: after each look it sleeps until the earliest task
//! left falls due (as the broker reports it), or one interval if that is sooner, and wakes early
//! when the broker tells it of a task scheduled or set to retry in a served queue
//! ([`Forward::due_notices`]). An idle server thus looks once an interval, as before, and a task
//! due in 2 s moves when it falls due rather than at the next interval.

use crate::served::ServedQueues;
use asynq_core::Clock;
use asynq_core::broker::{Forward, Forwarded};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The shortest sleep after a look that left a task already due: the broker's clock and ours
/// may differ a little, and a forwarder must not spin meanwhile.
const MIN_SLEEP: Duration = Duration::from_millis(20);

/// The forwarder's settings.
#[derive(Debug, Clone)]
pub(crate) struct ForwarderConfig {
    /// The queues to forward.
    pub queues: ServedQueues,
    /// The longest time between two looks for due tasks.
    pub interval: Duration,
}

/// Moves due scheduled and retry tasks to pending.
#[derive(Clone)]
pub(crate) struct Forwarder {
    broker: Arc<dyn Forward>,
    clock: Arc<dyn Clock>,
    config: ForwarderConfig,
}

impl Forwarder {
    /// A forwarder over `broker`, reading the time from `clock`.
    pub(crate) fn new(broker: Arc<dyn Forward>, clock: Arc<dyn Clock>, config: ForwarderConfig) -> Self {
        Self { broker, clock, config }
    }

    /// Forwards every due task once; says how many moved and when the next falls due.
    pub(crate) async fn tick(&self) -> asynq_core::Result<Forwarded> {
        self.broker.forward_ready(&self.config.queues.now().names).await
    }

    /// How long to sleep after a look that left the earliest task due at `next_due`.
    fn sleep_after(&self, next_due: Option<std::time::SystemTime>) -> Duration {
        let until_due = next_due.map(|due| due.duration_since(self.clock.now()).unwrap_or_default());
        until_due.map_or(self.config.interval, |until| until.clamp(MIN_SLEEP, self.config.interval.max(MIN_SLEEP)))
    }

    /// Forwards at once, then whenever the next task falls due, a notice names a served queue,
    /// or an interval passes, until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut notices: Option<BoxStream<'static, String>> = None;
            loop {
                // Listening before looking, so a task scheduled after the look is heard of; a
                // subscription that does not answer within an interval is tried again at the next
                // look, so the looks go on meanwhile.
                if notices.is_none() {
                    let subscribing = tokio::time::timeout(self.config.interval, self.broker.due_notices());
                    notices = subscribing.await.ok().and_then(Result::ok);
                }
                let next_due = match self.tick().await {
                    Ok(forwarded) => forwarded.next_due,
                    Err(e) => {
                        tracing::error!(error = %e, "could not forward scheduled and retry tasks");
                        None
                    }
                };
                let sleep = tokio::time::sleep(self.sleep_after(next_due));
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = sleep => {}
                    heard = self.served_notice(notices.as_mut()) => if !heard {
                        // The subscription is lost: listen again before the next look.
                        notices = None;
                    },
                }
            }
        })
    }

    /// Resolves with true at the next notice that names a served queue, with false when the
    /// notices end; never without notices.
    async fn served_notice(&self, notices: Option<&mut BoxStream<'static, String>>) -> bool {
        let Some(notices) = notices else { return std::future::pending().await };
        while let Some(queue) = notices.next().await {
            if self.config.queues.now().names.iter().any(|served| served.as_str() == queue) {
                return true;
            }
        }
        false
    }
}

impl fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Forwarder").field("config", &self.config).finish_non_exhaustive()
    }
}
