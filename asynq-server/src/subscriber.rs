//! A subscriber cancels running tasks on request: it listens to the broker's stream of
//! cancellation requests and fires the cancellation token of the matching task this server
//! runs. The handler sees [`TaskContext::cancelled`](crate::TaskContext::cancelled) resolve, and
//! the attempt fails with "context canceled", so the task goes to retry (or to the archive when
//! its retries are used up), as in Go asynq.
//!
//! When the subscription is lost or cannot be had (a broker outage), it subscribes again after a
//! backoff that doubles from [`SubscriberConfig::min_backoff`] up to
//! [`SubscriberConfig::max_backoff`]. Requests published while it is not subscribed are missed,
//! as in Go.

use crate::workers::ActiveTasks;
use asynq_core::broker::Cancel;
use futures::StreamExt;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The subscriber's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubscriberConfig {
    /// How long to wait before subscribing again after the subscription was lost or could not
    /// be had; doubled after each failed attempt. Default: 200 ms.
    pub min_backoff: Duration,
    /// The longest wait between two attempts. Default: 5 s, Go asynq's fixed retry interval.
    pub max_backoff: Duration,
}

impl Default for SubscriberConfig {
    fn default() -> Self {
        Self { min_backoff: Duration::from_millis(200), max_backoff: Duration::from_secs(5) }
    }
}

/// Cancels this server's running tasks when asked.
#[derive(Clone)]
pub(crate) struct Subscriber {
    broker: Arc<dyn Cancel>,
    active: Arc<ActiveTasks>,
    config: SubscriberConfig,
}

impl Subscriber {
    /// A subscriber that hears requests through `broker` and cancels the matching tasks among
    /// `active`.
    pub(crate) fn new(broker: Arc<dyn Cancel>, active: Arc<ActiveTasks>, config: SubscriberConfig) -> Self {
        Self { broker, active, config }
    }

    /// Handles one request: cancels task `id` if this server runs it; returns whether it did.
    pub(crate) fn tick(&self, id: &str) -> bool {
        let cancelled = self.active.cancel(id);
        if cancelled {
            tracing::info!(task_id = %id, "cancelling a running task on request");
        }
        cancelled
    }

    /// Listens for requests until `stop` is cancelled, subscribing again whenever the
    /// subscription is lost.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move { self.listen(&stop).await })
    }

    async fn listen(&self, stop: &CancellationToken) {
        let mut backoff = self.config.min_backoff;
        loop {
            let subscribed = tokio::select! {
                _ = stop.cancelled() => return,
                subscribed = self.broker.cancellations() => subscribed,
            };
            match subscribed {
                Ok(mut requests) => {
                    backoff = self.config.min_backoff;
                    loop {
                        let request = tokio::select! {
                            _ = stop.cancelled() => return,
                            request = requests.next() => request,
                        };
                        match request {
                            Some(id) => {
                                self.tick(&id);
                            }
                            None => break,
                        }
                    }
                    tracing::warn!(retry_in = ?backoff, "lost the subscription to cancellation requests");
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?backoff, "cannot subscribe to cancellation requests");
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(self.config.max_backoff);
        }
    }
}

