//! The broker contract is cut by its callers: a worker server runs on a broker that implements
//! only the worker's traits, a client on one that implements only the producer's, an inspector on
//! one that implements only the operator's, and what a configuration needs beyond them is refused
//! up front when the broker lacks it.

use async_trait::async_trait;
use asynq_client::Inspector;
use asynq_conformance::{BrokerFactory, Capability};
use asynq_core::broker::{
    Capabilities, Dequeue, Dequeued, Enqueue, ExpiredLease, Forward, Forwarded, Health, Inspect, Janitor, Manage,
    Outcome, Page, Recover, ServerState,
};
use asynq_core::rate_limit::RateLimit;
use asynq_core::{ArchiveLimits, Clock};
use asynq_core::{
    BackendInfo, DailyStats, EnqueueRequest, Error, GroupName, QueueInfo, QueueLocation, QueueName, Result, ServerInfo,
    StoredTask, Task, TaskId, TaskInfo, TaskOptions, TaskSet, TaskState, WorkerInfo,
};
use asynq_memory::{MemoryBroker, MemoryConfig};
use asynq_server::{Server, aggregator_fn, handler_fn};
use asynq_tests::{Harness, secs};
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// A backend with the worker's six traits and no capability: what a third-party worker
/// backend has to write, delegating to the memory broker.
#[derive(Clone)]
struct WorkerOnly(MemoryBroker);

impl Capabilities for WorkerOnly {}

#[async_trait]
impl Dequeue for WorkerOnly {
    async fn dequeue(&self, queues: &[QueueName], max: usize) -> Result<Vec<Dequeued>> {
        self.0.dequeue(queues, max).await
    }
    async fn finish(&self, message: &StoredTask, outcome: Outcome) -> Result<()> {
        self.0.finish(message, outcome).await
    }
    async fn extend_leases(&self, queue: &QueueName, ids: &[TaskId]) -> Result<SystemTime> {
        self.0.extend_leases(queue, ids).await
    }
    async fn write_result(&self, queue: &QueueName, id: &TaskId, result: Bytes) -> Result<()> {
        self.0.write_result(queue, id, result).await
    }
}

#[async_trait]
impl Forward for WorkerOnly {
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<Forwarded> {
        self.0.forward_ready(queues).await
    }
}

#[async_trait]
impl Recover for WorkerOnly {
    async fn list_lease_expired(&self, queues: &[QueueName], cutoff: SystemTime) -> Result<Vec<ExpiredLease>> {
        self.0.list_lease_expired(queues, cutoff).await
    }
    async fn recover(&self, items: Vec<(StoredTask, Outcome)>, cutoff: SystemTime) -> Vec<Result<()>> {
        self.0.recover(items, cutoff).await
    }
}

#[async_trait]
impl Janitor for WorkerOnly {
    async fn delete_expired_completed(&self, queue: &QueueName, batch_size: usize) -> Result<usize> {
        self.0.delete_expired_completed(queue, batch_size).await
    }
}

#[async_trait]
impl ServerState for WorkerOnly {
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()> {
        self.0.write_server_state(server, workers, ttl).await
    }
    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()> {
        self.0.clear_server_state(server).await
    }
}

#[async_trait]
impl Health for WorkerOnly {
    async fn ping(&self) -> Result<()> {
        self.0.ping().await
    }
}

/// A backend that delegates to the memory broker underneath, which is its conformance store.
trait OverMemory: Clone + Send + Sync + 'static {
    /// Its name in the suite's messages.
    const NAME: &'static str;
    /// The backend over `broker`.
    fn over(broker: MemoryBroker) -> Self;
    /// The memory broker underneath.
    fn memory(&self) -> &MemoryBroker;
}

/// Makes an [`OverMemory`] backend for the conformance suite, on a fresh memory broker.
struct OverMemoryFactory<B>(std::marker::PhantomData<B>);

impl<B> OverMemoryFactory<B> {
    fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<B: OverMemory> BrokerFactory for OverMemoryFactory<B> {
    type Broker = B;
    type Store = MemoryBroker;

    fn name(&self) -> &'static str {
        B::NAME
    }

