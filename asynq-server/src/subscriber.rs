//! A subscriber cancels running tasks on request: it listens to the broker's stream of
//! cancellation requests and fires the cancellation token of the matching task this server
//! runs. The handler sees [`TaskContext::cancelled`](crate::TaskContext::cancelled) resolve, and
//! the attempt fails with "context canceled", so the task goes to retry (or to the archive when
//! its retries are used up), as in Go asynq.
//!
//! Each time it subscribes, it then reads the requests the broker keeps
//! ([`Cancel::kept_cancellations`]), so that a request made while it was not subscribed (the
//! server was starting, or the broker was out of reach) is honoured too; the server's processor
//! starts no handler before the first such read ([`Subscriber::ready`]). A request for a task
//! this server does not hold is remembered until it expires: taking the task later claims it,
//! and the subscriber cancels it once it has settled the request with the broker
//! ([`Cancel::settle_cancellation`]; a request another server settled, for an earlier attempt,
//! or one never kept, as Go's tools publish, cancels nothing then). A request that cancelled a
//! task is settled when the attempt ends; if the task leaves without its attempt ending (given
//! back at shutdown, its lease lost), the request is made anew, for the next server.
//!
//! When the subscription is lost or cannot be had (a broker outage), it subscribes again after a
//! backoff that doubles from [`SubscriberConfig::min_backoff`] up to
//! [`SubscriberConfig::max_backoff`].

use crate::workers::{ActiveTasks, CancelEvent};
use asynq_core::broker::Cancel;
use asynq_core::{CANCEL_KEEP, Clock, TaskId};
use futures::StreamExt;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
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
    clock: Arc<dyn Clock>,
    config: SubscriberConfig,
    ready: CancellationToken,
}

impl Subscriber {
    /// A subscriber that hears requests through `broker` and cancels the matching tasks among
    /// `active`, judging the expiry of requests by `clock`.
    pub(crate) fn new(
        broker: Arc<dyn Cancel>,
        active: Arc<ActiveTasks>,
        clock: Arc<dyn Clock>,
        config: SubscriberConfig,
    ) -> Self {
        Self { broker, active, clock, config, ready: CancellationToken::new() }
    }

    /// Cancelled once the subscriber first subscribed and read the kept requests: from then on,
    /// no request made for a task this server takes is missed.
    pub(crate) fn ready(&self) -> CancellationToken {
        self.ready.clone()
    }

    /// Handles one request, kept until `expiry`: cancels task `id` if this server holds it (the
    /// request is settled when the attempt ends), else remembers it. Returns whether it
    /// cancelled.
    pub(crate) fn tick(&self, id: &str, expiry: SystemTime) -> bool {
        let cancelled = self.active.request(id, expiry, self.clock.now());
        if cancelled {
            tracing::info!(task_id = %id, "cancelling a running task on request");
        }
        cancelled
    }

