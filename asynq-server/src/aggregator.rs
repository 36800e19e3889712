//! An aggregator combines the tasks of each ready group into one task, with the user's
//! [`GroupAggregator`], and replaces them with it.
//!
//! Every interval (by default the shorter of 7 s and the grace period, as in Go) it checks the
//! groups of its queues that may be ready by the [`AggregationLimits`], as the broker names them
//! ([`Aggregate::ready_groups`]: the Redis broker from an index, rather than every group, as Go
//! does). For a ready group it reads the tasks the check set aside, hands them to the
//! aggregator, and enqueues the task it returns into the group's queue: with the returned
//! task's own options (a queue among them is overridden), Go's defaults otherwise (a new ID, 25
//! retries, a 30-minute timeout). The broker enqueues that task and deletes the group's tasks in
//! one atomic step ([`Aggregate::complete_aggregation`]). If anything fails in between (the aggregator panics,
//! the task is refused, the server dies), the set-aside tasks go back to their group after
//! [`AGGREGATION_TIMEOUT`](asynq_core::broker::AGGREGATION_TIMEOUT), when the recoverer
//! reclaims them, and are aggregated again.
//!
//! Checks run one after another. Go allows up to three passes in flight, but passes only
//! overlap when one outlasts the interval, and then they compete for the same groups; here a
//! late pass delays the next one instead.

use crate::policy::panic_message;
use crate::served::ServedQueues;
use asynq_core::broker::{Aggregate, AggregationLimits};
use asynq_core::{Clock, Error, GroupName, QueueName, Task, TaskOptions, resolve_enqueue};
use asynq_runtime::{FirstRun, run_every};
use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How many groups that may be ready one pass asks the broker for at a time.
const READY_BATCH: usize = 1_000;

/// The longest time between two aggregation checks (Go checks every `min(7 s, grace period)`).
pub(crate) const MAX_CHECK_INTERVAL: Duration = Duration::from_secs(7);

/// Combines the tasks of a group into one task (Go's `GroupAggregator`).
///
/// Implement it for a type, or wrap a function or closure with [`aggregator_fn`].
pub trait GroupAggregator: Send + Sync + 'static {
    /// The task that replaces `tasks`, the tasks of `group` ready for aggregation, in the order
    /// they joined the group (to the second; tasks that joined in the same second in the order
    /// of their IDs). The task goes to the group's queue; options it carries apply
    /// (except its queue), Go's defaults otherwise.
    fn aggregate(&self, group: &str, tasks: Vec<Task>) -> Task;
}

/// A [`GroupAggregator`] made from a function or closure; see [`aggregator_fn`].
#[derive(Clone, Copy)]
pub struct GroupAggregatorFn<F> {
    f: F,
}

/// Turns `f`, a function or closure taking the group name and its tasks, into a
/// [`GroupAggregator`].
///
/// ```
/// use asynq_core::Task;
/// use asynq_server::aggregator_fn;
///
/// // One email listing every notification of the group (a user).
/// let digest = aggregator_fn(|group: &str, tasks: Vec<Task>| {
///     let lines: Vec<&[u8]> = tasks.iter().map(|t| t.payload().as_ref()).collect();
///     Task::new("email:digest", lines.join(&b'\n')).with_header("user", group)
/// });
/// # let _ = digest;
/// ```
pub fn aggregator_fn<F>(f: F) -> GroupAggregatorFn<F>
where
    F: Fn(&str, Vec<Task>) -> Task + Send + Sync + 'static,
{
    GroupAggregatorFn { f }
}

impl<F> GroupAggregator for GroupAggregatorFn<F>
where
    F: Fn(&str, Vec<Task>) -> Task + Send + Sync + 'static,
{
    fn aggregate(&self, group: &str, tasks: Vec<Task>) -> Task {
        (self.f)(group, tasks)
    }
}

impl<F> fmt::Debug for GroupAggregatorFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupAggregatorFn").finish_non_exhaustive()
    }
}

/// The aggregator's settings.
#[derive(Clone)]
pub(crate) struct AggregatorConfig {
    /// The queues whose groups to check.
    pub queues: ServedQueues,
    /// How often to check.
    pub interval: Duration,
    /// When a group is ready.
    pub limits: AggregationLimits,
    /// What combines a ready group's tasks.
    pub aggregator: Arc<dyn GroupAggregator>,
}

impl AggregatorConfig {
    /// Settings for `queues`, checked every `min(7 s, grace period)` as Go does.
    pub(crate) fn new(queues: ServedQueues, limits: AggregationLimits, aggregator: Arc<dyn GroupAggregator>) -> Self {
        Self { queues, interval: MAX_CHECK_INTERVAL.min(limits.grace_period), limits, aggregator }
    }
}

