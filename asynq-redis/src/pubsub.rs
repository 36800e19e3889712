//! The broker's one pub/sub connection, shared by everything that listens:
//! - push wake-ups: a server subscribes to its queues' `asynq:{<q>}:ready` channels, and a
//!   dequeue that finds a queue empty marks it `idle_workers`; the next script that makes a task
//!   pending there publishes once and clears the mark. Pickup takes a round trip instead of a
//!   poll interval, and a busy queue costs producers nothing but one `DEL` of a missing key. Each
//!   wake-up is recorded for its queue, so that the broker can tell which quiet queues may have
//!   work (see `broker::quiet`). Go producers do not publish, so the broker also checks its quiet
//!   queues for work now and then, and the processor keeps polling as a fallback. A plain
//!   enqueue publishes without clearing the mark, with the payload [`MARK_KEPT`]: while only such
//!   wake-ups came since this broker set a queue's mark, its short fetches need not set it again;
//! - cancellation requests on `asynq:cancel`, Go asynq's channel;
//! - finish notifications on `asynq:{<q>}:finished`, for waits on a task's outcome;
//! - freed shared concurrency slots on `asynq:slot_freed`, for servers waiting for a slot (see
//!   `slots`).
//!
//! The connection opens on first use. When it drops, every listener hears of it (wake-ups fire
//! for every queue, so idle servers poll; message streams end) and the next subscription
//! connects again.

use crate::connection::PubSubSource;
use crate::keys::Namespace;
use asynq_core::QueueName;
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use redis::aio::PubSubSink;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as SyncMutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Mutex, Notify, futures::Notified};
use tokio::time::Instant;

/// The payload of a wake-up whose script left the queue's `idle_workers` mark in place (a plain
/// enqueue's); every other script that wakes servers deleted the mark and publishes `""`.
pub(crate) const MARK_KEPT: &str = "kept";

/// The subscriptions of one broker, over one connection.
pub(crate) struct PubSub {
    source: PubSubSource,
    connect_timeout: Duration,
    /// The namespace of the queues' wake-up channels.
    namespace: Namespace,
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

/// The wake-up every idle server of this broker waits on, and what the broker knows of each
/// queue it watches.
///
/// Every wake-up, subscription and dropped connection advances one generation counter. The
/// broker reads the generation before a script finds a queue quiet (empty or paused, with its
/// `idle_workers` mark set), and records it with the queue ([`PubSub::found_quiet`]); while the
/// queue has neither been woken nor lost its subscription since, every producer of ours that
/// made a task pending there has published, and it would have been heard.
#[derive(Default)]
struct WakeSignal {
    notify: Notify,
    state: SyncMutex<WakeState>,
}

#[derive(Default)]
struct WakeState {
    generation: u64,
    queues: HashMap<QueueName, Watch>,
}

/// What the broker knows of one queue's wake-ups.
#[derive(Default)]
struct Watch {
    /// The generation at which its wake-up channel's subscription took effect; `None` while it
    /// is not subscribed.
    subscribed_at: Option<u64>,
    /// The generation of its last wake-up.
    woken_at: u64,
    /// When a script last found it quiet.
    quiet: Option<Quiet>,
    /// When a script of this broker last set its `idle_workers` mark.
    marked: Option<Marked>,
    /// The generation of its last wake-up from a script that may have deleted the mark.
    unmarked_at: u64,
}

/// A script set a queue's `idle_workers` mark.
#[derive(Clone, Copy)]
struct Marked {
    /// The generation read before the script ran.
    generation: u64,
    /// When.
    at: Instant,
}

/// A script found a queue quiet.
#[derive(Clone, Copy)]
struct Quiet {
    /// The generation read before the script ran.
    generation: u64,
    /// When.
    at: Instant,
    /// Paused (it may hold tasks), rather than empty.
    paused: bool,
}

/// Whether a queue is quiet, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quietness {
    /// It may have work: dequeue it.
    Unknown,
    /// Empty, with no wake-up since.
    Empty,
    /// Paused, with no wake-up since.
    Paused,
}

impl Watch {
    /// How quiet the queue is at `now`, if found quiet less than `quiet_for` ago.
    fn quietness(&self, now: Instant, quiet_for: Duration) -> Quietness {
        match (self.subscribed_at, self.quiet) {
            (Some(subscribed_at), Some(quiet))
                if subscribed_at <= quiet.generation
                    && self.woken_at <= quiet.generation
                    && now.saturating_duration_since(quiet.at) < quiet_for =>
            {
                if quiet.paused {
                    Quietness::Paused
                } else {
                    Quietness::Empty
                }
            }
            _ => Quietness::Unknown,
        }
    }
}