impl fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber").field("config", &self.config).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workers::{ActiveTask, Phase};
    use async_trait::async_trait;
    use asynq_core::{BrokerError, Clock, Error, Lease, QueueName, Result, StoredTask, SystemClock, TaskId};
    use asynq_memory::MemoryBroker;
    use futures::channel::mpsc::{UnboundedSender, unbounded};
    use futures::stream::{self, BoxStream};
    use std::sync::Mutex;

    /// Registers a running task `id` and returns its cancellation token.
    fn run(active: &ActiveTasks, id: &str) -> CancellationToken {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let now = clock.now();
        let cancel = CancellationToken::new();
        active.insert(ActiveTask {
            message: StoredTask::new(TaskId::new(id).unwrap(), QueueName::from_static("q"), "t"),
            started: now,
            deadline: now + Duration::from_secs(60),
            lease: Lease::new(now + Duration::from_secs(30), clock),
            cancel: cancel.clone(),
            phase: Phase::Running,
        });
        cancel
    }

    fn subscriber(broker: Arc<dyn Cancel>) -> (Subscriber, Arc<ActiveTasks>) {
        let active = Arc::new(ActiveTasks::default());
        (Subscriber::new(broker, active.clone(), SubscriberConfig::default()), active)
    }

    #[test]
    fn tick_cancels_only_a_task_this_server_runs() {
        let (subscriber, active) = subscriber(Arc::new(MemoryBroker::new()));
        let (a, b) = (run(&active, "a"), run(&active, "b"));
        assert!(!subscriber.tick("elsewhere"));
        assert!(subscriber.tick("a"));
        assert!(a.is_cancelled() && !b.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn a_published_request_cancels_the_running_task() {
        let broker = MemoryBroker::new();
        let (subscriber, active) = subscriber(Arc::new(broker.clone()));
        let token = run(&active, "a");
        let stop = CancellationToken::new();
        let handle = subscriber.spawn(stop.clone());
        tokio::task::yield_now().await; // let it subscribe
        broker.cancel(&TaskId::from_static("a")).await.unwrap();
        tokio::time::timeout(Duration::from_secs(1), token.cancelled()).await.expect("the task was cancelled");
        stop.cancel();
        handle.await.unwrap();
    }

    /// A broker whose subscription breaks: the first is lost at once, the next two attempts
    /// fail, and the fourth holds.
    #[derive(Default)]
    struct Outage {
        /// When each subscription attempt was made.
        attempts: Mutex<Vec<tokio::time::Instant>>,
        /// The sender of the subscription that holds.
        held: Mutex<Option<UnboundedSender<String>>>,
    }

    #[async_trait]
    impl Cancel for Outage {
        async fn cancel(&self, _id: &TaskId) -> Result<()> {
            unreachable!("the test publishes through the held subscription")
        }

        async fn cancellations(&self) -> Result<BoxStream<'static, String>> {
            let attempt = {
                let mut attempts = self.attempts.lock().unwrap();
                attempts.push(tokio::time::Instant::now());
                attempts.len()
            };
            match attempt {
                1 => Ok(stream::empty().boxed()),
                2 | 3 => {
                    let cause = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
                    Err(Error::Broker(BrokerError::transient("broker unreachable", cause)))
                }
                _ => {
                    let (sender, receiver) = unbounded();
                    *self.held.lock().unwrap() = Some(sender);
                    Ok(receiver.boxed())
                }
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_subscription_is_renewed_with_a_doubling_backoff() {
        let broker = Arc::new(Outage::default());
        let (subscriber, active) = subscriber(broker.clone());
        let token = run(&active, "a");
        let start = tokio::time::Instant::now();
        let stop = CancellationToken::new();
        let handle = subscriber.spawn(stop.clone());
        let held = loop {
            if let Some(sender) = broker.held.lock().unwrap().clone() {
                break sender;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let offsets: Vec<Duration> = broker.attempts.lock().unwrap().iter().map(|t| *t - start).collect();
        let ms = Duration::from_millis;
        // Lost at once: 200 ms; then failures: 400 ms, 800 ms.
        assert_eq!(offsets, [ms(0), ms(200), ms(600), ms(1_400)]);
        held.unbounded_send("a".to_owned()).unwrap();
        tokio::time::timeout(Duration::from_secs(1), token.cancelled()).await.expect("the task was cancelled");
        stop.cancel();
        handle.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn the_backoff_stops_growing_at_its_maximum() {
        /// A broker that never lets anyone subscribe.
        struct Down(Mutex<Vec<tokio::time::Instant>>);

        #[async_trait]
        impl Cancel for Down {
            async fn cancel(&self, _id: &TaskId) -> Result<()> {
                unreachable!("nothing is published")
            }

            async fn cancellations(&self) -> Result<BoxStream<'static, String>> {
                self.0.lock().unwrap().push(tokio::time::Instant::now());
                Err(Error::Broker(BrokerError::permanent("down")))
            }
        }

        let broker = Arc::new(Down(Mutex::default()));
        let (subscriber, _active) = subscriber(broker.clone());
        let stop = CancellationToken::new();
        let handle = subscriber.spawn(stop.clone());
        tokio::time::sleep(Duration::from_secs(60)).await;
        stop.cancel();
        handle.await.unwrap();
        let attempts = broker.0.lock().unwrap();
        let gaps: Vec<Duration> = attempts.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(gaps[..6], [200, 400, 800, 1_600, 3_200, 5_000].map(Duration::from_millis));
        assert!(gaps[6..].iter().all(|gap| *gap == Duration::from_secs(5)), "{gaps:?}");
    }
}
