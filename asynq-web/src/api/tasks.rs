//! Tasks: listings per state with paging and search, one task in full, and the actions on them
//! (run, archive, delete, cancel) one by one, on a selection, or on every task of a state.

use super::archive::Trimmed;
use super::render::{Rendered, preview, render};
use super::{
    PageInfo, jobs, no_content, parse_body, path, query, queue_name, state as parse_state, task_id, timestamp,
};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_core::workflow::WORKFLOW_HEADER;
use asynq_core::{ArchiveReport, BulkAction, CancelOutcome, Progress, TaskInfo, TaskSet, TaskState};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The longest search text.
pub(super) const MAX_SEARCH_LEN: usize = 200;
/// The most tasks one batch action names.
pub(super) const MAX_BATCH: usize = 1_000;

/// A task as a list shows it.
#[derive(Debug, Serialize)]
pub(crate) struct TaskSummary {
    id: String,
    queue: String,
    #[serde(rename = "type")]
    type_name: String,
    state: &'static str,
    payload_preview: String,
    payload_size: usize,
    max_retry: u32,
    retried: u32,
    last_error: Option<String>,
    last_failed_at: Option<String>,
    next_process_at: Option<String>,
    group: Option<String>,
    is_orphaned: bool,
    completed_at: Option<String>,
    deadline: Option<String>,
    timeout_seconds: Option<u64>,
    retention_seconds: Option<u64>,
    progress: Option<ProgressSummary>,
    /// The start of the result its handler wrote, if any.
    result_preview: Option<String>,
    /// The debounce key it was enqueued with, if any.
    debounce_key: Option<String>,
    /// Its priority within its queue, −10 to 10 (0, the default, is Go's pending list).
    priority: i8,
    /// The workflow it belongs to (its [`WORKFLOW_HEADER`]), if any.
    workflow: Option<String>,
    /// For an active task in a listing: the server running it and when the attempt started
    /// and must end, from the servers' worker records.
    worker: Option<WorkerSummary>,
}

/// Where and since when an active task runs.
#[derive(Debug, Serialize)]
pub(crate) struct WorkerSummary {
    /// `host:pid` of the server.
    server: String,
    server_id: String,
    started: String,
    deadline: String,
}

/// A handler's last progress report.
#[derive(Debug, Serialize)]
pub(crate) struct ProgressSummary {
    fraction: f64,
    message: String,
    reported_at: String,
}

impl From<&Progress> for ProgressSummary {
    fn from(progress: &Progress) -> Self {
        Self {
            fraction: progress.fraction(),
            message: progress.message().to_owned(),
            reported_at: timestamp(progress.reported_at()),
        }
    }
}

impl From<&TaskInfo> for TaskSummary {
    fn from(task: &TaskInfo) -> Self {
        Self {
            id: task.id.to_string(),
            queue: task.queue.to_string(),
            type_name: task.type_name.clone(),
            state: task.state.as_str(),
            payload_preview: preview(&task.payload),
            payload_size: task.payload.len(),
            max_retry: task.max_retry,
            retried: task.retried,
            last_error: task.last_error.clone(),
            last_failed_at: task.last_failed_at.map(timestamp),
            next_process_at: task.next_process_at.map(timestamp),
            group: task.group.as_ref().map(ToString::to_string),
            is_orphaned: task.is_orphaned,
            completed_at: task.completed_at.map(timestamp),
            deadline: task.deadline.map(timestamp),
            timeout_seconds: task.timeout.map(|t| t.as_secs()),
            retention_seconds: task.retention.map(|t| t.as_secs()),
            progress: task.progress.as_ref().map(ProgressSummary::from),
            result_preview: task.result.as_deref().map(preview),
            debounce_key: task.debounce_key.clone(),
            priority: task.priority.get(),
            workflow: task.headers.get(WORKFLOW_HEADER).cloned(),
            worker: None,
        }
    }
}

/// A task in full: the summary, its payload and result rendered, its headers.
#[derive(Debug, Serialize)]
pub(crate) struct TaskDetail {
    #[serde(flatten)]
    summary: TaskSummary,
    payload: Rendered,
    result: Option<Rendered>,
    headers: BTreeMap<String, String>,
    /// Why its handler parked it (a durable sleep or a wait for a signal), while scheduled.
    parked: Option<ParkedDetail>,
    /// Its durable steps' records, by when each was recorded.
    steps: Vec<StepDetail>,
}

