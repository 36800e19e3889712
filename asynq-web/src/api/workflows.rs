//! Workflows: the ones kept, newest first; one with each task's state and the tasks it waits
//! for (every task at once for a workflow small enough to draw, a page of them for the table);
//! cancelling one.

use super::render::preview;
use super::tasks::ProgressSummary;
use super::{PageInfo, PageQuery, check_name, path, query, timestamp};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_client::{WorkflowReport, WorkflowState, WorkflowTask};
use asynq_core::workflow::ParentOutcome;
use asynq_core::{TaskState, WorkflowId};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::Uri;
use futures::StreamExt;
use serde::Serialize;
use std::collections::BTreeMap;

/// The most tasks of a workflow whose graph the page draws: every task is sent for those, and
/// only a page of them for larger ones.
pub(super) const MAX_GRAPH_TASKS: usize = 300;
/// The most tasks of a listed workflow whose state the listing works out (it reads each task).
pub(super) const MAX_LISTED_STATE_TASKS: usize = 100;
/// How many listed workflows have their state worked out at once.
const STATES_AT_ONCE: usize = 4;
/// The state of a task that is no longer stored and that the broker saw succeed for good (it
/// succeeded without retention).
const SUCCEEDED: &str = "succeeded";
/// The state of a task that is no longer stored and that the broker saw fail for good (it was
/// archived, then deleted or trimmed from the archive).
const FAILED: &str = "failed";
/// The state of a task that is no longer stored and whose outcome was never recorded: a Go
/// server ran it (Go records no outcome of a task nothing waits for), or it was deleted, or it
/// settled longer ago than outcomes are kept. The page shows it as settled, outcome not recorded.
const UNRECORDED: &str = "unrecorded";

/// `task`'s state for the page: its task state, or for a task that is gone `succeeded`,
/// `failed` or `unrecorded`.
fn state_of(task: &WorkflowTask) -> &'static str {
    match (&task.info, &task.settled) {
        (Some(info), _) => info.state.as_str(),
        (None, ParentOutcome::Succeeded { .. }) => SUCCEEDED,
        (None, ParentOutcome::Failed { .. }) => FAILED,
        (None, _) => UNRECORDED,
    }
}

/// A workflow ID from the path: a [`WorkflowId`], bounded in length.
fn workflow_id(id: &str) -> ApiResult<WorkflowId> {
    check_name("workflow ID", "invalid_workflow_id", id)?;
    WorkflowId::new(id).map_err(|e| ApiError::bad_request("invalid_workflow_id", e.to_string()))
}

