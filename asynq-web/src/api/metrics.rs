//! The metrics page's data: per task type metrics from the record servers keep
//! (`GET /api/metrics/types`), and, with a Prometheus address, the fixed Prometheus charts
//! (`GET /api/metrics/prometheus`).

use super::{query, timestamp};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::prometheus::{PANELS, PromRange, query_range};
use asynq_client::{MetricsResolution, OTHER_TYPES, TypeCounts, TypeSeries};
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TypesQuery {
    /// `1h` (minutes) or `24h` (hours, the default).
    window: Option<String>,
}

/// The windows of `GET /api/metrics/types`: name, resolution, buckets.
const WINDOWS: [(&str, MetricsResolution, usize); 2] =
    [("1h", MetricsResolution::Minute, 60), ("24h", MetricsResolution::Hour, 24)];

/// The per task type metrics over a window.
#[derive(Debug, Serialize)]
pub(crate) struct TypeMetrics {
    window: &'static str,
    resolution: &'static str,
    bucket_seconds: u64,
    /// When each bucket starts, oldest first.
    buckets: Vec<String>,
    types: Vec<TypeView>,
}

/// One task type of one queue.
#[derive(Debug, Serialize)]
pub(crate) struct TypeView {
    queue: String,
    /// The task type; `null` for the types a full bucket had no room for.
    #[serde(rename = "type")]
    type_name: Option<String>,
    runs: u64,
    failed: u64,
    mean_ms: Option<f64>,
    max_ms: u64,
    /// Per bucket.
    series: PointsView,
}

#[derive(Debug, Serialize)]
pub(crate) struct PointsView {
    runs: Vec<u64>,
    failed: Vec<u64>,
    mean_ms: Vec<Option<f64>>,
}

fn round(ms: Option<f64>) -> Option<f64> {
    ms.map(|ms| (ms * 10.0).round() / 10.0)
}

impl From<TypeSeries> for TypeView {
    fn from(series: TypeSeries) -> Self {
        let TypeCounts { runs, failed, max_ms, .. } = series.total;
        Self {
            queue: series.queue.into_string(),
            type_name: (series.type_name != OTHER_TYPES).then_some(series.type_name),
            runs,
            failed,
            mean_ms: round(series.total.mean_ms()),
            max_ms,
            series: PointsView {
                runs: series.points.iter().map(|p| p.runs).collect(),
                failed: series.points.iter().map(|p| p.failed).collect(),
                mean_ms: series.points.iter().map(|p| round(p.mean_ms())).collect(),
            },
        }
    }
}

/// `GET /api/metrics/types`: per queue and task type, how many attempts ran and failed and how
/// long they took over the last hour (per minute) or day (per hour), as our servers recorded
/// them.
pub(crate) async fn types(State(state): State<AppState>, uri: Uri) -> ApiResult<Json<TypeMetrics>> {
    let TypesQuery { window } = query(&uri)?;
    let window = window.as_deref().unwrap_or("24h");
    let (window, resolution, buckets) = WINDOWS
        .into_iter()
        .find(|(name, _, _)| *name == window)
        .ok_or_else(|| ApiError::bad_request("invalid_window", "window must be 1h or 24h"))?;
    #[allow(clippy::disallowed_methods)]
    let now = SystemTime::now(); // allow: wall-clock
    let report = state.inspector.type_metrics(resolution, buckets, now).await?;
    Ok(Json(TypeMetrics {
        window,
        resolution: resolution.as_str(),
        bucket_seconds: resolution.seconds(),
        buckets: report.buckets.into_iter().map(timestamp).collect(),
        types: report.types.into_iter().map(TypeView::from).collect(),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrometheusQuery {
    /// `1h` (the default), `6h`, `24h` or `7d`.
    range: Option<String>,
}

/// The Prometheus charts over a range.
#[derive(Debug, Serialize)]
pub(crate) struct PrometheusCharts {
    range: &'static str,
    step_seconds: u64,
    start: String,
    end: String,
    panels: Vec<PanelView>,
}

#[derive(Debug, Serialize)]
pub(crate) struct PanelView {
    id: &'static str,
    title: &'static str,
    unit: &'static str,
    query: String,
    series: Vec<SeriesView>,
}

#[derive(Debug, Serialize)]
pub(crate) struct SeriesView {
    queue: String,
    /// `[unix seconds, value]`; the value is `null` where Prometheus has none that is finite.
    points: Vec<(f64, Option<f64>)>,
}

/// `GET /api/metrics/prometheus`: the fixed charts of the queue metrics over `range`, asked of
/// the Prometheus server the dashboard was given; 404 `prometheus_not_configured` without one,
/// 502 `prometheus_unavailable` when it does not answer.
pub(crate) async fn prometheus(State(state): State<AppState>, uri: Uri) -> ApiResult<Json<PrometheusCharts>> {
    let PrometheusQuery { range } = query(&uri)?;
    let range = PromRange::parse(range.as_deref().unwrap_or("1h"))
        .ok_or_else(|| ApiError::bad_request("invalid_range", "range must be 1h, 6h, 24h or 7d"))?;
    let Some(addr) = state.prometheus.as_ref() else {
        return Err(ApiError::not_found(
            "prometheus_not_configured",
            "no Prometheus server is configured (asynq web --prometheus-addr)",
        ));
    };
    #[allow(clippy::disallowed_methods)]
    let now = SystemTime::now(); // allow: wall-clock
    let end = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let end = end - end % range.step();
    let start = end.saturating_sub(range.seconds());
    let queries: Vec<String> = PANELS.iter().map(|panel| panel.query(range)).collect();
    let answers =
        futures::future::join_all(queries.iter().map(|query| query_range(addr, query, start, end, range.step()))).await;
    let mut panels = Vec::with_capacity(PANELS.len());
    for (panel, answer) in PANELS.iter().zip(answers) {
        let series = answer.map_err(|failure| {
            tracing::warn!(prometheus = %addr, query = panel.query(range), error = failure.0, "Prometheus gave no answer");
            ApiError::new(StatusCode::BAD_GATEWAY, "prometheus_unavailable", "Prometheus did not answer the query")
        })?;
        let mut series: Vec<SeriesView> = series
            .into_iter()
            .map(|s| SeriesView { queue: s.labels.get("queue").cloned().unwrap_or_default(), points: s.points })
            .collect();
        series.sort_by(|a, b| a.queue.cmp(&b.queue));
        panels.push(PanelView {
            id: panel.id,
            title: panel.title,
            unit: panel.unit,
            query: panel.query(range),
            series,
        });
    }
    Ok(Json(PrometheusCharts {
        range: range.as_str(),
        step_seconds: range.step(),
        start: timestamp(UNIX_EPOCH + std::time::Duration::from_secs(start)),
        end: timestamp(UNIX_EPOCH + std::time::Duration::from_secs(end)),
        panels,
    }))
}
