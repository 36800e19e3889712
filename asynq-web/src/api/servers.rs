//! Servers: each live server's configuration and the tasks its workers run.

use super::render::preview;
use super::timestamp;
use crate::AppState;
use crate::error::ApiResult;
use asynq_client::ServerReport;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub(crate) struct WorkerView {
    task_id: String,
    task_type: String,
    queue: String,
    payload_preview: String,
    started: String,
    deadline: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct ServerView {
    id: String,
    host: String,
    pid: u32,
    concurrency: u32,
    queues: BTreeMap<String, u32>,
    strict_priority: bool,
    status: &'static str,
    started: String,
    active_workers: u32,
    workers: Vec<WorkerView>,
}

impl From<ServerReport> for ServerView {
    fn from(report: ServerReport) -> Self {
        let server = report.server;
        Self {
            id: server.server_id,
            host: server.host,
            pid: server.pid,
            concurrency: server.concurrency,
            queues: server.queues,
            strict_priority: server.strict_priority,
            status: server.status.as_str(),
            started: timestamp(server.started),
            active_workers: server.active_workers,
            workers: report
                .workers
                .into_iter()
                .map(|w| WorkerView {
                    payload_preview: preview(&w.task_payload),
                    started: timestamp(w.started),
                    deadline: timestamp(w.deadline),
                    task_id: w.task_id,
                    task_type: w.task_type,
                    queue: w.queue,
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct ServerList {
    servers: Vec<ServerView>,
}

/// `GET /api/servers`: the live servers and their active workers.
pub(crate) async fn list(State(app): State<AppState>) -> ApiResult<Json<ServerList>> {
    let servers = app.inspector.servers().await?;
    Ok(Json(ServerList { servers: servers.into_iter().map(Into::into).collect() }))
}