impl fmt::Debug for AggregatorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AggregatorConfig")
            .field("queues", &self.queues)
            .field("interval", &self.interval)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Aggregates ready groups.
#[derive(Clone)]
pub(crate) struct Aggregator {
    broker: Arc<dyn Aggregate>,
    clock: Arc<dyn Clock>,
    config: AggregatorConfig,
}

impl Aggregator {
    /// An aggregator over `broker`, stamping aggregated tasks with `clock`.
    ///
    /// Errors: [`Error::InvalidArgument`] for invalid limits (see
    /// [`AggregationLimits::validate`]) or a zero interval.
    pub(crate) fn new(
        broker: Arc<dyn Aggregate>,
        clock: Arc<dyn Clock>,
        config: AggregatorConfig,
    ) -> asynq_core::Result<Self> {
        config.limits.validate()?;
        if config.interval.is_zero() {
            return Err(Error::invalid("interval", "aggregation check interval must be positive"));
        }
        Ok(Self { broker, clock, config })
    }

    /// Checks the groups of every queue that may be ready, each once, and aggregates the ready
    /// ones; returns how many aggregated tasks were enqueued. A group that cannot be aggregated
    /// (its aggregator panicked, or the task it returned was refused) is logged and skipped.
    ///
    /// Errors: the first broker failure ([`Error::Broker`]); the rest of the pass is left for
    /// the next tick.
    pub(crate) async fn tick(&self) -> asynq_core::Result<usize> {
        let mut enqueued = 0;
        let served = self.config.queues.now();
        for queue in &served.names {
            // Each group is checked once per pass, as Go checks each once per tick: a group
            // still ready after its check (it held twice the max size) waits for the next pass.
            let mut checked = HashSet::new();
            loop {
                let named = self.broker.ready_groups(queue, self.config.limits, READY_BATCH).await?;
                let full = named.len() >= READY_BATCH;
                let fresh: Vec<GroupName> = named.into_iter().filter(|group| checked.insert(group.clone())).collect();
                if fresh.is_empty() {
                    break;
                }
                for group in &fresh {
                    match self.aggregate_group(queue, group).await {
                        Ok(done) => enqueued += usize::from(done),
                        Err(e @ Error::Broker(_)) => return Err(e),
                        Err(e) => tracing::error!(
                            queue = %queue, group = %group, error = %e,
                            "could not aggregate a group; its tasks return to the group once the aggregation times out"
                        ),
                    }
                }
                if !full {
                    break;
                }
            }
        }
        Ok(enqueued)
    }

    /// Checks `group` of `queue` and aggregates it if it is ready; true when an aggregated task
    /// was enqueued.
    async fn aggregate_group(&self, queue: &QueueName, group: &GroupName) -> asynq_core::Result<bool> {
        let Some(set_id) = self.broker.aggregation_check(queue, group, self.config.limits).await? else {
            return Ok(false);
        };
        let set = self.broker.read_aggregation_set(queue, group, &set_id).await?;
        if set.messages.is_empty() {
            // Every member's task was deleted meanwhile: nothing to aggregate.
            self.broker.delete_aggregation_set(queue, group, &set_id).await?;
            return Ok(false);
        }
        let tasks = set.messages.iter().map(Task::from_message).collect();
        let aggregator = &self.config.aggregator;
        let task = match catch_unwind(AssertUnwindSafe(|| aggregator.aggregate(group, tasks))) {
            Ok(task) => task,
            Err(panic) => {
                tracing::error!(
                    queue = %queue, group = %group, panic = %panic_message(&*panic),
                    "the group aggregator panicked; the group's tasks return to it once the aggregation times out"
                );
                return Ok(false);
            }
        };
        let request = resolve_enqueue(&task, &TaskOptions::new().queue(queue), self.clock.now(), || {
            uuid::Uuid::new_v4().to_string()
        })?;
        let id = request.message.id.clone();
        self.broker.complete_aggregation(queue, group, &set_id, request).await?;
        tracing::debug!(queue = %queue, group = %group, task_id = %id, tasks = set.messages.len(), "aggregated a group");
        Ok(true)
    }

    /// Checks every interval (the first time after one interval) until `stop` is cancelled.
    pub(crate) fn spawn(self, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            run_every(self.config.interval, FirstRun::AfterInterval, &stop, || async {
                if let Err(e) = self.tick().await {
                    tracing::error!(error = %e, "could not check groups for aggregation");
                }
            })
            .await;
        })
    }
}

impl fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Aggregator").field("config", &self.config).finish_non_exhaustive()
    }
}
