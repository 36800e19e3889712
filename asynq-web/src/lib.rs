//! The asynq web dashboard: queues, tasks, servers, schedulers and the backend in a browser,
//! over an [`asynq_client::Inspector`], so it works on every broker (memory, Redis, Redis
//! Cluster) and on queues written by Go asynq.
//!
//! [`router`] returns an [`axum::Router`] serving a single-page app (plain HTML, JS and CSS
//! embedded in the binary) and the JSON API it polls, described by OpenAPI 3 at
//! `/api/openapi.json`; [`serve`] runs it on a listener until a shutdown future completes.
//!
//! Safe defaults for a tool that can delete tasks:
//! - With [`Auth`], every API call needs `Authorization: Bearer <token>` or the session cookie
//!   the login form sets (HttpOnly, SameSite=Strict); tokens are compared in constant time and
//!   never echoed.
//! - Mutations are POST only and need the `X-CSRF-Token` header to match the `asynq_csrf`
//!   cookie `GET /api/session` sets (double submit), unless the caller authenticates with a
//!   bearer token; [`WebConfig::read_only`] refuses them all.
//! - Without authentication only loopback and IP-literal `Host` headers are served, which
//!   defeats DNS rebinding against a dashboard on `127.0.0.1`.
//! - Every response carries a strict Content-Security-Policy (no inline script or style).
//!
//! ```no_run
//! use asynq_client::Inspector;
//! use asynq_memory::MemoryBroker;
//! use asynq_web::{Auth, WebConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let config = WebConfig::new(Inspector::new(MemoryBroker::new()))
//!     .with_auth(Auth::bearer("a-long-random-token").expect("a valid token"));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! asynq_web::serve(listener, config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]

mod api;
mod assets;
mod auth;
mod error;
mod history;
mod openapi;
mod prometheus;

pub use auth::{Auth, InvalidToken};
pub use error::{ApiError, ApiResult};
pub use prometheus::{InvalidPrometheusAddr, PrometheusAddr};

use asynq_client::Inspector;
use axum::Router;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The default interval at which the UI refreshes its data.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(5);

/// The default of [`WebConfig::job_reply_wait`].
pub const DEFAULT_JOB_REPLY_WAIT: Duration = Duration::from_secs(2);

/// What the dashboard serves and how it guards it.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// The inspector every page reads through and every action goes through.
    pub inspector: Inspector,
    /// Refuse every mutation (403 `read_only`); the UI hides its action buttons.
    pub read_only: bool,
    /// The bearer token required to use the dashboard; `None` serves it to anyone who can
    /// reach it (keep it on loopback then).
    pub auth: Option<Auth>,
    /// How often the UI polls the API for fresh data.
    pub refresh: Duration,
    /// How long a request that starts a bulk action (every task of a state or group, or a
    /// forced queue removal) waits for it before answering 202 with a job whose progress
    /// `GET /api/jobs/{id}` reports; the action runs on either way.
    pub job_reply_wait: Duration,
    /// More routes served beside the dashboard, behind its authentication (see
    /// [`WebConfig::with_metrics`]).
    metrics: Option<Router>,
    /// The Prometheus server the metrics page charts the queue metrics from (see
    /// [`WebConfig::with_prometheus`]).
    pub prometheus: Option<PrometheusAddr>,
}

impl WebConfig {
    /// A dashboard over `inspector`: writable, without authentication, refreshing every
    /// [`DEFAULT_REFRESH`].
    pub fn new(inspector: Inspector) -> Self {
        Self {
            inspector,
            read_only: false,
            auth: None,
            refresh: DEFAULT_REFRESH,
            job_reply_wait: DEFAULT_JOB_REPLY_WAIT,
            metrics: None,
            prometheus: None,
        }
    }

    /// Requires `auth`'s token.
    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Sets [`WebConfig::read_only`].
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Sets [`WebConfig::refresh`]; intervals under a second are raised to one.
    pub fn refresh(mut self, refresh: Duration) -> Self {
        self.refresh = refresh;
        self
    }

