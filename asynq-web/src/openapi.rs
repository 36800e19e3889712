//! `GET /api/openapi.json`: the OpenAPI 3 description of the JSON API, a hand-written file
//! embedded in the binary (a test checks that it describes every route the router serves).

use axum::http::header;
use axum::response::IntoResponse;

/// The description, as served.
pub(crate) const OPENAPI_JSON: &str = include_str!("../static/openapi.json");

/// Serves [`OPENAPI_JSON`].
pub(crate) async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON)
}