/// Why a handler parked its task.
#[derive(Debug, Serialize)]
pub(crate) struct ParkedDetail {
    /// `sleeping`, or `waiting for signal "<name>"`.
    reason: String,
    /// When it goes on at the latest.
    until: String,
}

/// A durable step's record.
#[derive(Debug, Serialize)]
pub(crate) struct StepDetail {
    name: String,
    /// The start of its recorded result.
    result_preview: String,
    recorded_at: String,
}

impl From<&TaskInfo> for TaskDetail {
    fn from(task: &TaskInfo) -> Self {
        Self {
            summary: task.into(),
            payload: render(&task.payload),
            result: task.result.as_deref().map(render),
            headers: task.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            parked: task.parked.as_ref().map(|p| ParkedDetail { reason: p.to_string(), until: timestamp(p.until) }),
            steps: task
                .steps
                .iter()
                .map(|s| StepDetail {
                    name: s.name().to_string(),
                    result_preview: preview(s.result()),
                    recorded_at: timestamp(s.recorded_at()),
                })
                .collect(),
        }
    }
}

/// One page of tasks.
#[derive(Debug, Serialize)]
pub(crate) struct TaskPage {
    tasks: Vec<TaskSummary>,
    page: usize,
    size: usize,
    /// Tasks in the state, or matches of the search.
    total: usize,
    has_next: bool,
}

impl TaskPage {
    /// A page of a listing whose total is known.
    pub(crate) fn of(tasks: &[TaskInfo], page: PageInfo, total: usize) -> Self {
        Self {
            tasks: tasks.iter().map(Into::into).collect(),
            page: page.page,
            size: page.size,
            total,
            has_next: page.page * page.size < total,
        }
    }

    /// Names the server running each task of the page, as the servers' worker records say.
    async fn add_workers(&mut self, app: &AppState) -> ApiResult<()> {
        add_workers(app, &mut self.tasks).await
    }
}

/// Names the server running each of `tasks`, as the servers' worker records say.
pub(super) async fn add_workers(app: &AppState, tasks: &mut [TaskSummary]) -> ApiResult<()> {
    let mut running = HashMap::new();
    for report in app.inspector.servers().await? {
        let server = format!("{}:{}", report.server.host, report.server.pid);
        for worker in report.workers {
            let summary = WorkerSummary {
                server: server.clone(),
                server_id: report.server.server_id.clone(),
                started: timestamp(worker.started),
                deadline: timestamp(worker.deadline),
            };
            running.insert(worker.task_id, summary);
        }
    }
    for task in tasks {
        task.worker = running.remove(&task.id);
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    page: Option<usize>,
    size: Option<usize>,
    /// Keep the tasks that match this search (the syntax of [`super::search`]).
    search: Option<String>,
}

/// The number of tasks of `queue` in `state`.
pub(crate) fn count(info: &asynq_core::QueueInfo, state: TaskState) -> usize {
    match state {
        TaskState::Active => info.active,
        TaskState::Pending => info.pending,
        TaskState::Scheduled => info.scheduled,
        TaskState::Retry => info.retry,
        TaskState::Archived => info.archived,
        TaskState::Completed => info.completed,
        TaskState::Aggregating => info.aggregating,
        TaskState::Waiting => info.waiting,
    }
}

/// `GET /api/queues/{queue}/states/{state}/tasks?page=&size=&search=`.
pub(crate) async fn list(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<TaskPage>> {
    let (queue, state) = path(params)?;
    queue_name(&queue)?;
    let state = parse_state(&state)?;
    let ListQuery { page, size, search } = query(&uri)?;
    let page = PageInfo::new(page, size)?;
    let info = app.inspector.queue_info(&queue).await?;
    let search = match search {
        Some(text) => Some(super::search::Query::parse(text.trim())?).filter(|query| !query.is_empty()),
        None => None,
    };
    let Some(query) = search else {
        let tasks = app.inspector.list_tasks(&queue, state, page.to_core()).await?;
        let mut result = TaskPage::of(&tasks, page, count(&info, state));
        if state == TaskState::Active {
            result.add_workers(&app).await?;
        }
        return Ok(Json(result));
    };
    // Every match is counted, in the stepped search's bounded reads; only the page's are kept.
    let skip = (page.page - 1) * page.size;
    let (shown, total) = super::search::every_match(&app, &queue, state, &query, skip, page.size).await?;
    let mut result = TaskPage::of(&shown, page, total);
    if state == TaskState::Active {
        result.add_workers(&app).await?;
    }
    Ok(Json(result))
}

/// `GET /api/queues/{queue}/tasks/{id}`.
pub(crate) async fn get_one(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<Json<TaskDetail>> {
    let (queue, id) = path(params)?;
    queue_name(&queue)?;
    task_id(&id)?;
    let task = app.inspector.task_info(&queue, &id).await?;
    Ok(Json((&task).into()))
}

/// An action on one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    Run,
    Archive,
    Delete,
    Cancel,
}

impl Action {
    pub(super) fn parse(name: &str) -> ApiResult<Self> {
        match name {
            "run" => Ok(Action::Run),
            "archive" => Ok(Action::Archive),
            "delete" => Ok(Action::Delete),
            "cancel" => Ok(Action::Cancel),
            _ => Err(ApiError::bad_request("invalid_action", "action must be run, archive, delete or cancel")),
        }
    }
}

/// What a request to cancel a task found, as `POST .../cancel` answers it: `outcome` is
/// `running` (with the `servers` running it), `not_running` (with the task's `queue` and
/// `state`) or `unknown_task`. The request is kept for a while in every case.
#[derive(Debug, Serialize)]
pub(crate) struct CancelFound {
    outcome: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    servers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'static str>,
    /// The outcome in words.
    message: String,
}

impl From<&CancelOutcome> for CancelFound {
    fn from(found: &CancelOutcome) -> Self {
        let mut view =
            Self { outcome: "other", servers: Vec::new(), queue: None, state: None, message: found.to_string() };
        match found {
            CancelOutcome::Running { servers } => (view.outcome, view.servers) = ("running", servers.clone()),
            CancelOutcome::NotRunning { queue, state } => {
                (view.outcome, view.queue, view.state) = ("not_running", Some(queue.to_string()), Some(state.as_str()));
            }
            CancelOutcome::UnknownTask => view.outcome = "unknown_task",
            _ => {}
        }
        view
    }
}

/// Acts on one task; a cancellation says what it found.
async fn act_on(app: &AppState, queue: &str, id: &str, action: Action) -> ApiResult<Option<CancelOutcome>> {
    task_id(id)?;
    match action {
        Action::Run => app.inspector.run_task(queue, id).await?,
        Action::Archive => app.inspector.archive_task(queue, id).await?,
        Action::Delete => app.inspector.delete_task(queue, id).await?,
        Action::Cancel => {
            let task = app.inspector.task_info(queue, id).await?;
            if task.state != TaskState::Active {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "failed_precondition",
                    format!("only active tasks can be cancelled; this one is {}", task.state),
                ));
            }
            return Ok(Some(app.inspector.cancel(id).await?));
        }
    }
    Ok(None)
}

