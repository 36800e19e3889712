//! Queues: their sizes and statistics, processed/failed history, pause and unpause, delete.

use super::backend::EvictionRiskView;
use super::{millis, no_content, parse_optional_body, path, query, queue_name, timestamp};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_core::{DailyStats, QueueInfo};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most days of history one request may ask for.
pub(super) const MAX_DAYS: usize = 90;
/// The days of history when the request names none.
pub(super) const DEFAULT_DAYS: usize = 7;

/// A queue's sizes and statistics.
#[derive(Debug, Serialize)]
pub(crate) struct QueueView {
    name: String,
    paused: bool,
    size: usize,
    groups: usize,
    pending: usize,
    active: usize,
    scheduled: usize,
    retry: usize,
    archived: usize,
    completed: usize,
    aggregating: usize,
    /// Workflow tasks waiting for the tasks they depend on, left out of `size` (as Go counts).
    waiting: usize,
    processed: u64,
    failed: u64,
    processed_total: u64,
    failed_total: u64,
    latency_ms: u64,
    memory_usage: u64,
    timestamp: String,
}

impl From<QueueInfo> for QueueView {
    fn from(info: QueueInfo) -> Self {
        Self {
            paused: info.paused,
            size: info.size,
            groups: info.groups,
            pending: info.pending,
            active: info.active,
            scheduled: info.scheduled,
            retry: info.retry,
            archived: info.archived,
            completed: info.completed,
            aggregating: info.aggregating,
            waiting: info.waiting,
            processed: info.processed,
            failed: info.failed,
            processed_total: info.processed_total,
            failed_total: info.failed_total,
            latency_ms: millis(info.latency),
            memory_usage: info.memory_usage,
            timestamp: timestamp(info.timestamp),
            name: info.queue.into_string(),
        }
    }
}

