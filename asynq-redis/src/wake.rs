//! Push wake-ups: an idle server subscribes to its queues' `asynq:{<q>}:ready` channels and
//! marks the queues `idle_workers`; the next script that makes a task pending there publishes
//! once and clears the mark. Pickup takes a round trip instead of a poll interval, and a busy
//! queue costs producers nothing but one `DEL` of a missing key.
//!
//! Go producers do not publish, so the processor keeps polling as a fallback.

use futures::StreamExt;
use redis::aio::PubSubSink;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{Mutex, Notify, futures::Notified};

/// The subscription shared by every wait of one broker.
pub(crate) struct WakeSignals {
    client: redis::Client,
    notify: Arc<Notify>,
    state: Mutex<Subscription>,
}

#[derive(Default)]
struct Subscription {
    sink: Option<PubSubSink>,
    /// Cleared by the reader when the connection drops, so the next wait reconnects.
    alive: Arc<AtomicBool>,
    channels: HashSet<String>,
}

impl WakeSignals {
    /// Wake-ups over connections made by `client` (opened on first use).
    pub(crate) fn new(client: redis::Client) -> Self {
        Self { client, notify: Arc::new(Notify::new()), state: Mutex::default() }
    }

    /// A future that resolves at the next wake-up; enable it before checking for work so that a
    /// wake-up in between is not missed.
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }

    /// Makes sure `channels` are subscribed, connecting (again) if needed.
    pub(crate) async fn subscribe(&self, channels: &[String]) -> redis::RedisResult<()> {
        let mut state = self.state.lock().await;
        if state.sink.is_none() || !state.alive.load(Ordering::Acquire) {
            let (sink, mut stream) = self.client.get_async_pubsub().await?.split();
            let alive = Arc::new(AtomicBool::new(true));
            let (reader_alive, notify) = (alive.clone(), self.notify.clone());
            tokio::spawn(async move {
                while stream.next().await.is_some() {
                    notify.notify_waiters();
                }
                reader_alive.store(false, Ordering::Release);
                // Waiters fall back to polling until the next wait reconnects.
                notify.notify_waiters();
            });
            *state = Subscription { sink: Some(sink), alive, channels: HashSet::new() };
        }
        let Subscription { sink, channels: subscribed, .. } = &mut *state;
        let sink = sink.as_mut().expect("connected above");
        for channel in channels {
            if !subscribed.contains(channel) {
                sink.subscribe(channel).await?;
                subscribed.insert(channel.clone());
            }
        }
        Ok(())
    }
}
