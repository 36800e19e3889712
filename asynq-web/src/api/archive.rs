//! What archiving would drop: the archive keeps to its limits (Go asynq's 10 000 tasks and 90
//! days by default), so archiving many tasks may delete archived ones. Before an archive the
//! dashboard asks what it would drop (`GET .../archive-outlook`, read only); after it, the
//! archive's reply says what the trims dropped ([`Trimmed`]).

use super::tasks::MAX_BATCH;
use super::{group_name, path, query, queue_name, state as parse_state};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_core::{ArchiveOutlook, ArchiveReport, TaskSet};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::Uri;
use serde::{Deserialize, Serialize};

/// What archiving would drop, as the API shows it.
#[derive(Debug, Serialize)]
pub(crate) struct OutlookView {
    /// Tasks the archive holds now.
    archived: usize,
    /// Tasks the archive would take.
    adding: usize,
    /// Archived tasks it would drop, for both reasons.
    dropped: usize,
    /// ... past the age limit.
    expired: usize,
    /// ... over the size limit.
    over_size: usize,
    /// The size limit: the archive keeps at most `max_size - 1` tasks.
    max_size: usize,
    /// The age limit in seconds.
    max_age_secs: u64,
}

impl From<&ArchiveOutlook> for OutlookView {
    fn from(o: &ArchiveOutlook) -> Self {
        Self {
            archived: o.archived,
            adding: o.adding,
            dropped: o.dropped(),
            expired: o.expired,
            over_size: o.over_size,
            max_size: o.limits.max_size(),
            max_age_secs: o.limits.max_age().as_secs(),
        }
    }
}

/// What an archive's trims dropped, as the API shows it beside what was archived.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Trimmed {
    /// Archived tasks deleted, for both reasons.
    total: usize,
    /// ... over the size limit.
    by_size: usize,
    /// ... past the age limit.
    by_age: usize,
}

impl Trimmed {
    /// Adds what one archive's trim dropped.
    pub(crate) fn add(&mut self, report: &ArchiveReport) {
        self.by_size += report.trimmed_by_size;
        self.by_age += report.trimmed_by_age;
        self.total = self.by_size + self.by_age;
    }
}

impl From<&ArchiveReport> for Trimmed {
    fn from(report: &ArchiveReport) -> Self {
        let mut trimmed = Self::default();
        trimmed.add(report);
        trimmed
    }
}

/// `GET /api/queues/{queue}/states/{state}/archive-outlook`: what archiving every task of the
/// state would drop.
pub(crate) async fn state_outlook(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<Json<OutlookView>> {
    let (queue, state) = path(params)?;
    queue_name(&queue)?;
    let set = TaskSet::State(parse_state(&state)?);
    Ok(Json((&app.inspector.archive_all_outlook(&queue, &set).await?).into()))
}

/// `GET /api/queues/{queue}/groups/{group}/archive-outlook`: what archiving every task of the
/// group would drop.
pub(crate) async fn group_outlook(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<Json<OutlookView>> {
    let (queue, group) = path(params)?;
    queue_name(&queue)?;
    let set = TaskSet::Group(group_name(&group)?);
    Ok(Json((&app.inspector.archive_all_outlook(&queue, &set).await?).into()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddingQuery {
    /// How many tasks would be archived (a selection: 1 to [`MAX_BATCH`]).
    adding: Option<usize>,
}

/// `GET /api/queues/{queue}/archive-outlook?adding=N`: what archiving `N` selected tasks would
/// drop.
pub(crate) async fn outlook(
    State(app): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<OutlookView>> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    let AddingQuery { adding } = query(&uri)?;
    let adding = adding.unwrap_or(1);
    if !(1..=MAX_BATCH).contains(&adding) {
        return Err(ApiError::bad_request("invalid_adding", format!("adding must be 1 to {MAX_BATCH}")));
    }
    Ok(Json((&app.inspector.archive_outlook(&queue, adding).await?).into()))
}
