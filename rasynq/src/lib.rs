#![doc = include_str!("../README.md")]
#![doc(test(attr(deny(warnings))))]

// The producer's side, always present: a producer needs a broker and these.
pub use asynq_client::{Client, EnqueuedWorkflow, FlowProducer, Inspector, TaskEvent, Tracker};
/// Workflows: chains, groups, chords and DAGs of tasks, stored with a [`FlowProducer`].
pub use asynq_core::workflow::{DagTask, Flow, OnParentFailure, ParentOutcome, ParentResult, Step};
pub use asynq_core::{
    ArchiveLimits, BrokerError, CancelOutcome, Error, GroupName, Progress, QueueName, Result, Task, TaskId, TaskInfo,
    TaskOptions, TaskOutcome, TaskPriority, TaskState, WorkflowId,
};
#[cfg(feature = "json")]
pub use asynq_core::{Job, PayloadError};

// The worker's side.
#[cfg(feature = "server")]
pub use asynq_server::{
    Config, ConfigBuilder, GroupAggregator, Handler, HandlerError, HandlerFn, Middleware, ProgressReporter,
    QueueProvider, ResultWriter, ServeMux, Server, SignalWait, StepError, TaskContext, TokioClock, aggregator_fn,
    handler_fn,
};

/// The attribute the broker traits and [`QueueProvider`] are written with: implement them under
/// `#[rasynq::async_trait]`.
pub use async_trait::async_trait;

// Periodic tasks.
#[cfg(feature = "scheduler")]
pub use asynq_scheduler::{PeriodicTaskManager, Scheduler, SchedulerConfig};
#[cfg(all(feature = "server", feature = "json"))]
pub use asynq_server::{JsonHandlerFn, json_handler_fn};

// The brokers.
#[cfg(feature = "memory")]
pub use asynq_memory::{MemoryBroker, MemoryConfig};
#[cfg(feature = "redis")]
pub use asynq_redis::{ConnectError, Namespace, RedisBroker, RedisConfig, TlsOptions};

/// The producer crate, whole: the [`Client`], [`Tracker`] and [`Inspector`] with the types
/// they take and return.
pub use asynq_client as client;

/// The broker contract, for tools written against any backend and for backend authors: the
/// traits a producer, a worker and an operator need, and the types they exchange.
pub use asynq_core as core;

/// The worker crate, whole: the [`Server`], its [`Config`], handlers, the mux, middleware and
/// task observers.
#[cfg(feature = "server")]
pub use asynq_server as server;

/// Periodic tasks, whole: the [`Scheduler`], the [`PeriodicTaskManager`] and their
/// configuration providers.
#[cfg(feature = "scheduler")]
pub use asynq_scheduler as scheduler;

/// The embedded in-memory broker, with the Redis broker's observable semantics.
#[cfg(feature = "memory")]
pub use asynq_memory as memory;

/// The Redis broker: connection targets, TLS, and the key layout shared with Go asynq.
#[cfg(feature = "redis")]
pub use asynq_redis as redis;

/// Prometheus metrics: queue metrics, worker metrics, an HTTP exporter, trace context.
#[cfg(feature = "metrics")]
pub use asynq_metrics as metrics;

/// The web dashboard, as an axum router over an [`Inspector`].
#[cfg(feature = "web")]
pub use asynq_web as web;

/// The guide: one chapter per capability, with examples that compile and run as doctests.
pub mod guide;