impl Watch {
    /// Whether the queue's mark is known to be in place at `now`: set by this broker less than
    /// `keep_for` ago, with neither a lost subscription nor a wake-up that may have deleted it
    /// since.
    fn mark_in_place(&self, now: Instant, keep_for: Duration) -> bool {
        match (self.subscribed_at, self.marked) {
            (Some(subscribed_at), Some(marked)) => {
                subscribed_at <= marked.generation
                    && self.unmarked_at <= marked.generation
                    && now.saturating_duration_since(marked.at) < keep_for
            }
            _ => false,
        }
    }
}

impl WakeSignal {
    fn state(&self) -> std::sync::MutexGuard<'_, WakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A wake-up for `queue`, from a script that left its mark in place if `mark_kept`: every
    /// waiting idle server wakes.
    fn fire(&self, queue: &QueueName, mark_kept: bool) {
        let mut state = self.state();
        state.generation += 1;
        let generation = state.generation;
        if let Some(watch) = state.queues.get_mut(queue) {
            watch.woken_at = generation;
            if !mark_kept {
                watch.unmarked_at = generation;
            }
        }
        drop(state);
        self.notify.notify_waiters();
    }

    /// A task was made pending in `queue` by this process: the same as a wake-up for it, when
    /// its channel is subscribed (nothing otherwise).
    fn made_pending(&self, queue: &str) {
        let mut state = self.state();
        let generation = state.generation + 1;
        let Some(watch) = state.queues.get_mut(queue).filter(|watch| watch.subscribed_at.is_some()) else { return };
        watch.woken_at = generation;
        state.generation = generation;
        drop(state);
        self.notify.notify_waiters();
    }

    /// The connection dropped: every subscription is gone, and idle servers poll until the next
    /// wait subscribes again.
    fn dropped(&self) {
        let mut state = self.state();
        state.generation += 1;
        state.queues.values_mut().for_each(|watch| watch.subscribed_at = None);
        drop(state);
        self.notify.notify_waiters();
    }

    /// `queues` are subscribed from now on.
    fn subscribed(&self, queues: Vec<QueueName>) {
        let mut state = self.state();
        state.generation += 1;
        let generation = state.generation;
        for queue in queues {
            state.queues.entry(queue).or_default().subscribed_at = Some(generation);
        }
    }
}

/// Where the messages of one channel go.
enum Route {
    /// A push wake-up for this queue: every waiting idle server wakes.
    Wake(QueueName),
    /// Each message's payload goes to every live listener; closed ones are dropped on the way.
    Listeners(Vec<UnboundedSender<String>>),
}