    fn lacks(&self) -> &'static [Capability] {
        &[]
    }

    async fn broker(&self, clock: Arc<dyn Clock>) -> B {
        B::over(MemoryBroker::with_clock(clock))
    }

    async fn broker_with_archive_limits(&self, clock: Arc<dyn Clock>, limits: ArchiveLimits) -> B {
        B::over(MemoryBroker::with_config(MemoryConfig { clock, archive_limits: limits }))
    }

    fn store(&self, broker: &B) -> MemoryBroker {
        broker.memory().clone()
    }
}

/// Each backend runs the conformance suite's part for its traits, putting tasks in and looking at
/// them through the memory broker underneath (a module each: the suite's tests are named after
/// its cases).
macro_rules! over_memory {
    ($backend:ident, $name:literal, $module:ident, $part:ident) => {
        impl OverMemory for $backend {
            const NAME: &'static str = $name;
            fn over(broker: MemoryBroker) -> Self {
                Self(broker)
            }
            fn memory(&self) -> &MemoryBroker {
                &self.0
            }
        }

        mod $module {
            use super::*;
            asynq_conformance::broker_conformance!(OverMemoryFactory::<$backend>::new(), parts = [$part], paused_time);
        }
    };
}

over_memory!(WorkerOnly, "worker-only", worker_only, worker);
over_memory!(ProducerOnly, "producer-only", producer_only, producer);
over_memory!(OperatorOnly, "operator-only", operator_only, manage);

#[tokio::test(start_paused = true)]
async fn a_server_runs_on_a_broker_with_only_the_workers_traits() {
    let h = Harness::new();
    h.client.enqueue(&Task::new("email:welcome", "42"), TaskOptions::new()).await.unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let mut server = Server::new(WorkerOnly(h.broker.clone()), h.config("default", 2)).unwrap();
    server
        .start(handler_fn(move |_ctx, _task| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }))
        .unwrap();
    h.eventually(secs(10), "the task ran and settled", || async {
        ran.load(Ordering::SeqCst) == 1 && h.queue("default").await.processed_total == 1
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_configuration_that_needs_a_missing_capability_is_refused_before_starting() {
    let h = Harness::new();
    let mut aggregating = h.config("default", 1);
    aggregating.group_aggregator = Some(Arc::new(aggregator_fn(|_group, _tasks| Task::new("digest", ""))));
    let err = Server::new(WorkerOnly(h.broker.clone()), aggregating).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("group"), "{err}");

    let mut limited = h.config("default", 1);
    limited.rate_limits = [("default".to_owned(), RateLimit::new(5.0, 5).unwrap())].into();
    let err = Server::new(WorkerOnly(h.broker.clone()), limited).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("rate limit"), "{err}");
}

/// A backend with the operator's two traits and no capability, their provided methods left as
/// they are: what a third-party operator backend has to write.
#[derive(Clone)]
struct OperatorOnly(MemoryBroker);

impl Capabilities for OperatorOnly {}

#[async_trait]
impl Inspect for OperatorOnly {
    async fn queues(&self) -> Result<Vec<QueueName>> {
        self.0.queues().await
    }
    async fn queue_info(&self, queue: &QueueName) -> Result<QueueInfo> {
        self.0.queue_info(queue).await
    }
    async fn task_info(&self, queue: &QueueName, id: &TaskId) -> Result<TaskInfo> {
        self.0.task_info(queue, id).await
    }
    async fn list_tasks(&self, queue: &QueueName, state: TaskState, page: Page) -> Result<Vec<TaskInfo>> {
        self.0.list_tasks(queue, state, page).await
    }
    async fn list_group_tasks(&self, queue: &QueueName, group: &GroupName, page: Page) -> Result<Vec<TaskInfo>> {
        self.0.list_group_tasks(queue, group, page).await
    }
    async fn history(&self, queue: &QueueName, days: usize) -> Result<Vec<DailyStats>> {
        self.0.history(queue, days).await
    }
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>> {
        self.0.servers().await
    }
    async fn backend_info(&self) -> Result<BackendInfo> {
        self.0.backend_info().await
    }
    async fn queue_location(&self, queue: &QueueName) -> Result<Option<QueueLocation>> {
        self.0.queue_location(queue).await
    }
    async fn pause_queue(&self, queue: &QueueName) -> Result<()> {
        self.0.pause_queue(queue).await
    }
    async fn unpause_queue(&self, queue: &QueueName) -> Result<()> {
        self.0.unpause_queue(queue).await
    }
}