/// `POST /api/queues/{queue}/tasks/{id}/{action}` (run, archive, delete, cancel): 204, or for a
/// cancellation 200 with what it found ([`CancelFound`]).
pub(crate) async fn act(
    State(app): State<AppState>,
    params: Result<Path<(String, String, String)>, PathRejection>,
) -> ApiResult<Response> {
    let (queue, id, action) = path(params)?;
    queue_name(&queue)?;
    task_id(&id)?;
    Ok(match act_on(&app, &queue, &id, Action::parse(&action)?).await? {
        Some(found) => Json(CancelFound::from(&found)).into_response(),
        None => no_content().into_response(),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Batch {
    action: Action,
    ids: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Failure {
    id: String,
    code: &'static str,
    message: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct BatchResult {
    succeeded: Vec<String>,
    failed: Vec<Failure>,
    /// For an archive: what the archive's trims dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    trimmed: Option<Trimmed>,
}

/// `POST /api/queues/{queue}/batch` with `{"action": "run", "ids": [...]}`: the action on each
/// task, reporting each one's outcome.
pub(crate) async fn batch(
    State(app): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> ApiResult<Json<BatchResult>> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    let Batch { action, ids } = parse_body(&body)?;
    if ids.is_empty() || ids.len() > MAX_BATCH {
        return Err(ApiError::bad_request("invalid_ids", format!("name 1 to {MAX_BATCH} task IDs")));
    }
    for id in &ids {
        task_id(id)?;
    }
    let mut result = BatchResult { succeeded: Vec::new(), failed: Vec::new(), trimmed: None };
    if action == Action::Archive {
        // Each archive reports what its trim dropped.
        let mut trimmed = Trimmed::default();
        let mut counted = true;
        for id in ids {
            let archived = match app.inspector.archive_task_reporting(&queue, &id).await {
                // A backend that cannot count what its trim drops archives as before.
                Err(asynq_core::Error::Unsupported { .. }) => {
                    counted = false;
                    app.inspector.archive_task(&queue, &id).await.map(|()| ArchiveReport::default())
                }
                other => other,
            };
            match archived.map_err(ApiError::from) {
                Ok(report) => {
                    trimmed.add(&report);
                    result.succeeded.push(id);
                }
                Err(e) if e.status().is_server_error() => return Err(e),
                Err(e) => result.failed.push(Failure { code: e.code(), message: e.message().to_owned(), id }),
            }
        }
        result.trimmed = counted.then_some(trimmed);
        return Ok(Json(result));
    }
    for id in ids {
        match act_on(&app, &queue, &id, action).await {
            Ok(_) => result.succeeded.push(id),
            Err(e) if e.status().is_server_error() => return Err(e),
            Err(e) => result.failed.push(Failure { code: e.code(), message: e.message().to_owned(), id }),
        }
    }
    Ok(Json(result))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Bulk {
    action: Action,
}

#[derive(Debug, Serialize)]
pub(crate) struct BulkResult {
    /// How many tasks the action moved or removed.
    count: usize,
    /// For an archive: what the archive's trims dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    trimmed: Option<Trimmed>,
}

/// Applies a bulk action to every task of `set`, as a job (see [`super::jobs`]): 200 with the
/// count when it ends within the reply wait, else 202 with the job.
pub(crate) async fn bulk_on(app: &AppState, queue: &str, set: &TaskSet, body: &Bytes) -> ApiResult<Response> {
    let Bulk { action } = parse_body(body)?;
    let action = match action {
        Action::Run => BulkAction::Run,
        Action::Archive => BulkAction::Archive,
        Action::Delete => BulkAction::Delete,
        Action::Cancel => {
            return Err(ApiError::bad_request("invalid_action", "bulk actions are run, archive and delete"));
        }
    };
    asynq_core::validate_bulk(action, set)?;
    let description = format!("{} the {set} of queue {queue:?}", action.verb());
    let (inspector, queue, set) = (app.inspector.clone(), queue.to_owned(), set.clone());
    let work = move |sink: jobs::Sink| -> jobs::Work {
        Box::pin(async move {
            if action == BulkAction::Archive {
                let sink = sink.clone();
                match inspector.archive_all_reporting(&queue, &set, move |p| sink(p)).await {
                    Ok(report) => {
                        let trimmed = Some(Trimmed::from(&report));
                        return Ok(jobs::Outcome { count: Some(report.archived), trimmed });
                    }
                    // A backend that cannot count what its trim drops archives as before.
                    Err(asynq_core::Error::Unsupported { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            let count = inspector.bulk_action(&queue, action, &set, move |p| sink(p)).await?;
            Ok(jobs::Outcome { count: Some(count), trimmed: None })
        })
    };
    let done = |outcome: jobs::Outcome| {
        Json(BulkResult { count: outcome.count.unwrap_or(0), trimmed: outcome.trimmed }).into_response()
    };
    jobs::run(app, description, work, done).await
}

/// `POST /api/queues/{queue}/states/{state}/bulk` with `{"action": "delete"}`: the action on
/// every task of the state.
pub(crate) async fn bulk_state(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
    body: Bytes,
) -> ApiResult<Response> {
    let (queue, state) = path(params)?;
    queue_name(&queue)?;
    let set = TaskSet::State(parse_state(&state)?);
    bulk_on(&app, &queue, &set, &body).await
}

#[cfg(test)]
mod steps_tests {
    use super::*;
    use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord};
    use asynq_core::{StoredTask, TaskState};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_task_s_detail_shows_its_steps_and_why_it_is_parked() {
        let message =
            StoredTask::new(asynq_core::TaskId::from_static("t-1"), asynq_core::QueueName::from_static("q"), "order");
        let mut info = TaskInfo::new(&message, TaskState::Scheduled, None, None);
        let at = UNIX_EPOCH + Duration::from_secs(1_795_305_600);
        info.parked = Some(Parked::new(ParkReason::Sleep, at + Duration::from_secs(60)));
        info.steps = vec![StepRecord::new(StepName::new("charge").unwrap(), "\"r-1\"", at).unwrap()];
        let detail = serde_json::to_value(TaskDetail::from(&info)).unwrap();
        assert_eq!(detail["parked"], serde_json::json!({"reason": "sleeping", "until": "2026-11-22T00:01:00Z"}));
        assert_eq!(
            detail["steps"],
            serde_json::json!([{"name": "charge", "result_preview": "\"r-1\"", "recorded_at": "2026-11-22T00:00:00Z"}])
        );
    }
}
