//! The broker's one pub/sub connection, shared by everything that listens:
//! - push wake-ups: an idle server subscribes to its queues' `asynq:{<q>}:ready` channels and
//!   marks the queues `idle_workers`; the next script that makes a task pending there publishes
//!   once and clears the mark. Pickup takes a round trip instead of a poll interval, and a busy
//!   queue costs producers nothing but one `DEL` of a missing key. Go producers do not publish,
//!   so the processor keeps polling as a fallback;
//! - cancellation requests on `asynq:cancel`, Go asynq's channel;
//! - finish notifications on `asynq:{<q>}:finished`, for waits on a task's outcome.
//!
//! The connection opens on first use. When it drops, every listener hears of it (wake-ups fire,
//! so idle servers poll; message streams end) and the next subscription connects again.

use crate::connection::PubSubSource;
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use redis::aio::PubSubSink;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;
use tokio::sync::{Mutex, Notify, futures::Notified};

/// The subscriptions of one broker, over one connection.
pub(crate) struct PubSub {
    source: PubSubSource,
    connect_timeout: Duration,
    wake: Arc<WakeSignal>,
    connection: Mutex<Connection>,
}

/// One pub/sub connection and where its channels' messages go.
#[derive(Default)]
struct Connection {
    sink: Option<PubSubSink>,
    /// Cleared by the reader when the connection drops, so the next subscription reconnects.
    alive: Arc<AtomicBool>,
    /// Each subscribed channel's route; shared with the reader, which clears it when the
    /// connection drops (ending every listener's stream).
    routes: Arc<SyncMutex<HashMap<String, Route>>>,
}

/// The wake-up every idle server of this broker waits on.
#[derive(Default)]
struct WakeSignal {
    notify: Notify,
    generation: AtomicU64,
}

impl WakeSignal {
    fn fire(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_waiters();
    }
}

/// Where the messages of one channel go.
enum Route {
    /// A push wake-up: every waiting idle server wakes.
    Wake,
    /// Each message's payload goes to every live listener; closed ones are dropped on the way.
    Listeners(Vec<UnboundedSender<String>>),
}

/// The routes, locked (never across an await).
fn lock(routes: &SyncMutex<HashMap<String, Route>>) -> std::sync::MutexGuard<'_, HashMap<String, Route>> {
    routes.lock().expect("pub/sub routes lock poisoned")
}

impl PubSub {
    /// Subscriptions over connections to `source` (opened on first use, each within
    /// `connect_timeout`; behind Sentinel, to the master of the moment).
    pub(crate) fn new(source: PubSubSource, connect_timeout: Duration) -> Self {
        Self { source, connect_timeout, wake: Arc::default(), connection: Mutex::default() }
    }

    /// A future that resolves at the next wake-up; enable it before checking for work so that a
    /// wake-up in between is not missed.
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.wake.notify.notified()
    }

    /// How many wake-ups (and dropped connections) there have been; unchanged since an idle mark
    /// was set means the mark is still in place.
    pub(crate) fn wake_generation(&self) -> u64 {
        self.wake.generation.load(Ordering::Acquire)
    }

    /// Makes sure the wake-up `channels` are subscribed, connecting (again) if needed.
    pub(crate) async fn subscribe_wake(&self, channels: &[String]) -> redis::RedisResult<()> {
        let mut connection = self.connected().await?;
        for channel in channels {
            let new = match lock(&connection.routes).entry(channel.clone()) {
                Entry::Vacant(vacant) => {
                    vacant.insert(Route::Wake);
                    true
                }
                Entry::Occupied(_) => false,
            };
            if new {
                connection.subscribe(channel).await?;
            }
        }
        Ok(())
    }

    /// The payloads published on `channel` from now on, subscribing (and connecting) if needed.
    /// The stream ends when the connection drops.
    pub(crate) async fn listen(&self, channel: &str) -> redis::RedisResult<UnboundedReceiver<String>> {
        let (sender, receiver) = unbounded();
        let mut connection = self.connected().await?;
        let new = match lock(&connection.routes).entry(channel.to_owned()) {
            Entry::Vacant(vacant) => {
                vacant.insert(Route::Listeners(vec![sender]));
                true
            }
            Entry::Occupied(mut occupied) => match occupied.get_mut() {
                Route::Listeners(listeners) => {
                    // Listeners that went away on a quiet channel are dropped here too.
                    listeners.retain(|listener| !listener.is_closed());
                    listeners.push(sender);
                    false
                }
                Route::Wake => unreachable!("{channel} is a wake-up channel, which carries no payload"),
            },
        };
        if new {
            connection.subscribe(channel).await?;
        }
        Ok(receiver)
    }

    /// The live connection, opened anew if there is none or it dropped.
    async fn connected(&self) -> redis::RedisResult<tokio::sync::MutexGuard<'_, Connection>> {
        let mut connection = self.connection.lock().await;
        if connection.sink.is_some() && connection.alive.load(Ordering::Acquire) {
            return Ok(connection);
        }
        connection.close();
        let pubsub = tokio::time::timeout(self.connect_timeout, self.source.client().get_async_pubsub())
            .await
            .map_err(|_| redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)))??;
        let (sink, mut stream) = pubsub.split();
        let alive = Arc::new(AtomicBool::new(true));
        let routes: Arc<SyncMutex<HashMap<String, Route>>> = Arc::default();
        let (reader_alive, reader_routes, wake) = (alive.clone(), routes.clone(), self.wake.clone());
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                let payload: String = message.get_payload().unwrap_or_default();
                match lock(&reader_routes).get_mut(message.get_channel_name()) {
                    Some(Route::Wake) => wake.fire(),
                    Some(Route::Listeners(listeners)) => {
                        listeners.retain(|listener| listener.unbounded_send(payload.clone()).is_ok())
                    }
                    None => {}
                }
            }
            reader_alive.store(false, Ordering::Release);
            lock(&reader_routes).clear();
            // Idle servers fall back to polling until the next wait reconnects.
            wake.fire();
        });
        *connection = Connection { sink: Some(sink), alive, routes };
        Ok(connection)
    }
}

impl Connection {
    /// Subscribes to `channel`; on failure the connection is closed, so the next subscription
    /// starts afresh rather than missing this channel.
    async fn subscribe(&mut self, channel: &str) -> redis::RedisResult<()> {
        let sink = self.sink.as_mut().expect("a connected connection has a sink");
        let subscribed = sink.subscribe(channel).await;
        if subscribed.is_err() {
            self.close();
        }
        subscribed
    }

    /// Forgets the connection and ends its listeners' streams.
    fn close(&mut self) {
        self.alive.store(false, Ordering::Release);
        lock(&self.routes).clear();
        self.sink = None;
    }
}
