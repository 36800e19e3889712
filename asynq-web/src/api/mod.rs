//! The JSON API: one module per resource, the table of routes (from which both the router and
//! [`crate::api_routes`] are built), and the input parsing and validation every handler shares.

mod archive;
mod backend;
mod events;
mod groups;
pub(crate) mod jobs;
mod metrics;
mod queues;
mod render;
mod schedulers;
mod search;
mod server_requests;
mod servers;
mod slots;
mod tasks;
mod workflows;

use crate::error::{ApiError, ApiResult, parse_body};
use crate::{ApiRoute, AppState};
use asynq_core::{GroupName, QueueName, TaskId};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query};
use axum::handler::Handler;
use axum::http::{StatusCode, Uri};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// The router of the API and the table describing it, built together so they cannot disagree.
pub(crate) struct Routes {
    pub(crate) router: Router<AppState>,
    pub(crate) table: Vec<ApiRoute>,
}

impl Routes {
    fn get<H, T>(mut self, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, get(handler));
        self.table.push(ApiRoute { method: "GET", path });
        self
    }

    fn post<H, T>(mut self, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, post(handler));
        self.table.push(ApiRoute { method: "POST", path });
        self
    }
}

/// Every API route.
pub(crate) fn routes() -> Routes {
    Routes { router: Router::new(), table: Vec::new() }
        .get("/api/session", crate::auth::session)
        .post("/api/login", crate::auth::login)
        .post("/api/logout", crate::auth::logout)
        .get("/api/openapi.json", crate::openapi::openapi)
        .get("/api/queues", queues::list)
        .get("/api/history", queues::history_all)
        .get("/api/queues/{queue}", queues::get_one)
        .get("/api/queues/{queue}/history", queues::history)
        .get("/api/queues/{queue}/series", queues::series)
        .get("/api/queues/{queue}/events", events::read)
        .post("/api/queues/{queue}/pause", queues::pause)
        .post("/api/queues/{queue}/unpause", queues::unpause)
        .post("/api/queues/{queue}/delete", queues::delete)
        .get("/api/queues/{queue}/states/{state}/tasks", tasks::list)
        .get("/api/queues/{queue}/states/{state}/search", search::step)
        .post("/api/queues/{queue}/states/{state}/bulk", tasks::bulk_state)
        .get("/api/queues/{queue}/states/{state}/archive-outlook", archive::state_outlook)
        .post("/api/queues/{queue}/batch", tasks::batch)
        .get("/api/queues/{queue}/archive-outlook", archive::outlook)
        .get("/api/queues/{queue}/tasks/{id}", tasks::get_one)
        .post("/api/queues/{queue}/tasks/{id}/{action}", tasks::act)
        .get("/api/queues/{queue}/groups", groups::list)
        .get("/api/queues/{queue}/groups/{group}/tasks", groups::tasks)
        .post("/api/queues/{queue}/groups/{group}/bulk", groups::bulk)
        .get("/api/queues/{queue}/groups/{group}/archive-outlook", archive::group_outlook)
        .get("/api/servers", servers::list)
        .post("/api/servers/{id}/quiet", server_requests::quiet)
        .post("/api/servers/{id}/stop", server_requests::stop)
        .get("/api/slots/{key}", slots::holders)
        .get("/api/schedulers", schedulers::list)
        .get("/api/schedulers/{entry}/history", schedulers::history)
        .get("/api/redis", backend::info)
        .get("/api/jobs", jobs::list)
        .get("/api/jobs/{id}", jobs::get_one)
        .get("/api/workflows", workflows::list)
        .get("/api/workflows/{id}", workflows::get_one)
        .post("/api/workflows/{id}/cancel", workflows::cancel)
        .get("/api/metrics/types", metrics::types)
        .get("/api/metrics/prometheus", metrics::prometheus)
}

/// The answer to a path nothing serves.
pub(crate) async fn not_found() -> ApiError {
    ApiError::not_found("not_found", "no such page or API route")
}

/// The answer to a method a path does not serve (mutations are POST only).
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed; reads are GET, actions POST",
    )
}

/// The longest name (queue, group, task ID, scheduler entry ID, workflow ID) the API accepts.
const MAX_NAME_LEN: usize = 256;
/// The largest page size.
pub(crate) const MAX_PAGE_SIZE: usize = 100;
/// The page size when none is given.
const DEFAULT_PAGE_SIZE: usize = 20;
/// The highest page number (bounds the offset a listing asks the backend for).
const MAX_PAGE: usize = 100_000;

