//! The asynq worker server: takes tasks from a broker and runs handlers on them with
//! at-least-once delivery.
//!
//! The public surface is the [`Server`] and its [`Config`], the [`ServeMux`] that routes tasks
//! by type, [`Handler`]s (plain, [`handler_fn`], or typed with `ServeMux::handle_json`), what a
//! handler receives ([`Task`], [`TaskContext`], [`ResultWriter`]) and returns
//! ([`HandlerError`]), middleware, group aggregators and [`TaskObserver`]s.
//! Behind it, a server runs one private module per role (processor, heartbeater, recoverer,
//! forwarder, janitor, health checker, syncer, subscriber, aggregator); ARCHITECTURE.md maps
//! them.
//!
//! ```
//! use asynq_memory::MemoryBroker;
//! use asynq_server::{Config, HandlerError, ServeMux, Server};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), asynq_core::Error> {
//! let mut mux = ServeMux::new();
//! mux.handle_fn("email:", |ctx, task| async move {
//!     if task.payload().is_empty() {
//!         return Err(HandlerError::skip_retry("empty payload"));
//!     }
//!     println!("sending {} (attempt {})", task.type_name(), ctx.retry_count() + 1);
//!     Ok(())
//! });
//! let mut server = Server::new(MemoryBroker::new(), Config::default())?;
//! server.start(mux)?;
//! server.shutdown().await; // `server.run(mux)` instead runs until SIGTERM or Ctrl-C
//! # Ok(())
//! # }
//! ```
//!
//! Periodic tasks are the producer side's: the `Scheduler` lives in `asynq-scheduler`, so a
//! cron-only process does not compile the worker.
#![doc(test(attr(deny(warnings))))]

mod aggregator;
mod config;
mod control;
mod forwarder;
mod handler;
mod healthcheck;
mod heartbeat;
mod janitor;
mod journal;
#[cfg(feature = "json")]
mod json;
mod limits;
mod mux;
mod observe;
mod policy;
mod processor;
mod recoverer;
mod relayer;
mod rng;
mod served;
mod server;
mod service;
mod settler;
mod sharded;
mod shared_limits;
mod starter;
mod steps;
mod subscriber;
mod syncer;
mod type_metrics;
mod workers;

pub use aggregator::{GroupAggregator, aggregator_fn};
pub use asynq_core::Task;
pub use asynq_runtime::TokioClock;
pub use config::{Config, ConfigBuilder};
pub use handler::{Handler, HandlerError, HandlerFn, ProgressReporter, ResultWriter, TaskContext, handler_fn};
pub use journal::Suspension;
#[cfg(feature = "json")]
pub use json::{JsonHandlerFn, json_handler_fn};
pub use mux::{Middleware, ServeMux};
pub use observe::{AttemptOutcome, AttemptReport, TASK_SPAN_NAME, TaskObserver};
pub use policy::{ErrorHandlerFn, HealthCheckFn, IsFailureFn, RetryDelayFn, SharedLimitFn, default_retry_delay};
pub use relayer::WORKFLOW_RELAY_INTERVAL;
pub use served::{FULL_REFRESH_EVERY, QueueProvider};
pub use server::{SHUTDOWN_MARGIN, Server};
pub use service::{BoxError, HandlerFailure, HandlerService, ServiceHandler, TaskRequest};
pub use steps::{SignalWait, StepError};
pub use type_metrics::TASK_METRICS_FLUSH_INTERVAL;
