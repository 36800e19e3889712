//! A queue's task event log, read from a position and, with `wait_ms`, waited on: what the queue
//! page follows to refresh as soon as something happens, where the queue keeps a log.

use super::{path, query, queue_name, timestamp};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_core::events::{EventPosition, QueueEvent};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::Uri;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The most events one read returns.
pub(crate) const MAX_EVENTS: usize = 100;
/// The longest a read waits for an event.
pub(crate) const MAX_WAIT_MS: u64 = 10_000;
/// How often a waiting read looks at the log again.
const WAIT_STEP: Duration = Duration::from_millis(200);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsQuery {
    /// `oldest`, `latest` (the default) or the ID of the event read last.
    after: Option<String>,
    limit: Option<usize>,
    wait_ms: Option<u64>,
}

/// One event.
#[derive(Debug, Serialize)]
pub(crate) struct EventView {
    id: String,
    at: String,
    kind: &'static str,
    task_id: String,
    task_type: String,
    error: Option<String>,
    progress: Option<f64>,
    progress_message: Option<String>,
    name: Option<String>,
}

impl From<QueueEvent> for EventView {
    fn from(event: QueueEvent) -> Self {
        Self {
            id: event.id.to_string(),
            at: timestamp(event.id.at()),
            kind: event.kind.as_str(),
            task_id: event.task_id,
            task_type: event.task_type,
            error: event.error,
            progress: event.progress.as_ref().map(|p| p.fraction()),
            progress_message: event.progress.map(|p| p.message().to_owned()),
            name: event.name,
        }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct QueueEvents {
    /// About how many events the queue's log keeps; `null` when it keeps none.
    events_cap: Option<u32>,
    events: Vec<EventView>,
    /// Where the next read starts (its `after`).
    next: String,
    /// Whether events after the position were trimmed before they were read.
    missed: bool,
}

/// `GET /api/queues/{queue}/events`: up to `limit` events after `after`; with `wait_ms`, waits
/// up to that long for one when there is none yet (only while the queue keeps a log).
pub(crate) async fn read(
    State(state): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<QueueEvents>> {
    let queue = path(queue)?;
    let name = queue_name(&queue)?;
    let EventsQuery { after, limit, wait_ms } = query(&uri)?;
    let limit = limit.unwrap_or(MAX_EVENTS);
    if !(1..=MAX_EVENTS).contains(&limit) {
        return Err(ApiError::bad_request("invalid_limit", format!("limit must be 1 to {MAX_EVENTS}")));
    }
    let wait_ms = wait_ms.unwrap_or(0);
    if wait_ms > MAX_WAIT_MS {
        return Err(ApiError::bad_request("invalid_wait", format!("wait_ms must be 0 to {MAX_WAIT_MS}")));
    }
    let from = match after {
        None => EventPosition::Latest,
        Some(after) => {
            after.parse().map_err(|e: asynq_core::Error| ApiError::bad_request("invalid_after", e.to_string()))?
        }
    };
    let events_cap =
        state.inspector.event_caps().await?.into_iter().find(|(q, _)| *q == name).map(|(_, cap)| cap.get());
    let mut page = state.inspector.read_events(&queue, from, limit).await?;
    let mut waited = Duration::ZERO;
    while events_cap.is_some() && page.events.is_empty() && waited < Duration::from_millis(wait_ms) {
        tokio::time::sleep(WAIT_STEP).await;
        waited += WAIT_STEP;
        page = state.inspector.read_events(&queue, page.next, limit).await?;
    }
    Ok(Json(QueueEvents {
        events_cap,
        events: page.events.into_iter().map(EventView::from).collect(),
        next: page.next.to_string(),
        missed: page.missed,
    }))
}
