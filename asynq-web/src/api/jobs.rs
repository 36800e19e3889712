//! Bulk actions that outlast a request: running, archiving or deleting every task of a state or
//! group, and removing a queue with its tasks. On Redis these go in bounded steps, and on a set
//! of millions they take seconds or minutes, so each runs as a job of its own: the request that
//! starts it waits up to [`WebConfig::job_reply_wait`](crate::WebConfig::job_reply_wait) and answers with the result as before (200, or 204 for a
//! removal), or else with 202 and the job, whose progress `GET /api/jobs/{id}` reports. A job
//! runs to its end whether or not anybody is still waiting, so a closed tab does not cut it
//! short.

use super::archive::Trimmed;
use super::{path, timestamp};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_core::BulkProgress;
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// How many finished jobs the dashboard remembers (the oldest are forgotten first).
const KEPT_FINISHED: usize = 20;

/// The bulk actions of this dashboard's process, running or recently finished.
#[derive(Debug, Default)]
pub(crate) struct Jobs(Mutex<JobTable>);

#[derive(Debug, Default)]
struct JobTable {
    next_id: u64,
    jobs: BTreeMap<u64, JobView>,
}

/// Whether a job runs, finished or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JobState {
    Running,
    Done,
    Failed,
}

/// A job, as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct JobView {
    id: u64,
    /// What the job does, for people: "archive the pending tasks of queue \"q\"".
    description: String,
    state: JobState,
    /// Tasks acted on so far.
    done: usize,
    /// Tasks the job means to act on (those its set held when it began).
    total: usize,
    /// When it began (RFC 3339).
    started_at: String,
    /// How many tasks it acted on, once done.
    count: Option<usize>,
    /// What the archive's trims dropped, once an archive is done.
    trimmed: Option<Trimmed>,
    /// Why it failed.
    error: Option<JobError>,
}

#[derive(Debug, Clone, Serialize)]
struct JobError {
    code: &'static str,
    message: String,
}

/// 202's body: the job the request started, still running.
#[derive(Debug, Serialize)]
struct Accepted {
    job: JobView,
}

/// What a bulk action's work reports: how many tasks it acted on (none for a removal) and, for
/// an archive, what the archive's trims dropped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Outcome {
    /// Tasks acted on.
    pub(crate) count: Option<usize>,
    /// What an archive's trims dropped.
    pub(crate) trimmed: Option<Trimmed>,
}

/// A bulk action's work.
pub(crate) type Work = std::pin::Pin<Box<dyn Future<Output = asynq_core::Result<Outcome>> + Send>>;

/// The progress sink a job's work calls after each step.
pub(crate) type Sink = Arc<dyn Fn(BulkProgress) + Send + Sync>;

impl Jobs {
    fn start(&self, description: String) -> u64 {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        table.next_id += 1;
        let id = table.next_id;
        // Shown to operators beside the job, as the times they read elsewhere on the page.
        #[allow(clippy::disallowed_methods)]
        let started_at = timestamp(SystemTime::now()); // allow: wall-clock
        let view = JobView {
            id,
            description,
            state: JobState::Running,
            done: 0,
            total: 0,
            started_at,
            count: None,
            trimmed: None,
            error: None,
        };
        table.jobs.insert(id, view);
        id
    }

    fn progress(&self, id: u64, progress: BulkProgress) {
        if let Some(job) = self.0.lock().unwrap_or_else(PoisonError::into_inner).jobs.get_mut(&id) {
            (job.done, job.total) = (progress.done, progress.total);
        }
    }

    fn finish(&self, id: u64, result: &Result<Outcome, ApiError>) {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(job) = table.jobs.get_mut(&id) {
            match result {
                Ok(outcome) => {
                    job.state = JobState::Done;
                    (job.count, job.trimmed) = (outcome.count, outcome.trimmed);
                }
                Err(e) => {
                    job.state = JobState::Failed;
                    job.error = Some(JobError { code: e.code(), message: e.message().to_owned() });
                }
            }
        }
        let finished: Vec<u64> =
            table.jobs.values().filter(|job| job.state != JobState::Running).map(|job| job.id).collect();
        for id in finished.iter().take(finished.len().saturating_sub(KEPT_FINISHED)) {
            table.jobs.remove(id);
        }
    }

    fn forget(&self, id: u64) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).jobs.remove(&id);
    }

    fn view(&self, id: u64) -> Option<JobView> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).jobs.get(&id).cloned()
    }

    fn all(&self) -> Vec<JobView> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).jobs.values().rev().cloned().collect()
    }
}

/// Runs `work` as a job described by `description`, handing it a progress sink. Answers with
/// `done` applied to its result when it ends within the reply wait (the job is then forgotten),
/// else with 202 and the job.
pub(crate) async fn run(
    app: &AppState,
    description: String,
    work: impl FnOnce(Sink) -> Work,
    done: impl FnOnce(Outcome) -> Response,
) -> ApiResult<Response> {
    let id = app.jobs.start(description);
    let jobs = app.clone();
    let sink: Sink = {
        let jobs = app.clone();
        Arc::new(move |progress| jobs.jobs.progress(id, progress))
    };
    let work = work(sink);
    let mut handle = tokio::spawn(async move {
        let result = work.await.map_err(ApiError::from);
        jobs.jobs.finish(id, &result);
        result
    });
    match tokio::time::timeout(app.job_reply_wait, &mut handle).await {
        Ok(joined) => {
            app.jobs.forget(id);
            let result = joined.map_err(|e| {
                tracing::error!(error = %e, "a bulk action's task failed");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "job_failed", "the action failed; see the server log")
            })?;
            Ok(done(result?))
        }
        Err(_) => {
            let job = app.jobs.view(id).expect("a running job is kept");
            Ok((StatusCode::ACCEPTED, Json(Accepted { job })).into_response())
        }
    }
}

/// The jobs, as `GET /api/jobs` lists them.
#[derive(Debug, Serialize)]
pub(crate) struct JobList {
    jobs: Vec<JobView>,
}

/// `GET /api/jobs`: running and recently finished bulk actions, newest first.
pub(crate) async fn list(State(app): State<AppState>) -> Json<JobList> {
    Json(JobList { jobs: app.jobs.all() })
}

/// `GET /api/jobs/{id}`: one job's progress and outcome.
pub(crate) async fn get_one(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<JobView>> {
    let id = path(id)?;
    super::job_id(&id)?;
    let view = id.parse().ok().and_then(|number| app.jobs.view(number));
    view.map(Json)
        .ok_or_else(|| ApiError::not_found("job_not_found", format!("no job {id:?} (finished jobs are kept a while)")))
}
