//! Quieting and stopping servers: a request kept for the server's next heartbeat to read
//! ([`asynq_client::Inspector::quiet_server`], [`asynq_client::Inspector::stop_server`]). Go
//! asynq's servers never read it.

use super::{check_name, path};
use crate::AppState;
use crate::error::ApiResult;
use asynq_client::ServerRequest;
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;

/// The request sent.
#[derive(Debug, Serialize)]
pub(crate) struct RequestSent {
    server: String,
    request: &'static str,
}

async fn send(
    app: AppState,
    id: Result<Path<String>, PathRejection>,
    request: ServerRequest,
) -> ApiResult<(StatusCode, Json<RequestSent>)> {
    let id = path(id)?;
    check_name("server ID", "invalid_server_id", &id)?;
    app.inspector.request_server(&id, request).await?;
    Ok((StatusCode::ACCEPTED, Json(RequestSent { server: id, request: request.as_str() })))
}

/// `POST /api/servers/{id}/quiet`: the server finishes what it runs and takes nothing new.
pub(crate) async fn quiet(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<(StatusCode, Json<RequestSent>)> {
    send(app, id, ServerRequest::Quiet).await
}

/// `POST /api/servers/{id}/stop`: the server shuts down gracefully.
pub(crate) async fn stop(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<(StatusCode, Json<RequestSent>)> {
    send(app, id, ServerRequest::Stop).await
}