/// The path parameters, or a 400 for a malformed path.
pub(crate) fn path<T>(path: Result<Path<T>, PathRejection>) -> ApiResult<T> {
    path.map(|Path(value)| value).map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))
}

/// The query parameters, or a 400 naming what is wrong with them.
pub(crate) fn query<T: DeserializeOwned>(uri: &Uri) -> ApiResult<T> {
    Query::try_from_uri(uri)
        .map(|Query(value)| value)
        .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))
}

/// Like [`parse_body`], with the default value for an empty body.
pub(crate) fn parse_optional_body<T: DeserializeOwned + Default>(body: &Bytes) -> ApiResult<T> {
    if body.iter().all(u8::is_ascii_whitespace) { Ok(T::default()) } else { parse_body(body) }
}

fn check_name(kind: &'static str, code: &'static str, name: &str) -> ApiResult<()> {
    if name.trim().is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            code,
            format!("invalid {kind}: it must be 1 to {MAX_NAME_LEN} bytes without control characters"),
        ));
    }
    Ok(())
}

/// A queue name: a [`QueueName`], bounded in length.
pub(crate) fn queue_name(queue: &str) -> ApiResult<QueueName> {
    check_name("queue name", "invalid_queue", queue)?;
    QueueName::new(queue).map_err(|e| ApiError::bad_request("invalid_queue", e.to_string()))
}

/// A task ID: a [`TaskId`], bounded in length.
pub(crate) fn task_id(id: &str) -> ApiResult<TaskId> {
    check_name("task ID", "invalid_task_id", id)?;
    TaskId::new(id).map_err(|e| ApiError::bad_request("invalid_task_id", e.to_string()))
}

/// A group name: a [`GroupName`], bounded in length.
pub(crate) fn group_name(group: &str) -> ApiResult<GroupName> {
    check_name("group name", "invalid_group", group)?;
    GroupName::new(group).map_err(|e| ApiError::bad_request("invalid_group", e.to_string()))
}

/// Checks a scheduler entry ID.
pub(crate) fn entry_id(id: &str) -> ApiResult<()> {
    check_name("scheduler entry ID", "invalid_entry_id", id)
}

/// A job ID's text, bounded as a name; jobs are numbered, so other text names no job.
pub(crate) fn job_id(id: &str) -> ApiResult<()> {
    check_name("job ID", "invalid_job_id", id)
}

/// Parses a task state name.
pub(crate) fn state(name: &str) -> ApiResult<asynq_core::TaskState> {
    name.parse().map_err(|e: asynq_core::state::UnknownState| ApiError::bad_request("invalid_state", e.to_string()))
}

/// Paging parameters: `page` from 1, `size` up to [`MAX_PAGE_SIZE`].
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    page: Option<usize>,
    size: Option<usize>,
}

/// A validated page: `number` from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct PageInfo {
    pub(crate) page: usize,
    pub(crate) size: usize,
}

impl PageInfo {
    /// Validates `page` (1 to [`MAX_PAGE`]) and `size` (1 to [`MAX_PAGE_SIZE`]).
    pub(crate) fn new(page: Option<usize>, size: Option<usize>) -> ApiResult<Self> {
        let page = page.unwrap_or(1);
        let size = size.unwrap_or(DEFAULT_PAGE_SIZE);
        if page == 0 || page > MAX_PAGE {
            return Err(ApiError::bad_request("invalid_page", format!("page must be between 1 and {MAX_PAGE}")));
        }
        if size == 0 || size > MAX_PAGE_SIZE {
            return Err(ApiError::bad_request(
                "invalid_page_size",
                format!("size must be between 1 and {MAX_PAGE_SIZE}"),
            ));
        }
        Ok(Self { page, size })
    }

    /// The inspector's page (numbered from 0).
    pub(crate) fn to_core(self) -> asynq_core::broker::Page {
        asynq_core::broker::Page { size: self.size, number: self.page - 1 }
    }
}

impl PageQuery {
    pub(crate) fn validate(self) -> ApiResult<PageInfo> {
        PageInfo::new(self.page, self.size)
    }
}