/// The routes, locked (never across an await).
fn lock(routes: &SyncMutex<HashMap<String, Route>>) -> std::sync::MutexGuard<'_, HashMap<String, Route>> {
    routes.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PubSub {
    /// Subscriptions over connections to `source` (opened on first use, each within
    /// `connect_timeout`; behind Sentinel, to the master of the moment).
    pub(crate) fn new(source: PubSubSource, connect_timeout: Duration, namespace: Namespace) -> Self {
        Self { source, connect_timeout, namespace, wake: Arc::default(), connection: Mutex::default() }
    }

    /// A future that resolves at the next wake-up; enable it before checking for work so that a
    /// wake-up in between is not missed.
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.wake.notify.notified()
    }

    /// Records that this broker made a task pending in `queue`: its servers' waits wake and its
    /// next fetch looks at the queue, without waiting for the wake-up to come back from Redis.
    pub(crate) fn made_pending(&self, queue: &str) {
        self.wake.made_pending(queue);
    }

    /// The current wake-up generation: read it before a script that may find a queue quiet,
    /// and pass it to [`PubSub::found_quiet`].
    pub(crate) fn wake_generation(&self) -> u64 {
        self.wake.state().generation
    }

    /// Records that a script run after wake-up generation `generation` found `queue` empty (or
    /// paused) and left its `idle_workers` mark set.
    pub(crate) fn found_quiet(&self, queue: &QueueName, generation: u64, paused: bool) {
        let quiet = Quiet { generation, at: tokio::time::Instant::now(), paused };
        self.wake.state().queues.entry(queue.clone()).or_default().quiet = Some(quiet);
    }

    /// Records that a script run after wake-up generation `generation` set the `idle_workers`
    /// mark of `queue`.
    pub(crate) fn marked(&self, queue: &QueueName, generation: u64) {
        let marked = Marked { generation, at: tokio::time::Instant::now() };
        self.wake.state().queues.entry(queue.clone()).or_default().marked = Some(marked);
    }

    /// Whether the `idle_workers` mark of `queue` is known to be in place: this broker set it
    /// less than `keep_for` ago, and since then its wake-up channel stayed subscribed and every
    /// wake-up came from a script that keeps the mark ([`MARK_KEPT`]). Every script that deletes
    /// the mark publishes a wake-up, so a fetch that trusts a mark deleted meanwhile is followed
    /// by that wake-up, which makes the next short fetch set it again. Go's writers never touch
    /// the mark (their tasks are found by the quiet check, mark or not).
    pub(crate) fn mark_in_place(&self, queue: &QueueName, keep_for: Duration) -> bool {
        let now = tokio::time::Instant::now();
        self.wake.state().queues.get(queue).is_some_and(|watch| watch.mark_in_place(now, keep_for))
    }

    /// Records that `queue` may have work.
    pub(crate) fn found_busy(&self, queue: &str) {
        if let Some(watch) = self.wake.state().queues.get_mut(queue) {
            watch.quiet = None;
        }
    }

    /// Makes sure the wake-up channels of `queues` are subscribed (connecting again if needed;
    /// the new ones with one command), and says how quiet each is: quiet when a script found it
    /// so less than `quiet_for` ago and neither a wake-up nor a lost subscription came since.
    pub(crate) async fn watch(&self, queues: &[QueueName], quiet_for: Duration) -> redis::RedisResult<Vec<Quietness>> {
        let now = tokio::time::Instant::now();
        let mut missing = Vec::new();
        let quietness = {
            let state = self.wake.state();
            queues
                .iter()
                .map(|queue| match state.queues.get(queue) {
                    Some(watch) if watch.subscribed_at.is_some() => watch.quietness(now, quiet_for),
                    _ => {
                        missing.push(queue.clone());
                        Quietness::Unknown
                    }
                })
                .collect()
        };
        if !missing.is_empty() {
            self.subscribe_wake(missing).await?;
        }
        Ok(quietness)
    }

    /// Subscribes to the wake-up channels of `queues` with one command, connecting (again) if
    /// needed.
    async fn subscribe_wake(&self, queues: Vec<QueueName>) -> redis::RedisResult<()> {
        let mut connection = self.connected().await?;
        let mut channels = Vec::with_capacity(queues.len());
        {
            let mut routes = lock(&connection.routes);
            for queue in &queues {
                let channel = self.namespace.queue(queue).ready_channel();
                if let Entry::Vacant(vacant) = routes.entry(channel.clone()) {
                    vacant.insert(Route::Wake(queue.clone()));
                    channels.push(channel);
                }
            }
        }
        if !channels.is_empty()
            && let Err(e) = connection.subscribe(&channels).await
        {
            self.wake.dropped();
            return Err(e);
        }
        self.wake.subscribed(queues);
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
                Route::Wake(_) => unreachable!("{channel} is a wake-up channel, heard by the wake signal alone"),
            },
        };
        if new && let Err(e) = connection.subscribe(channel).await {
            // The wake-up subscriptions went with the connection.
            self.wake.dropped();
            return Err(e);
        }
        Ok(receiver)
    }

    /// The live connection, opened anew if there is none or it dropped.
    async fn connected(&self) -> redis::RedisResult<tokio::sync::MutexGuard<'_, Connection>> {
        let mut connection = self.connection.lock().await;
        if connection.sink.is_some() && connection.alive.load(Ordering::Acquire) {
            return Ok(connection);
        }
        if connection.sink.is_some() {
            connection.close();
            self.wake.dropped();
        }
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
                    Some(Route::Wake(queue)) => wake.fire(queue, payload == MARK_KEPT),
                    Some(Route::Listeners(listeners)) => {
                        listeners.retain(|listener| listener.unbounded_send(payload.clone()).is_ok())
                    }
                    None => {}
                }
            }
            reader_alive.store(false, Ordering::Release);
            lock(&reader_routes).clear();
            // Idle servers fall back to polling until the next wait reconnects.
            wake.dropped();
        });
        *connection = Connection { sink: Some(sink), alive, routes };
        Ok(connection)
    }
}

impl Connection {
    /// Subscribes to `channel` (or channels); on failure the connection is closed, so the next subscription
    /// starts afresh rather than missing this channel.
    async fn subscribe(&mut self, channel: impl redis::ToRedisArgs + Send + Sync) -> redis::RedisResult<()> {
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
