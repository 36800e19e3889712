//! Prometheus metrics for asynq, in the OpenMetrics text format.
//!
//! - [`QueueMetrics`]: Go asynq's queue metrics (`x/metrics`), same names, types, help texts
//!   and labels, read through an [`asynq_client::Inspector`] on each scrape. Needs
//!   only a broker, so an operator can export them without running a worker; with them, the
//!   live servers and their workers as the servers record them in the broker.
//! - [`WorkerMetrics`] (feature `server`): what one server's workers do (handler durations,
//!   tasks in flight, outcomes, panics, lease expiries), as an
//!   [`asynq_server::TaskObserver`].
//! - [`Exporter`], [`serve`]: `GET /metrics`, as an [`axum::Router`] to mount in an
//!   application or served on its own listener.
//! - [`otel`] (feature `opentelemetry`): trace context in task headers, from producer to
//!   worker.
//!
//! ```no_run
//! use asynq_client::Inspector;
//! use asynq_memory::MemoryBroker;
//!
//! # #[tokio::main] async fn main() -> std::io::Result<()> {
//! let inspector = Inspector::new(MemoryBroker::new());
//! let addr = "127.0.0.1:9464".parse().unwrap();
//! asynq_metrics::serve_queue_metrics(inspector, addr, async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]

mod exporter;
#[cfg(feature = "opentelemetry")]
pub mod otel;
mod queue;
mod server;
mod sharded;
#[cfg(feature = "server")]
mod worker;

pub use exporter::{CONTENT_TYPE, EncodeError, Exporter, METRICS_PATH, serve};
pub use prometheus_client;
pub use queue::{DEFAULT_REFRESH_TIMEOUT, QueueMetrics};
#[cfg(feature = "server")]
pub use worker::{DEFAULT_DURATION_BUCKETS, WorkerMetrics};

use asynq_client::Inspector;
use std::future::Future;
use std::net::SocketAddr;

/// Serves the queue metrics of `inspector`'s broker at `http://<addr>/metrics` until
/// `shutdown` completes: the entry point of `asynq metrics`.
///
/// The CLI binds `127.0.0.1:9464` by default (the port of OpenTelemetry's Prometheus
/// exporter), a loopback address, so the metrics stay on the host unless asked otherwise.
///
/// Errors: the address cannot be bound, or the listener fails.
pub async fn serve_queue_metrics(
    inspector: Inspector,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(address = %listener.local_addr()?, "serving queue metrics at /metrics");
    serve(listener, queue_exporter(inspector), shutdown).await
}

/// An exporter of the queue metrics of `inspector`'s broker, read afresh on every scrape: what
/// `asynq metrics` serves, and `asynq web --metrics` beside the dashboard
/// ([`Exporter::router`]).
pub fn queue_exporter(inspector: Inspector) -> Exporter {
    QueueMetrics::new(inspector).exporter()
}