#[async_trait]
impl Manage for OperatorOnly {
    async fn run_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.0.run_task(queue, id).await
    }
    async fn archive_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.0.archive_task(queue, id).await
    }
    async fn delete_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.0.delete_task(queue, id).await
    }
    async fn run_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        self.0.run_all(queue, set).await
    }
    async fn archive_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        self.0.archive_all(queue, set).await
    }
    async fn delete_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        self.0.delete_all(queue, set).await
    }
    async fn update_task_payload(&self, queue: &QueueName, id: &TaskId, payload: Bytes) -> Result<TaskInfo> {
        self.0.update_task_payload(queue, id, payload).await
    }
    async fn delete_queue(&self, queue: &QueueName, force: bool) -> Result<()> {
        self.0.delete_queue(queue, force).await
    }
}

#[tokio::test(start_paused = true)]
async fn an_inspector_runs_on_a_broker_with_only_the_operators_traits() {
    let h = Harness::new();
    let info = h.client.enqueue(&Task::new("report", "q3"), TaskOptions::new().group("g")).await.unwrap();
    let inspector = Inspector::new(OperatorOnly(h.broker.clone()));

    assert_eq!(inspector.queues().await.unwrap(), ["default"]);
    assert_eq!(inspector.queue_info("default").await.unwrap().aggregating, 1);
    assert_eq!(inspector.task_info("default", &info.id).await.unwrap().state, TaskState::Aggregating);
    // What the broker cannot do is empty, or refused with a typed error.
    assert!(inspector.groups("default").await.unwrap().is_empty());
    assert!(inspector.scheduler_entries().await.unwrap().is_empty());
    let err = inspector.cancel(&info.id).await.unwrap_err();
    assert!(matches!(err, Error::Unsupported { capability: "cancelling tasks" }), "{err:?}");
    // The same inspector over the full memory broker sees the group.
    assert_eq!(Inspector::new(h.broker.clone()).groups("default").await.unwrap().len(), 1);
}

/// A backend with the producer's one trait and no capability, `enqueue_batch` left to its
/// provided one-by-one method: what a third-party producer backend has to write.
#[derive(Clone)]
struct ProducerOnly(MemoryBroker);

impl Capabilities for ProducerOnly {}

#[async_trait]
impl Enqueue for ProducerOnly {
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()> {
        self.0.enqueue(request).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_client_enqueues_on_a_broker_with_only_the_producer_s_trait() {
    let h = Harness::new();
    let client = asynq_client::Client::new(ProducerOnly(h.broker.clone())).with_clock(h.clock.clone());
    let info = client.enqueue(&Task::new("email:welcome", "42"), TaskOptions::new().queue("mail")).await.unwrap();
    assert_eq!(h.broker.task_info(&info.queue, &info.id).await.unwrap().state, TaskState::Pending);
}

#[tokio::test(start_paused = true)]
async fn durable_steps_on_a_broker_without_them_are_refused_and_run_nothing() {
    let h = Harness::new();
    h.client.enqueue(&asynq_client::Task::new("order", ""), asynq_client::TaskOptions::new()).await.unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut server = Server::new(WorkerOnly(h.broker.clone()), h.config("default", 1)).unwrap();
    server
        .start(handler_fn(move |ctx: asynq_server::TaskContext, _task| {
            let log = log.clone();
            async move {
                let step = ctx.step("s", || async { Ok::<_, asynq_server::HandlerError>(1) }).await;
                let sleep = ctx.sleep(secs(60)).await;
                let wait = ctx.wait_for_signal::<u32>("go", secs(60)).await;
                for outcome in [step.map(|_| ()), sleep, wait.map(|_| ())] {
                    log.lock().unwrap().push(match outcome {
                        Err(asynq_server::StepError::Unsupported { name }) => name,
                        other => format!("unexpected {other:?}"),
                    });
                }
                Ok(())
            }
        }))
        .unwrap();
    h.eventually(secs(10), "the handler ran", || async { seen.lock().unwrap().len() == 3 }).await;
    assert_eq!(seen.lock().unwrap().clone(), ["s", "sleep#1", "signal:go"]);
    server.shutdown().await;
}
