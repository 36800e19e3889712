//! The API's error responses: `{ "error": { "code": "...", "message": "..." } }` with a status
//! that says who is at fault, built from [`asynq_core::Error`] or from the web layer's own checks.
//!
//! Responses never carry a backend's own error text (it may name hosts or credentials): broker
//! failures are logged and answered with a fixed message.

use axum::Json;
use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::borrow::Cow;

/// An error answer of the JSON API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: Cow<'static, str>,
}

impl ApiError {
    /// An error with `status`, a stable machine-readable `code` and a human `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self { status, code, message: message.into() }
    }

    /// 400: the request is malformed; `code` names what is wrong.
    pub fn bad_request(code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401: no valid credentials.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", "log in, or send Authorization: Bearer <token>")
    }

    /// 403: the request is understood and refused.
    pub fn forbidden(code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    /// 404: nothing at this path.
    pub fn not_found(code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<asynq_core::Error> for ApiError {
    fn from(error: asynq_core::Error) -> Self {
        use asynq_core::Error as E;
        match &error {
            E::InvalidArgument { .. } | E::TooLarge { .. } => Self::bad_request("invalid_argument", error.to_string()),
            E::QueueNotFound { .. } => Self::not_found("queue_not_found", error.to_string()),
            E::TaskNotFound { .. } => Self::not_found("task_not_found", error.to_string()),
            E::WorkflowNotFound { .. } => Self::not_found("workflow_not_found", error.to_string()),
            E::ServerNotFound { .. } => Self::not_found("server_not_found", error.to_string()),
            E::QueueNotEmpty { .. } => Self::new(
                StatusCode::CONFLICT,
                "queue_not_empty",
                format!("{error}; delete it with force to remove its tasks too"),
            ),
            E::FailedPrecondition(_) => Self::new(StatusCode::CONFLICT, "failed_precondition", error.to_string()),
            E::TaskIdConflict { .. } | E::DuplicateTask { .. } | E::QueueNameConflict { .. } => {
                Self::new(StatusCode::CONFLICT, "conflict", error.to_string())
            }
            E::Unsupported { .. } => Self::new(StatusCode::NOT_IMPLEMENTED, "unsupported", error.to_string()),
            E::Broker(broker) if broker.is_transient() => {
                tracing::warn!(error = %broker, "backend unavailable");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "backend_unavailable",
                    "the backend is unavailable; retry later",
                )
            }
            _ => {
                tracing::error!(%error, "backend failure");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "backend_error", "the backend failed; see the server log")
            }
        }
    }
}

#[derive(Serialize)]
struct Body<'a> {
    error: Detail<'a>,
}

#[derive(Serialize)]
struct Detail<'a> {
    code: &'a str,
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body { error: Detail { code: self.code, message: &self.message } };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// The result of an API handler.
pub type ApiResult<T> = Result<T, ApiError>;

/// A JSON request body, or a 400 naming what is wrong with it.
pub(crate) fn parse_body<T: DeserializeOwned>(body: &Bytes) -> ApiResult<T> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request("invalid_body", format!("invalid JSON body: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::QueueName;

    #[test]
    fn core_errors_map_to_statuses_and_broker_details_stay_private() {
        let cases = [
            (asynq_core::Error::invalid("queue", "bad"), StatusCode::BAD_REQUEST, "invalid_argument"),
            (
                asynq_core::Error::QueueNotFound { queue: QueueName::from_static("q") },
                StatusCode::NOT_FOUND,
                "queue_not_found",
            ),
            (
                asynq_core::Error::QueueNotEmpty { queue: QueueName::from_static("q") },
                StatusCode::CONFLICT,
                "queue_not_empty",
            ),
            (asynq_core::Error::FailedPrecondition("x".into()), StatusCode::CONFLICT, "failed_precondition"),
            (
                asynq_core::Error::QueueNameConflict { queue: QueueName::from_static("q"), reason: "taken".into() },
                StatusCode::CONFLICT,
                "conflict",
            ),
            (asynq_core::Error::Unsupported { capability: "workflows" }, StatusCode::NOT_IMPLEMENTED, "unsupported"),
        ];
        for (error, status, code) in cases {
            let api = ApiError::from(error);
            assert_eq!((api.status(), api.code()), (status, code));
        }
        let secret = asynq_core::BrokerError::permanent("redis://:hunter2@db:6379 refused");
        let api = ApiError::from(asynq_core::Error::Broker(secret));
        assert_eq!(api.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!api.message().contains("hunter2"));
    }
}
