//! [`FlowProducer`]: stores whole workflows (chains, groups, chords, DAGs; see [`Flow`]).

use crate::DEFAULT_MAX_PAYLOAD;
use crate::shards::ShardRouter;
use asynq_core::broker::{ShardedQueues, Workflows};
use asynq_core::workflow::{DEFAULT_MAX_WORKFLOW_TASKS, Flow, TaskRef};
use asynq_core::{Clock, Error, Result, SystemClock, WorkflowId};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;
use tracing::Instrument;

/// Stores workflows: every task of one, checked as a whole before anything is written, each
/// released to run once the tasks it waits for have settled.
///
/// Its broker needs the [`Workflows`] capability (the memory and Redis brokers have it); the
/// tasks of a sharded queue go to its shards when the broker keeps sharded queues. Task
/// IDs not given are generated (UUID v4) afresh for each run, as is the workflow's ID: a DAG
/// task's name ([`DagTask`](asynq_core::workflow::DagTask)) is a name within one run, not its
/// ID, so the same definition can be enqueued again and again ([`EnqueuedWorkflow::names`]
/// maps each name to the task of that run).
///
/// ```
/// use asynq_client::{FlowProducer, Task, TaskOptions};
/// use asynq_core::workflow::Flow;
/// use asynq_memory::MemoryBroker;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), asynq_client::Error> {
/// let resize = |name: &str| Flow::task(Task::new("image:resize", name.to_owned()), TaskOptions::new());
/// let archive = Flow::task(Task::new("image:archive", ""), TaskOptions::new());
/// let flow = Flow::chord([resize("a.png"), resize("b.png")], archive);
/// let stored = FlowProducer::new(MemoryBroker::new()).enqueue(&flow).await?;
/// assert_eq!(stored.tasks.len(), 3); // the two resizes run at once, the archive after both
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct FlowProducer {
    broker: Arc<dyn Workflows>,
    clock: Arc<dyn Clock>,
    shards: Option<Arc<ShardRouter>>,
    max_tasks: usize,
    max_payload: usize,
}

/// A workflow as [`FlowProducer::enqueue`] stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueuedWorkflow {
    /// Its ID, in every task's [`WORKFLOW_HEADER`](asynq_core::workflow::WORKFLOW_HEADER).
    pub id: WorkflowId,
    /// Its tasks, each after the tasks it waits for.
    pub tasks: Vec<TaskRef>,
    /// Each DAG task's name with the task this run stored for it.
    pub names: BTreeMap<String, TaskRef>,
}

impl FlowProducer {
    /// A producer of workflows stored in `broker`, reading time from the system clock. When
    /// the broker keeps sharded queues ([`as_sharded_queues`](asynq_core::broker::Capabilities::as_sharded_queues),
    /// as the memory and Redis brokers do), it places the tasks of a sharded queue on its shards
    /// as [`FlowProducer::with_sharded_queues`] says; otherwise every task goes to the queue it
    /// names.
    pub fn new(broker: impl Workflows + 'static) -> Self {
        Self::from_shared(Arc::new(broker))
    }

    /// A producer over a broker shared with other components, placing tasks on shards as
    /// [`FlowProducer::new`] does.
    pub fn from_shared(broker: Arc<dyn Workflows>) -> Self {
        let shards = broker.clone().as_sharded_queues().map(|directory| Arc::new(ShardRouter::new(directory)));
        Self {
            broker,
            clock: Arc::new(SystemClock),
            shards,
            max_tasks: DEFAULT_MAX_WORKFLOW_TASKS,
            max_payload: DEFAULT_MAX_PAYLOAD,
        }
    }