    /// Sets [`WebConfig::job_reply_wait`].
    pub fn job_reply_wait(mut self, wait: Duration) -> Self {
        self.job_reply_wait = wait;
        self
    }

    /// Also serves `metrics`, a router answering `GET /metrics` (such as
    /// `asynq_metrics::Exporter::router`), on the dashboard's address and behind its
    /// authentication: with a token set, a scraper sends it as a bearer token (Prometheus's
    /// `authorization` setting). Its paths must not be the dashboard's own (`/`, `/assets/`,
    /// `/api/`).
    pub fn with_metrics(mut self, metrics: Router) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Charts the queue metrics from the Prometheus server at `addr` on the metrics page
    /// (asynqmon's `--prometheus-addr`): the dashboard asks it a fixed set of range queries
    /// (queue sizes, processed and failed rates, latency, per queue) and never passes PromQL
    /// from the page on.
    pub fn with_prometheus(mut self, addr: PrometheusAddr) -> Self {
        self.prometheus = Some(addr);
        self
    }
}

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct AppState(Arc<Shared>);

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) inspector: Inspector,
    pub(crate) read_only: bool,
    pub(crate) auth: Option<Auth>,
    pub(crate) refresh: Duration,
    pub(crate) sessions: auth::Sessions,
    /// The last hour of every queue, sampled from the first request on.
    pub(crate) history: history::History,
    /// Bulk actions running or recently finished.
    pub(crate) jobs: api::jobs::Jobs,
    pub(crate) job_reply_wait: Duration,
    /// Where the Prometheus charts come from, if anywhere.
    pub(crate) prometheus: Option<PrometheusAddr>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// One route of the JSON API: its method and its path pattern (`{name}` for a parameter), as
/// the router matches it and `/api/openapi.json` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApiRoute {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The path pattern, e.g. `/api/queues/{queue}`.
    pub path: &'static str,
}

/// Every route of the JSON API the router serves.
pub fn api_routes() -> Vec<ApiRoute> {
    api::routes().table
}

/// The dashboard: the single-page app at `/`, its assets under `/assets/`, and the JSON API
/// under `/api/`.
pub fn router(config: WebConfig) -> Router {
    let state = AppState(Arc::new(Shared {
        inspector: config.inspector,
        read_only: config.read_only,
        auth: config.auth,
        refresh: config.refresh.max(Duration::from_secs(1)),
        sessions: auth::Sessions::default(),
        history: history::History::default(),
        jobs: api::jobs::Jobs::default(),
        job_reply_wait: config.job_reply_wait,
        prometheus: config.prometheus,
    }));
    let guard = axum::middleware::from_fn_with_state(state.clone(), auth::guard);
    let api = api::routes().router.route_layer(guard.clone());
    let dashboard = Router::new()
        .merge(assets::routes())
        .merge(api)
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed);
    let app = shielded(dashboard, &state).with_state(state.clone());
    match config.metrics {
        None => app,
        Some(metrics) => app.merge(shielded(metrics.route_layer(guard), &state)),
    }
}

/// `router` with the checks every response gets: the `Host` check and the security headers;
/// the first request also starts the history sampler (see [`history`]), inside the runtime
/// that serves it.
fn shielded<S: Clone + Send + Sync + 'static>(router: Router<S>, state: &AppState) -> Router<S> {
    router
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::host_check))
        .layer(axum::middleware::from_fn_with_state(state.clone(), start_history))
        .layer(axum::middleware::from_fn(assets::security_headers))
}

/// Starts the history sampler, once, then passes the request on.
async fn start_history(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    history::History::start_sampling(&state.0);
    next.run(request).await
}

/// Serves the dashboard on `listener` until `shutdown` completes, then lets requests in
/// flight finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: WebConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(config)).with_graceful_shutdown(shutdown).await
}
