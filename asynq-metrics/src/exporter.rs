//! The HTTP exporter: `GET /metrics` in the OpenMetrics text format, as an [`axum::Router`] to
//! mount in an application or served on its own by [`serve`].

use crate::queue::QueueMetrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The content type of a scrape: OpenMetrics text 1.0.0, which Prometheus asks for first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The path the exporter serves.
pub const METRICS_PATH: &str = "/metrics";

/// Encodes a [`Registry`] for each scrape, refreshing [`QueueMetrics`] first when it has them.
///
/// Cheap to clone; clones share the registry. Scrapes are serialized, so each encodes the
/// values its own refresh read.
///
/// ```
/// use asynq_client::Inspector;
/// use asynq_memory::MemoryBroker;
/// use asynq_metrics::{Exporter, QueueMetrics};
/// use prometheus_client::registry::Registry;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue_metrics = QueueMetrics::new(Inspector::new(MemoryBroker::new()));
/// let mut registry = Registry::default();
/// queue_metrics.register(&mut registry);
/// let exporter = Exporter::new(registry).refreshing(queue_metrics);
///
/// // Mount `exporter.router()` in an axum app, or `serve` it on its own listener.
/// let text = exporter.scrape().await.unwrap();
/// assert!(text.contains("asynq_up 1"));
/// # }
/// ```
#[derive(Clone)]
pub struct Exporter {
    registry: Arc<Registry>,
    queue_metrics: Option<QueueMetrics>,
    /// Held for a refresh and the encoding after it.
    scrape: Arc<tokio::sync::Mutex<()>>,
}

/// A scrape could not be encoded: a collector failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EncodeError;

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a metric collector failed to encode its metrics")
    }
}

impl std::error::Error for EncodeError {}

impl Exporter {
    /// An exporter of `registry`.
    pub fn new(registry: Registry) -> Self {
        Self { registry: Arc::new(registry), queue_metrics: None, scrape: Arc::default() }
    }

    /// This exporter, refreshing `queue_metrics` (registered in its registry) before each
    /// scrape. A failed refresh is logged and shows as `asynq_up 0`; the other metrics are
    /// still served.
    pub fn refreshing(mut self, queue_metrics: QueueMetrics) -> Self {
        self.queue_metrics = Some(queue_metrics);
        self
    }

    /// Refreshes the queue metrics, if any, and encodes the registry in the OpenMetrics text
    /// format (ending with `# EOF`).
    pub async fn scrape(&self) -> Result<String, EncodeError> {
        let _scrape = self.scrape.lock().await;
        if let Some(queue_metrics) = &self.queue_metrics
            && let Err(e) = queue_metrics.refresh().await
            // Whoever connects the broker reports that it is not there yet, once.
            && queue_metrics.has_broker()
        {
            tracing::warn!(error = %e, "could not read the queue metrics from the broker");
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).map_err(|_| EncodeError)?;
        Ok(text)
    }

    /// A router serving `GET /metrics` (and `HEAD`): 200 with the scrape, or 500 with a message
    /// when a collector fails. Merge it into an application's router, or serve it with
    /// [`serve`].
    pub fn router(&self) -> Router {
        Router::new().route(METRICS_PATH, get(metrics)).with_state(self.clone())
    }
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("registry", &self.registry)
            .field("queue_metrics", &self.queue_metrics)
            .finish()
    }
}

async fn metrics(State(exporter): State<Exporter>) -> Response {
    match exporter.scrape().await {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "could not encode the metrics");
            (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response()
        }
    }
}

/// Serves `exporter` at `GET /metrics` on `listener` until `shutdown` completes, then lets
/// scrapes under way finish.
///
/// Binding is the caller's: a loopback address (`127.0.0.1:9464`) keeps the metrics on the
/// host; bind a wider address only where the network is trusted, since the queue names and
/// sizes are visible to anyone who can connect.
///
/// Errors: an IO error of the listener.
pub async fn serve(
    listener: TcpListener,
    exporter: Exporter,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, exporter.router()).with_graceful_shutdown(shutdown).await
}

impl QueueMetrics {
    /// An [`Exporter`] serving these metrics alone, refreshed before each scrape.
    pub fn exporter(&self) -> Exporter {
        let mut registry = Registry::default();
        self.register(&mut registry);
        Exporter::new(registry).refreshing(self.clone())
    }
}