    /// Reads "now" from `clock` instead of the system clock (for tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Places the tasks of a sharded queue on its shards, reading the declarations from
    /// `directory` instead of the broker's own, kept and read again as
    /// [`Client::with_sharded_queues`](crate::Client::with_sharded_queues) does. The producer
    /// does this by itself when its broker keeps sharded queues ([`FlowProducer::new`]): this is
    /// for declarations kept elsewhere than in the broker that stores the workflows.
    ///
    /// A task with a [`TaskOptions::shard_key`](crate::TaskOptions::shard_key) goes to the
    /// shard its key picks, one whose ID is given to the shard its ID picks (so the ID conflicts
    /// over the logical queue); the others of one run go to the shard the workflow's ID picks, so
    /// that a run's tasks of one logical queue share a shard (one step stores them, and each
    /// settle releases its dependents there in the same step) while runs spread over the shards.
    pub fn with_sharded_queues(mut self, directory: Arc<dyn ShardedQueues>) -> Self {
        self.shards = Some(Arc::new(ShardRouter::new(directory)));
        self
    }

    /// Refuses workflows of more than `tasks` tasks (by default
    /// [`DEFAULT_MAX_WORKFLOW_TASKS`]).
    pub fn with_max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks;
        self
    }

    /// Refuses a workflow with a task whose payload is longer than `bytes` (by default
    /// [`DEFAULT_MAX_PAYLOAD`], as [`Client::with_max_payload`](crate::Client::with_max_payload)).
    pub fn with_max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// Checks `flow` as a whole and stores every task of it: those that wait for nothing
    /// pending (or scheduled), the others waiting until the tasks they wait for have settled.
    /// The store runs in one [`ENQUEUE_SPAN_NAME`](crate::ENQUEUE_SPAN_NAME) span
    /// (`send workflow`); with the `opentelemetry` feature, inside a trace, every task carries
    /// its context in its `traceparent` header (one the caller set is kept), so each handler
    /// joins the producer's trace.
    ///
    /// Errors, with nothing written: [`Error::InvalidArgument`] naming what is wrong (an empty
    /// chain, group or DAG, a blank or too long shard key on a sharded queue, a task ID or DAG name used twice, a dependency outside its DAG, a cycle, more
    /// tasks than the limit, an option a workflow task cannot have), [`Error::TooLarge`] for a
    /// payload over the limit, [`Error::TaskIdConflict`] when a task's ID is taken in its
    /// queue (only an ID the caller set can be: one set on a DAG task holds for every run). [`Error::Broker`] when the broker fails: see
    /// [`Workflows::store_workflow`] for what it may leave.
    pub async fn enqueue(&self, flow: &Flow) -> Result<EnqueuedWorkflow> {
        let now = self.clock.now();
        let mut generated = HashSet::new();
        let mut plan = flow.plan(self.max_tasks, now, || {
            let id = uuid::Uuid::new_v4().to_string();
            generated.insert(id.clone());
            id
        })?;
        for task in &plan.tasks {
            let size = task.request.message.payload.len();
            if size > self.max_payload {
                let limit_by = "FlowProducer::with_max_payload";
                return Err(Error::TooLarge { what: "payload", size, limit: self.max_payload, limit_by });
            }
        }
        if let Some(shards) = &self.shards {
            shards.place_workflow(&mut plan, &generated, self.clock.as_ref()).await?;
        }
        let traced = crate::caller_in_trace();
        let span = tracing::info_span!(
            crate::ENQUEUE_SPAN_NAME,
            otel.name = "send workflow",
            otel.kind = "producer",
            messaging.system = "asynq",
            messaging.operation.type = "send",
            messaging.operation.name = "send",
            messaging.batch.message_count = plan.tasks.len(),
            workflow.id = %plan.id,
        );
        for task in &mut plan.tasks {
            crate::propagate(&span, &mut task.request, traced);
        }
        self.broker.store_workflow(&plan).instrument(span).await?;
        let tasks = plan.tasks.iter().map(|task| TaskRef::of(&task.request.message)).collect();
        Ok(EnqueuedWorkflow { names: plan.names(), id: plan.id, tasks })
    }
}

impl fmt::Debug for FlowProducer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowProducer")
            .field("clock", &self.clock)
            .field("sharded_queues", &self.shards.is_some())
            .field("max_tasks", &self.max_tasks)
            .field("max_payload", &self.max_payload)
            .finish_non_exhaustive()
    }
}
