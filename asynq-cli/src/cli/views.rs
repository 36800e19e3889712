//! `asynq dash`, `asynq metrics` and `asynq web`: the long-running views, served by other
//! modules.

use super::*;

/// `asynq dash`
#[derive(Debug, Args)]
pub(crate) struct DashArgs {
    /// Interval between data refreshes, a Go duration from 1s to 1h
    #[arg(long, default_value = "8s")]
    pub(crate) refresh: String,
}

/// `asynq metrics`
#[derive(Debug, Args)]
pub(crate) struct MetricsArgs {
    /// Address to serve `/metrics` on; the loopback default keeps the metrics on this host
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub(crate) listen: std::net::SocketAddr,
}

/// `asynq web`
#[derive(Debug, Args)]
pub(crate) struct WebArgs {
    /// Address to serve the dashboard on; the loopback default keeps it on this host
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: std::net::SocketAddr,
    /// Refuse every change (pause, delete, run, archive, cancel); only look
    #[arg(long)]
    pub(crate) read_only: bool,
    /// Interval between the pages' data refreshes, a Go duration from 1s to 1h
    #[arg(long, default_value = "5s")]
    pub(crate) refresh: String,
    /// Serve a non-loopback --listen without a token (ASYNQ_WEB_TOKEN unset): anyone who can
    /// reach it can delete tasks
    #[arg(long)]
    pub(crate) insecure_no_auth: bool,
    /// Also serve the queue metrics at /metrics, as `asynq metrics` does, behind the same token
    #[arg(long)]
    pub(crate) metrics: bool,
    /// Chart the queue metrics from this Prometheus server on the metrics page
    /// (http://host:port[/prefix]); the dashboard asks it fixed range queries only
    #[arg(long, value_name = "URL")]
    pub(crate) prometheus_addr: Option<String>,
}
