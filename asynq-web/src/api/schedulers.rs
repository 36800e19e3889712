//! Schedulers: the entries of every live scheduler, and what each entry enqueued.

use super::render::preview;
use super::{PageInfo, PageQuery, entry_id, path, query, timestamp};
use crate::AppState;
use crate::error::ApiResult;
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::Uri;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub(crate) struct EntryView {
    id: String,
    spec: String,
    task_type: String,
    payload_preview: String,
    options: Vec<String>,
    next: Option<String>,
    prev: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct EntryList {
    entries: Vec<EntryView>,
}

/// `GET /api/schedulers`: every live scheduler entry.
pub(crate) async fn list(State(app): State<AppState>) -> ApiResult<Json<EntryList>> {
    let entries = app.inspector.scheduler_entries().await?;
    let entries = entries
        .into_iter()
        .map(|e| EntryView {
            payload_preview: preview(&e.task_payload),
            next: e.next.map(timestamp),
            prev: e.prev.map(timestamp),
            id: e.id,
            spec: e.spec,
            task_type: e.task_type,
            options: e.options,
        })
        .collect();
    Ok(Json(EntryList { entries }))
}

#[derive(Debug, Serialize)]
pub(crate) struct EventView {
    task_id: String,
    enqueued_at: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct EventPage {
    events: Vec<EventView>,
    page: usize,
    size: usize,
}

/// `GET /api/schedulers/{entry}/history?page=&size=`: what the entry enqueued, newest first.
pub(crate) async fn history(
    State(app): State<AppState>,
    entry: Result<Path<String>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<EventPage>> {
    let entry = path(entry)?;
    entry_id(&entry)?;
    let PageInfo { page, size } = query::<PageQuery>(&uri)?.validate()?;
    let events = app.inspector.scheduler_history(&entry, PageInfo { page, size }.to_core()).await?;
    let events =
        events.into_iter().map(|e| EventView { task_id: e.task_id, enqueued_at: timestamp(e.enqueued_at) }).collect();
    Ok(Json(EventPage { events, page, size }))
}
