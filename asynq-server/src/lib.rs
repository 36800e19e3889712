//! The asynq worker server: takes tasks from a broker and runs handlers on them with
//! at-least-once delivery.
//!
//! A [`Server`] runs one module per role, each with a config, a loop (`spawn`) and a single
//! step (`tick`) that tests call directly:
//! [`processor`] (runs handlers), [`heartbeat`] (publishes state, extends leases),
//! [`recoverer`] (recovers tasks of dead workers), [`forwarder`] (moves due tasks to pending),
//! [`janitor`] (deletes expired completed tasks), [`healthcheck`] (pings the broker),
//! [`syncer`] (retries failed state writes) and [`subscriber`] (cancels running tasks on
//! request).
//!
//! Periodic tasks are the producer side's: the `Scheduler` lives in `asynq-scheduler`, so a
//! cron-only process does not compile the worker.
#![doc(test(attr(deny(warnings))))]

pub mod aggregator;
mod config;
pub mod forwarder;
mod handler;
pub mod healthcheck;
pub mod heartbeat;
pub mod janitor;
#[cfg(feature = "json")]
mod json;
pub mod limits;
mod mux;
pub mod observe;
pub mod processor;
pub mod recoverer;
mod server;
mod settler;
pub mod subscriber;
pub mod syncer;
mod workers;

pub use aggregator::{GroupAggregator, aggregator_fn};
pub use asynq_core::Task;
pub use config::{Config, ErrorHandlerFn, HealthCheckFn, IsFailureFn, RetryDelayFn, default_retry_delay};
pub use handler::{Handler, HandlerError, HandlerFn, ResultWriter, TaskContext, handler_fn};
#[cfg(feature = "json")]
pub use json::{JsonHandlerFn, json_handler_fn};
pub use mux::{Middleware, ServeMux};
pub use observe::{AttemptOutcome, AttemptReport, TaskObserver};
pub use server::Server;
