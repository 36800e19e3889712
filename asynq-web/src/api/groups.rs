//! Groups of a queue: the aggregating tasks waiting in each, and bulk actions on a group.

use super::tasks::{TaskPage, bulk_on};
use super::{PageQuery, group_name, path, query, queue_name};
use crate::AppState;
use crate::error::ApiResult;
use asynq_core::TaskSet;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::Uri;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub(crate) struct GroupView {
    group: String,
    size: usize,
}

#[derive(Debug, Serialize)]
pub(crate) struct GroupList {
    groups: Vec<GroupView>,
}

/// `GET /api/queues/{queue}/groups`: the groups with tasks waiting, and their sizes.
pub(crate) async fn list(
    State(app): State<AppState>,
    queue: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<GroupList>> {
    let queue = path(queue)?;
    queue_name(&queue)?;
    let groups = app.inspector.groups(&queue).await?;
    Ok(Json(GroupList {
        groups: groups.into_iter().map(|g| GroupView { group: g.group.into_string(), size: g.size }).collect(),
    }))
}

/// `GET /api/queues/{queue}/groups/{group}/tasks?page=&size=`: one page of a group's tasks.
pub(crate) async fn tasks(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<TaskPage>> {
    let (queue, group) = path(params)?;
    queue_name(&queue)?;
    group_name(&group)?;
    let page = query::<PageQuery>(&uri)?.validate()?;
    let size = app.inspector.group_size(&queue, &group).await?;
    let tasks = app.inspector.list_group_tasks(&queue, &group, page.to_core()).await?;
    Ok(Json(TaskPage::of(&tasks, page, size)))
}

/// `POST /api/queues/{queue}/groups/{group}/bulk` with `{"action": "run"}`: the action on
/// every task of the group.
pub(crate) async fn bulk(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
    body: Bytes,
) -> ApiResult<axum::response::Response> {
    let (queue, group) = path(params)?;
    queue_name(&queue)?;
    bulk_on(&app, &queue, &TaskSet::Group(group_name(&group)?), &body).await
}
