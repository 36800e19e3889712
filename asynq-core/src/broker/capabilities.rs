//! The opt-in [`Capabilities`], the queue registry, and [`Broker`], every trait at once.

use super::{
    Aggregate, Cancel, ConcurrencySlots, Enqueue, EventLog, OperatorBroker, RateLimiter, SchedulerState, ServerControl,
    ShardedQueues, Steps, TaskMetrics, Wait, WorkerBroker, Workflows,
};
#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::error::Result;
use crate::names::QueueName;
use async_trait::async_trait;
use std::sync::Arc;

/// The opt-in capabilities of a broker: what a server, an inspector or a tool uses when the
/// broker has it, and does without (or refuses with [`Error::Unsupported`])
/// when it does not.
///
/// Every method is provided and says "not supported"; a backend overrides those it has, each
/// in one line:
///
/// ```
/// # use asynq_core::broker::{Capabilities, Cancel};
/// # use std::sync::Arc;
/// # struct MyBroker;
/// # #[async_trait::async_trait]
/// # impl Cancel for MyBroker {
/// #     async fn cancel(&self, _id: &asynq_core::TaskId) -> asynq_core::Result<asynq_core::CancelOutcome> {
/// #         Ok(asynq_core::CancelOutcome::UnknownTask)
/// #     }
/// #     async fn cancellations(&self) -> asynq_core::Result<futures::stream::BoxStream<'static, String>> {
/// #         Ok(Box::pin(futures::stream::pending()))
/// #     }
/// #     async fn kept_cancellations(&self) -> asynq_core::Result<Vec<(asynq_core::TaskId, std::time::SystemTime)>> {
/// #         Ok(Vec::new())
/// #     }
/// #     async fn settle_cancellation(&self, _id: &asynq_core::TaskId) -> asynq_core::Result<bool> { Ok(false) }
/// # }
/// impl Capabilities for MyBroker {
///     fn as_cancel(self: Arc<Self>) -> Option<Arc<dyn Cancel>> {
///         Some(self)
///     }
/// }
///
/// let broker = Arc::new(MyBroker);
/// assert!(broker.clone().as_cancel().is_some());
/// assert!(broker.as_aggregate().is_none());
/// ```
pub trait Capabilities: Send + Sync + 'static {
    /// Requests to cancel running tasks, and the stream servers listen to. Without it a server
    /// runs no subscriber and [`Error::Unsupported`] answers requests.
    fn as_cancel(self: Arc<Self>) -> Option<Arc<dyn Cancel>> {
        None
    }

    /// Groups and their aggregation. Without it a server refuses a group aggregator, and the
    /// inspector lists no groups.
    fn as_aggregate(self: Arc<Self>) -> Option<Arc<dyn Aggregate>> {
        None
    }

    /// Rate limits shared by every server. Without it a server refuses rate limits.
    fn as_rate_limiter(self: Arc<Self>) -> Option<Arc<dyn RateLimiter>> {
        None
    }

    /// The records of periodic-task schedulers. Without it the inspector lists no scheduler
    /// entries (no scheduler can run on such a broker).
    fn as_scheduler_state(self: Arc<Self>) -> Option<Arc<dyn SchedulerState>> {
        None
    }

    /// Concurrency limits shared by every server. Without it a server refuses them.
    fn as_concurrency_slots(self: Arc<Self>) -> Option<Arc<dyn ConcurrencySlots>> {
        None
    }

    /// Task event logs. Without it no events are kept, and the inspector reads none.
    fn as_event_log(self: Arc<Self>) -> Option<Arc<dyn EventLog>> {
        None
    }

    /// Workflows. Without it a server runs no workflow relay and hands handlers no parent
    /// results, and workflows cannot be stored.
    fn as_workflows(self: Arc<Self>) -> Option<Arc<dyn Workflows>> {
        None
    }

    /// The registry of queues, read cheaply. Without it a server refuses queue patterns.
    fn as_queue_directory(self: Arc<Self>) -> Option<Arc<dyn QueueDirectory>> {
        None
    }

    /// The record of per task type metrics. Without it a server records none, and the
    /// inspector reads none.
    fn as_task_metrics(self: Arc<Self>) -> Option<Arc<dyn TaskMetrics>> {
        None
    }

    /// Operators' requests to quiet or stop a running server. Without it a server hears none,
    /// and operators' tools answer [`Error::Unsupported`].
    fn as_server_control(self: Arc<Self>) -> Option<Arc<dyn ServerControl>> {
        None
    }

    /// Declarations of sharded queues. Without it no queue is sharded: a server serves, and a
    /// client enqueues to, queues by their names alone.
    fn as_sharded_queues(self: Arc<Self>) -> Option<Arc<dyn ShardedQueues>> {
        None
    }

    /// The records of durable steps. Without it a handler's steps fail with
    /// [`Error::Unsupported`], and the inspector shows none.
    fn as_steps(self: Arc<Self>) -> Option<Arc<dyn Steps>> {
        None
    }
}

/// Implements [`Capabilities`] for a backend that has every capability: each accessor answers
/// `Some(self)`. The one place that lists them, so a backend cannot forget the one added last.
///
/// ```ignore
/// asynq_core::every_capability!(MyBroker); // MyBroker implements every capability trait
/// ```
#[macro_export]
macro_rules! every_capability {
    ($broker:ty) => {
        impl $crate::broker::Capabilities for $broker {
            fn as_cancel(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::broker::Cancel>> {
                Some(self)
            }
            fn as_aggregate(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::broker::Aggregate>> {
                Some(self)
            }
            fn as_rate_limiter(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::RateLimiter>> {
                Some(self)
            }
            fn as_scheduler_state(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::SchedulerState>> {
                Some(self)
            }
            fn as_concurrency_slots(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::ConcurrencySlots>> {
                Some(self)
            }
            fn as_event_log(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::broker::EventLog>> {
                Some(self)
            }
            fn as_workflows(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::broker::Workflows>> {
                Some(self)
            }
            fn as_queue_directory(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::QueueDirectory>> {
                Some(self)
            }
            fn as_task_metrics(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::TaskMetrics>> {
                Some(self)
            }
            fn as_server_control(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::ServerControl>> {
                Some(self)
            }
            fn as_sharded_queues(
                self: ::std::sync::Arc<Self>,
            ) -> Option<::std::sync::Arc<dyn $crate::broker::ShardedQueues>> {
                Some(self)
            }
            fn as_steps(self: ::std::sync::Arc<Self>) -> Option<::std::sync::Arc<dyn $crate::broker::Steps>> {
                Some(self)
            }
        }
    };
}

/// The registry of known queues (Go's `asynq:queues`), as a server serving queue patterns
/// ([`QueuePattern`](crate::queue::QueuePattern)) watches it: a count it can read every second
/// whatever the number of queues, and the names when the count moved.
#[async_trait]
pub trait QueueDirectory: Send + Sync {
    /// How many queues are registered, in O(1).
    async fn registered_queue_count(&self) -> Result<usize>;

    /// Every registered queue, in no particular order.
    async fn registered_queues(&self) -> Result<Vec<QueueName>>;
}

/// Every broker role and capability at once, as the memory and Redis brokers have them;
/// implemented for every type that implements them all.
pub trait Broker:
    Enqueue + WorkerBroker + OperatorBroker + Cancel + Wait + Aggregate + SchedulerState + RateLimiter + 'static
{
}

impl<T> Broker for T where
    T: Enqueue + WorkerBroker + OperatorBroker + Cancel + Wait + Aggregate + SchedulerState + RateLimiter + 'static
{
}