/// A workflow as the list shows it.
#[derive(Debug, Serialize)]
pub(crate) struct WorkflowSummaryView {
    id: String,
    created_at: String,
    /// How many tasks it has.
    tasks: usize,
    /// `running`, `failed`, `succeeded` or `cancelled`; `null` for a workflow of more than
    /// [`MAX_LISTED_STATE_TASKS`] tasks (its own page tells).
    state: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(crate) struct WorkflowList {
    workflows: Vec<WorkflowSummaryView>,
    page: usize,
    size: usize,
    /// How many workflows are kept now.
    total: usize,
    has_next: bool,
}

/// `GET /api/workflows?page=&size=`: one page of the workflows kept, newest first.
pub(crate) async fn list(State(app): State<AppState>, uri: Uri) -> ApiResult<Json<WorkflowList>> {
    let page = query::<PageQuery>(&uri)?.validate()?;
    let listed = app.inspector.workflows(page.to_core()).await?;
    let first_of_next = asynq_core::broker::Page { size: 1, number: page.page * page.size };
    let has_next = !app.inspector.workflows(first_of_next).await?.is_empty();
    let total = app.inspector.workflow_count().await?;
    // The workflows small enough to have their state worked out here.
    // A cancelled one's state needs no read.
    let to_read: Vec<Option<WorkflowId>> = listed
        .iter()
        .map(|summary| (!summary.cancelled && summary.tasks <= MAX_LISTED_STATE_TASKS).then(|| summary.id.clone()))
        .collect();
    let inspector = &app.inspector;
    let states: Vec<ApiResult<Option<&'static str>>> = futures::stream::iter(to_read)
        .map(|id| async move {
            let Some(id) = id else { return Ok(None) };
            match inspector.workflow(id.as_str()).await {
                Ok(report) => Ok(Some(report.state().as_str())),
                // Forgotten since it was listed.
                Err(asynq_core::Error::WorkflowNotFound { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
        .buffered(STATES_AT_ONCE)
        .collect()
        .await;
    let workflows = listed
        .into_iter()
        .zip(states)
        .map(|(summary, state)| {
            Ok(WorkflowSummaryView {
                id: summary.id.into_string(),
                created_at: timestamp(summary.created_at),
                tasks: summary.tasks,
                state: if summary.cancelled { Some(WorkflowState::Cancelled.as_str()) } else { state? },
            })
        })
        .collect::<ApiResult<_>>()?;
    Ok(Json(WorkflowList { workflows, page: page.page, size: page.size, total, has_next }))
}

/// One task of a workflow.
#[derive(Debug, Serialize)]
pub(crate) struct WorkflowTaskView {
    /// Its position in the workflow's task list, which puts parents first.
    index: usize,
    queue: String,
    id: String,
    /// Its name in its DAG; `null` for a task of no DAG.
    name: Option<String>,
    /// Its task type; `null` for a task that is gone from a record that kept no types.
    #[serde(rename = "type")]
    type_name: Option<String>,
    /// Its task state; for a task that is gone, `succeeded` or `failed` as the broker recorded
    /// its outcome, or `unrecorded` (a Go server ran it, or it was deleted).
    state: &'static str,
    /// The positions of the tasks it waits for, in the order its handler sees their results.
    parents: Vec<usize>,
    last_error: Option<String>,
    /// The size of the result its handler wrote, if any.
    result_size: Option<usize>,
    result_preview: Option<String>,
    /// The handler's last progress report, while the task is active.
    progress: Option<ProgressSummary>,
}

impl WorkflowTaskView {
    fn of(index: usize, task: &WorkflowTask) -> Self {
        let info = task.info.as_ref();
        // A task that is gone has what its recorded outcome kept: an error or a result.
        let (recorded_error, recorded_result) = match (&task.info, &task.settled) {
            (None, ParentOutcome::Failed { error }) => (Some(error.clone()), None),
            (None, ParentOutcome::Succeeded { result }) => (None, result.as_deref()),
            _ => (None, None),
        };
        let result = info.and_then(|info| info.result.as_deref()).or(recorded_result);
        Self {
            index,
            queue: task.task.queue.to_string(),
            id: task.task.id.to_string(),
            name: task.name.clone(),
            type_name: task.type_name.clone(),
            state: state_of(task),
            parents: task.parents.clone(),
            last_error: info.and_then(|info| info.last_error.clone()).or(recorded_error),
            result_size: result.map(<[u8]>::len),
            result_preview: result.map(preview),
            progress: info
                .filter(|info| info.state == TaskState::Active)
                .and_then(|info| info.progress.as_ref())
                .map(ProgressSummary::from),
        }
    }
}

/// A workflow: where it stands, its graph when it is small enough to draw, and a page of its
/// tasks.
#[derive(Debug, Serialize)]
pub(crate) struct WorkflowDetail {
    id: String,
    /// `running`, `failed`, `succeeded` or `cancelled`.
    state: &'static str,
    /// How many tasks it has.
    total: usize,
    /// How many of its tasks are in each state (`succeeded`, `failed` and `unrecorded`
    /// included), for the states any is in.
    counts: BTreeMap<&'static str, usize>,
    /// The most tasks of a workflow that has a `graph`.
    graph_limit: usize,
    /// Every task, in order, for a workflow of at most `graph_limit` tasks; `null` for a larger
    /// one.
    graph: Option<Vec<WorkflowTaskView>>,
    /// One page of its tasks, in order.
    tasks: Vec<WorkflowTaskView>,
    page: usize,
    size: usize,
    has_next: bool,
}

impl WorkflowDetail {
    fn of(report: &WorkflowReport, page: PageInfo) -> Self {
        let total = report.tasks.len();
        let mut counts = BTreeMap::new();
        for task in &report.tasks {
            *counts.entry(state_of(task)).or_default() += 1;
        }
        let views = |range: std::ops::Range<usize>| {
            report.tasks[range.clone()]
                .iter()
                .zip(range)
                .map(|(task, index)| WorkflowTaskView::of(index, task))
                .collect()
        };
        let start = ((page.page - 1) * page.size).min(total);
        let end = (start + page.size).min(total);
        Self {
            id: report.id.to_string(),
            state: report.state().as_str(),
            total,
            counts,
            graph_limit: MAX_GRAPH_TASKS,
            graph: (total <= MAX_GRAPH_TASKS).then(|| views(0..total)),
            tasks: views(start..end),
            page: page.page,
            size: page.size,
            has_next: end < total,
        }
    }
}

/// `GET /api/workflows/{id}?page=&size=`: one workflow, each task's state now.
pub(crate) async fn get_one(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<WorkflowDetail>> {
    let id = path(id)?;
    workflow_id(&id)?;
    let page = query::<PageQuery>(&uri)?.validate()?;
    let report = app.inspector.workflow(&id).await?;
    Ok(Json(WorkflowDetail::of(&report, page)))
}

/// What cancelling a workflow did.
#[derive(Debug, Serialize)]
pub(crate) struct CancelResult {
    /// Tasks archived without running further.
    archived: usize,
    /// Running tasks whose servers were asked to stop them.
    stopping: usize,
}

/// `POST /api/workflows/{id}/cancel`: archives every task of the workflow still to run and asks
/// servers to stop its running ones.
pub(crate) async fn cancel(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<CancelResult>> {
    let id = path(id)?;
    workflow_id(&id)?;
    let done = app.inspector.cancel_workflow(&id).await?;
    Ok(Json(CancelResult { archived: done.archived, stopping: done.stopping }))
}