/// A sharded queue: its logical name with its shards' counts summed (and those of the plain
/// queue of its name), and its shards, each also listed among the queues: the newest
/// generation's, and after a reshard the previous generation's while they drain.
#[derive(Debug, Serialize)]
pub(crate) struct ShardedView {
    #[serde(flatten)]
    queue: QueueView,
    shards: Vec<String>,
    draining: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct QueueList {
    /// The queues, but for the sharded queues' logical names (listed under `sharded`).
    queues: Vec<QueueView>,
    /// The sharded queues declared, by logical name (the overview shows each over its shards).
    sharded: Vec<ShardedView>,
    /// The eviction policies in force that can drop tasks (empty when the backend keeps every
    /// task); `null` when the backend would not say, which the overview does not take for safe.
    eviction_risks: Option<Vec<EvictionRiskView>>,
}

/// `GET /api/queues`: every queue with its sizes and today's counts, the sharded queues with
/// their shards and summed counts (their logical names in place of the plain queues of those
/// names, whose counts they include), and whether the backend's eviction policy can drop tasks (the
/// overview's warning banner).
pub(crate) async fn list(State(state): State<AppState>) -> ApiResult<Json<QueueList>> {
    let inspector = &state.inspector;
    let (names, backend, declared) =
        futures::future::join3(inspector.queues(), inspector.backend_info(), inspector.sharded_queues()).await;
    let (names, declared) = (names?, declared?);
    let eviction_risks = match backend {
        Ok(info) => Some(info.eviction_risks.into_iter().map(Into::into).collect()),
        // The queues are worth showing even when the backend will not describe itself (an
        // ACL refusing INFO); the Redis page reports the error.
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the backend's eviction policy");
            None
        }
    };
    // A logical name's info is its sharded queue's sum, listed under `sharded`.
    let names: Vec<_> = names.into_iter().filter(|name| declared.iter().all(|d| d.logical() != name)).collect();
    let infos = futures::future::join_all(names.iter().map(|name| inspector.queue_info(name))).await;
    let mut queues = Vec::with_capacity(infos.len());
    for info in infos {
        match info {
            Ok(info) => queues.push(info.into()),
            // Removed since it was listed.
            Err(asynq_core::Error::QueueNotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let sums = futures::future::join_all(declared.iter().map(|d| inspector.queue_info(d.logical()))).await;
    let mut sharded = Vec::with_capacity(sums.len());
    for (declared, sum) in declared.iter().zip(sums) {
        let shards = declared.shards().iter().map(ToString::to_string).collect();
        let draining = declared.draining().map(|d| d.shards().iter().map(ToString::to_string).collect());
        sharded.push(ShardedView { queue: sum?.into(), shards, draining: draining.unwrap_or_default() });
    }
    Ok(Json(QueueList { queues, sharded, eviction_risks }))
}

#[derive(Debug, Serialize)]
pub(crate) struct QueueDetail {
    queue: QueueView,
    /// Where the queue's keys live on a Redis Cluster.
    location: Option<super::backend::LocationView>,
}

/// `GET /api/queues/{queue}`: one queue, and where it lives on a Cluster.
pub(crate) async fn get_one(
    State(state): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<QueueDetail>> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    let info = state.inspector.queue_info(&queue).await?;
    let location = state.inspector.queue_location(&queue).await?.map(Into::into);
    Ok(Json(QueueDetail { queue: info.into(), location }))
}

/// The last hour of a queue, as the dashboard sampled it.
#[derive(Debug, Serialize)]
pub(crate) struct Series {
    /// Seconds between samples.
    interval_seconds: u64,
    samples: Vec<SeriesPoint>,
}

/// One sample: sizes by state, the rate of tasks processed and failed since the previous one,
/// and the latency.
#[derive(Debug, Serialize)]
pub(crate) struct SeriesPoint {
    at: String,
    active: u64,
    pending: u64,
    scheduled: u64,
    retry: u64,
    archived: u64,
    completed: u64,
    aggregating: u64,
    /// Workflow tasks waiting for the tasks they depend on.
    waiting: u64,
    /// Tasks processed (succeeded or failed) per second since the previous sample; `null` for the
    /// first sample, and after the counters went back (a queue removed and made again).
    processed_per_second: Option<f64>,
    /// Tasks failed per second since the previous sample; `null` as `processed_per_second` is.
    failed_per_second: Option<f64>,
    latency_ms: u64,
}

/// `GET /api/queues/{queue}/series`: the last hour of the queue, sampled every 10 s since the
/// dashboard started; empty until the first sample.
pub(crate) async fn series(
    State(state): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Series>> {
    let queue = path(queue)?;
    let name = queue_name(&queue)?;
    let samples = state.history.of(&queue);
    // A queue with samples is known; only one without is looked up (not its full statistics,
    // which the queue page reads beside this anyway).
    if samples.is_empty() && !state.inspector.queues().await?.contains(&name) {
        return Err(asynq_core::Error::QueueNotFound { queue: name }.into());
    }
    let rate =
        |now: u64, before: u64, seconds: f64| (now >= before && seconds > 0.0).then(|| (now - before) as f64 / seconds);
    let points = samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let previous = i.checked_sub(1).map(|p| &samples[p]);
            let seconds = previous.map_or(0.0, |p| s.at.duration_since(p.at).unwrap_or_default().as_secs_f64());
            let [active, pending, scheduled, retry, archived, completed, aggregating, waiting] = s.sizes;
            SeriesPoint {
                at: timestamp(s.at),
                active,
                pending,
                scheduled,
                retry,
                archived,
                completed,
                aggregating,
                waiting,
                processed_per_second: previous.and_then(|p| rate(s.processed_total, p.processed_total, seconds)),
                failed_per_second: previous.and_then(|p| rate(s.failed_total, p.failed_total, seconds)),
                latency_ms: u64::try_from(s.latency.as_millis()).unwrap_or(u64::MAX),
            }
        })
        .collect();
    Ok(Json(Series { interval_seconds: crate::history::SAMPLE_INTERVAL.as_secs(), samples: points }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DaysQuery {
    days: Option<usize>,
}

impl DaysQuery {
    fn validate(&self) -> ApiResult<usize> {
        match self.days.unwrap_or(DEFAULT_DAYS) {
            days @ 1..=MAX_DAYS => Ok(days),
            _ => Err(ApiError::bad_request("invalid_days", format!("days must be between 1 and {MAX_DAYS}"))),
        }
    }
}

/// Processed and failed counts of one day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DayView {
    date: String,
    processed: u64,
    failed: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct History {
    /// Oldest first.
    days: Vec<DayView>,
}

fn oldest_first(stats: Vec<DailyStats>) -> Vec<DayView> {
    let mut days: Vec<DayView> =
        stats.into_iter().map(|s| DayView { date: s.date, processed: s.processed, failed: s.failed }).collect();
    days.sort_by(|a, b| a.date.cmp(&b.date));
    days
}

/// `GET /api/queues/{queue}/history?days=N`: one queue's daily counts, oldest first.
pub(crate) async fn history(
    State(state): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<History>> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    let days = query::<DaysQuery>(&uri)?.validate()?;
    Ok(Json(History { days: oldest_first(state.inspector.history(&queue, days).await?) }))
}

/// `GET /api/history?days=N`: the daily counts of every queue added up, oldest first.
pub(crate) async fn history_all(State(state): State<AppState>, uri: Uri) -> ApiResult<Json<History>> {
    let days = query::<DaysQuery>(&uri)?.validate()?;
    let names = state.inspector.queues().await?;
    let all = futures::future::join_all(names.iter().map(|name| state.inspector.history(name, days))).await;
    let mut sums: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for stats in all {
        let stats = match stats {
            Ok(stats) => stats,
            Err(asynq_core::Error::QueueNotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        for day in stats {
            let sum = sums.entry(day.date).or_default();
            sum.0 += day.processed;
            sum.1 += day.failed;
        }
    }
    let days = sums.into_iter().map(|(date, (processed, failed))| DayView { date, processed, failed }).collect();
    Ok(Json(History { days }))
}

/// `POST /api/queues/{queue}/pause`.
pub(crate) async fn pause(
    State(state): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
) -> ApiResult<StatusCode> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    state.inspector.pause_queue(&queue).await?;
    Ok(no_content())
}

/// `POST /api/queues/{queue}/unpause`.
pub(crate) async fn unpause(
    State(state): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
) -> ApiResult<StatusCode> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    state.inspector.unpause_queue(&queue).await?;
    Ok(no_content())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteQueue {
    #[serde(default)]
    force: bool,
}

/// `POST /api/queues/{queue}/delete` with optional `{"force": true}`: removes the queue; a
/// queue holding tasks is refused (409 `queue_not_empty`) unless forced.
pub(crate) async fn delete(
    State(state): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> ApiResult<Response> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    let DeleteQueue { force } = parse_optional_body(&body)?;
    if !force {
        state.inspector.delete_queue(&queue, false).await?;
        return Ok(no_content().into_response());
    }
    // A forced removal deletes the queue's tasks first, which may take a while: a job.
    let description = format!("remove queue {queue:?} and its tasks");
    let inspector = state.inspector.clone();
    let work = move |sink: super::jobs::Sink| -> super::jobs::Work {
        Box::pin(async move {
            inspector.delete_queue_with_progress(&queue, true, move |p| sink(p)).await.map(|()| Default::default())
        })
    };
    super::jobs::run(&state, description, work, |_| no_content().into_response()).await
}
