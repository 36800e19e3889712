//! The asynq worker server: takes tasks from a broker and runs handlers on them with
//! at-least-once delivery.
//!
//! A [`Server`] runs one module per role, each with a config, a loop (`spawn`) and a single
//! step (`tick`) that tests call directly:
//! [`processor`] (runs handlers), [`heartbeat`] (publishes state, extends leases),
//! [`recoverer`] (recovers tasks of dead workers), [`forwarder`] (moves due tasks to pending),
//! [`janitor`] (deletes expired completed tasks), [`healthcheck`] (pings the broker) and
//! [`syncer`] (retries failed state writes).
#![doc(test(attr(deny(warnings))))]

mod config;
pub mod forwarder;
mod handler;
pub mod healthcheck;
pub mod heartbeat;
pub mod janitor;
mod mux;
mod periodic;
pub mod processor;
pub mod recoverer;
mod server;
mod settler;
mod signals;
pub mod syncer;
mod workers;

pub use config::{Config, ErrorHandlerFn, HealthCheckFn, IsFailureFn, RetryDelayFn, default_retry_delay};
pub use handler::{Handler, HandlerError, HandlerFn, ResultWriter, TaskContext, handler_fn};
pub use mux::{Middleware, ServeMux};
pub use server::Server;