/// A time as RFC 3339 in UTC, to the second.
pub(crate) fn timestamp(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Milliseconds in a duration, saturating.
pub(crate) fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The answer of an action that returns nothing.
pub(crate) fn no_content() -> StatusCode {
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_bounded() {
        assert_eq!(PageInfo::new(None, None).ok(), Some(PageInfo { page: 1, size: DEFAULT_PAGE_SIZE }));
        assert_eq!(PageInfo::new(Some(0), None).map_err(|e| e.code()), Err("invalid_page"));
        assert_eq!(PageInfo::new(None, Some(MAX_PAGE_SIZE + 1)).map_err(|e| e.code()), Err("invalid_page_size"));
        assert_eq!(PageInfo::new(Some(3), Some(10)).map(|p| p.to_core().number).ok(), Some(2));
    }

    #[test]
    fn names_are_validated() {
        assert!(queue_name("default").is_ok());
        for bad in ["", " ", "a{b}", "tab\there"] {
            assert_eq!(queue_name(bad).map_err(|e| e.code()), Err("invalid_queue"), "{bad:?}");
        }
        assert!(task_id(&"x".repeat(MAX_NAME_LEN + 1)).is_err());
        assert_eq!(state("bogus").map_err(|e| e.code()), Err("invalid_state"));
    }

    /// The bounds `static/openapi.json` states are the constants the handlers check
    /// (`tests/openapi.rs` probes the same bounds through the router).
    #[test]
    fn the_openapi_file_states_the_bounds_the_handlers_enforce() {
        let doc: serde_json::Value = serde_json::from_str(crate::openapi::OPENAPI_JSON).expect("JSON");
        let parameter = |name: &str| doc["components"]["parameters"][name]["schema"].clone();
        let bounds = |name: &str| {
            let schema = parameter(name);
            (schema["minimum"].as_u64(), schema["maximum"].as_u64(), schema["default"].as_u64())
        };
        let n = |value: usize| Some(value as u64);
        assert_eq!(bounds("Size"), (Some(1), n(MAX_PAGE_SIZE), n(DEFAULT_PAGE_SIZE)));
        assert_eq!(bounds("Page"), (Some(1), n(MAX_PAGE), Some(1)));
        assert_eq!(bounds("Days"), (Some(1), n(queues::MAX_DAYS), n(queues::DEFAULT_DAYS)));
        assert_eq!(parameter("Search")["maxLength"].as_u64(), n(tasks::MAX_SEARCH_LEN));
        let search = doc["components"]["parameters"]["Search"]["description"].as_str().unwrap_or_default();
        assert!(search.contains("every task of the state"), "{search}");
        let workflow = |schema: &str, property: &str| {
            doc["components"]["schemas"][schema]["properties"][property]["description"].as_str().unwrap_or_default()
        };
        let graph = workflow("Workflow", "graph");
        assert!(graph.contains(&format!("at most {} tasks", workflows::MAX_GRAPH_TASKS)), "{graph}");
        let listed = workflow("WorkflowSummary", "state");
        assert!(listed.contains(&format!("more than {} tasks", workflows::MAX_LISTED_STATE_TASKS)), "{listed}");
        let ids = &doc["components"]["schemas"]["BatchRequest"]["properties"]["ids"];
        assert_eq!((ids["minItems"].as_u64(), ids["maxItems"].as_u64()), (Some(1), n(tasks::MAX_BATCH)));
        for name in ["QueueName", "Name"] {
            let schema = &doc["components"]["schemas"][name];
            assert_eq!((schema["minLength"].as_u64(), schema["maxLength"].as_u64()), (Some(1), n(MAX_NAME_LEN)));
        }
        let key = &doc["components"]["schemas"]["SlotKey"];
        assert_eq!(
            (key["minLength"].as_u64(), key["maxLength"].as_u64()),
            (Some(1), n(asynq_core::slots::MAX_SLOT_KEY_LEN))
        );
        // Go's seven, and our workflow tasks' waiting, which the handlers take too.
        let mut states: Vec<&str> = asynq_core::TaskState::ALL
            .into_iter()
            .chain([asynq_core::TaskState::Waiting])
            .map(asynq_core::TaskState::as_str)
            .collect();
        let mut described: Vec<&str> = doc["components"]["schemas"]["TaskState"]["enum"]
            .as_array()
            .expect("an enum")
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect();
        states.sort_unstable();
        described.sort_unstable();
        assert_eq!(described, states);
        let actions = doc["components"]["schemas"]["Action"]["enum"].as_array().expect("an enum").clone();
        for action in &actions {
            assert!(tasks::Action::parse(action.as_str().unwrap_or_default()).is_ok(), "{action}");
        }
        assert_eq!(actions.len(), 4, "run, archive, delete, cancel");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_305_600);
        assert_eq!(timestamp(t), "2026-11-22T00:00:00Z");
    }
}