    /// Listens for requests until `stop` is cancelled, subscribing again whenever the
    /// subscription is lost, and handles the [`CancelEvent`]s of the tasks meanwhile.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        let (events, incoming) = mpsc::unbounded_channel();
        self.active.send_events_to(events);
        tokio::spawn(async move {
            tokio::join!(self.listen(&stop), self.handle_events(incoming, &stop));
        })
    }

    /// Handles each [`CancelEvent`] in a task of its own; when `stop` fires, handles those
    /// already sent and waits for all (the server's shutdown bounds the wait).
    async fn handle_events(&self, mut incoming: mpsc::UnboundedReceiver<CancelEvent>, stop: &CancellationToken) {
        let mut handling = JoinSet::new();
        loop {
            while handling.try_join_next().is_some() {}
            let event = tokio::select! {
                _ = stop.cancelled() => break,
                event = incoming.recv() => event,
            };
            let Some(event) = event else { break };
            handling.spawn(self.clone().handle(event));
        }
        incoming.close();
        while let Ok(event) = incoming.try_recv() {
            handling.spawn(self.clone().handle(event));
        }
        while handling.join_next().await.is_some() {}
    }

    async fn handle(self, event: CancelEvent) {
        match event {
            CancelEvent::Claim { id, cancel } => {
                let Ok(task) = TaskId::new(id.as_str()) else { return };
                let settled = self.broker.settle_cancellation(&task).await;
                if let Err(e) = &settled {
                    tracing::warn!(task_id = %id, error = %e, "cannot settle a cancellation request; cancelling");
                }
                if settled.unwrap_or(true) {
                    tracing::info!(task_id = %id, "cancelling a task taken while a request to cancel it was kept");
                    if !self.active.fire(&id) {
                        // Its attempt ended or it left meanwhile: the request goes on for
                        // whoever holds the task next.
                        cancel.cancel();
                        self.renew(&task).await;
                    }
                }
            }
            CancelEvent::Settle(id) => {
                let Ok(task) = TaskId::new(id.as_str()) else { return };
                if let Err(e) = self.broker.settle_cancellation(&task).await {
                    tracing::warn!(task_id = %id, error = %e, "cannot settle a cancellation request; it expires by itself");
                }
            }
            CancelEvent::Renew(id) => {
                let Ok(task) = TaskId::new(id.as_str()) else { return };
                self.renew(&task).await;
            }
        }
    }

    /// Makes the request to cancel `task` anew: kept again, and heard by every server.
    async fn renew(&self, task: &TaskId) {
        tracing::info!(task_id = %task, "a task to cancel left this server before its attempt ended; asking again");
        if let Err(e) = self.broker.cancel(task).await {
            tracing::warn!(task_id = %task, error = %e, "cannot renew a cancellation request");
        }
    }

    async fn listen(&self, stop: &CancellationToken) {
        let mut backoff = self.config.min_backoff;
        loop {
            let subscribed = tokio::select! {
                _ = stop.cancelled() => return,
                subscribed = self.subscribe() => subscribed,
            };
            match subscribed {
                Ok(mut requests) => {
                    backoff = self.config.min_backoff;
                    self.ready.cancel();
                    loop {
                        let request = tokio::select! {
                            _ = stop.cancelled() => return,
                            request = requests.next() => request,
                        };
                        match request {
                            Some(id) => {
                                self.tick(&id, self.clock.now() + CANCEL_KEEP);
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

    /// Subscribes, then handles the requests kept meanwhile: together, every request made
    /// before this returns, and every one published after.
    async fn subscribe(&self) -> asynq_core::Result<futures::stream::BoxStream<'static, String>> {
        let requests = self.broker.cancellations().await?;
        for (id, expiry) in self.broker.kept_cancellations().await? {
            self.tick(id.as_str(), expiry);
        }
        Ok(requests)
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
    use asynq_core::{BrokerError, CancelOutcome, Error, Lease, QueueName, Result, StoredTask, SystemClock};
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
        (Subscriber::new(broker, active.clone(), Arc::new(SystemClock), SubscriberConfig::default()), active)
    }

    fn later() -> SystemTime {
        SystemClock.now() + CANCEL_KEEP
    }

    #[tokio::test]
    async fn tick_cancels_only_a_task_this_server_runs() {
        let (subscriber, active) = subscriber(Arc::new(MemoryBroker::new()));
        let (a, b) = (run(&active, "a"), run(&active, "b"));
        assert!(!subscriber.tick("elsewhere", later()));
        assert!(subscriber.tick("a", later()));
        assert!(a.is_cancelled() && !b.is_cancelled());
        assert_eq!(active.requests_known(), 1, "only the request for a task not held is remembered");
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_kept_before_the_server_subscribed_cancels_the_task() {
        let broker = MemoryBroker::new();
        broker.cancel(&TaskId::from_static("a")).await.unwrap();
        let (subscriber, active) = subscriber(Arc::new(broker.clone()));
        let token = run(&active, "a");
        let ready = subscriber.ready();
        let stop = CancellationToken::new();
        let handle = subscriber.spawn(stop.clone());
        ready.cancelled().await;
        assert!(token.is_cancelled(), "the kept request was read on subscribing");
        assert_eq!(broker.kept_cancellations().await.unwrap().len(), 1, "kept until the attempt ends");
        active.settling("a", true);
        tokio::time::timeout(Duration::from_secs(1), async {
            while !broker.kept_cancellations().await.unwrap().is_empty() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the request was settled");
        stop.cancel();
        handle.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_task_given_back_before_its_attempt_ended_asks_again() {
        let broker = MemoryBroker::new();
        let (subscriber, active) = subscriber(Arc::new(broker.clone()));
        let mut heard = broker.cancellations().await.unwrap();
        let token = run(&active, "a");
        let stop = CancellationToken::new();
        let ready = subscriber.ready();
        let handle = subscriber.spawn(stop.clone());
        ready.cancelled().await;
        broker.cancel(&TaskId::from_static("a")).await.unwrap();
        assert_eq!(heard.next().await.as_deref(), Some("a"));
        tokio::time::timeout(Duration::from_secs(1), token.cancelled()).await.expect("the task was cancelled");
        // Abandoned at shutdown: the attempt did not end, so the request is made anew.
        assert!(broker.settle_cancellation(&TaskId::from_static("a")).await.unwrap());
        active.settling("a", false);
        active.remove("a");
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(1), heard.next()).await.expect("asked again").as_deref(),
            Some("a")
        );
        assert_eq!(broker.kept_cancellations().await.unwrap().len(), 1, "kept again");
        stop.cancel();
        handle.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_taken_after_its_request_is_cancelled_once_settled() {
        let broker = MemoryBroker::new();
        let (subscriber, active) = subscriber(Arc::new(broker.clone()));
        let stop = CancellationToken::new();
        let ready = subscriber.ready();
        let handle = subscriber.spawn(stop.clone());
        ready.cancelled().await;
        // Kept and heard before this server holds either task; "b" is settled elsewhere.
        for id in ["a", "b"] {
            broker.cancel(&TaskId::new(id).unwrap()).await.unwrap();
        }
        tokio::time::timeout(Duration::from_secs(1), async {
            while active.requests_known() < 2 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("both requests were heard");
        assert!(broker.settle_cancellation(&TaskId::from_static("b")).await.unwrap());
        let (a, b) = (run(&active, "a"), run(&active, "b"));
        tokio::time::timeout(Duration::from_secs(1), a.cancelled()).await.expect("a was cancelled");
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(!b.is_cancelled(), "a request settled elsewhere cancels nothing");
        assert!(broker.kept_cancellations().await.unwrap().is_empty());
        stop.cancel();
        handle.await.unwrap();
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
        async fn cancel(&self, _id: &TaskId) -> Result<CancelOutcome> {
            unreachable!("the test publishes through the held subscription")
        }

        async fn kept_cancellations(&self) -> Result<Vec<(TaskId, SystemTime)>> {
            Ok(Vec::new())
        }

        async fn settle_cancellation(&self, _id: &TaskId) -> Result<bool> {
            Ok(true)
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
            async fn cancel(&self, _id: &TaskId) -> Result<CancelOutcome> {
                unreachable!("nothing is published")
            }

            async fn kept_cancellations(&self) -> Result<Vec<(TaskId, SystemTime)>> {
                unreachable!("never subscribed")
            }

            async fn settle_cancellation(&self, _id: &TaskId) -> Result<bool> {
                unreachable!("never subscribed")
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
