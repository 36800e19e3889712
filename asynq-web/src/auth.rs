//! Who may use the dashboard and how mutations are protected: bearer tokens compared in
//! constant time, login sessions in HttpOnly SameSite=Strict cookies, double-submit CSRF tokens,
//! read-only mode, and the `Host` check that keeps DNS rebinding away from an unauthenticated
//! dashboard.

use crate::AppState;
use crate::error::{ApiError, ApiResult, parse_body};
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

/// The cookie holding a login session's ID.
pub(crate) const SESSION_COOKIE: &str = "asynq_session";
/// The cookie holding the CSRF token (readable by the page, which echoes it in a header).
pub(crate) const CSRF_COOKIE: &str = "asynq_csrf";
/// The header a mutation must carry, equal to the CSRF cookie.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a login lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// The most sessions kept at once; the oldest go first.
const MAX_SESSIONS: usize = 1024;
/// The API paths served without authentication: what the login page needs.
const PUBLIC_PATHS: [&str; 3] = ["/api/session", "/api/login", "/api/openapi.json"];

/// The bearer token that guards the dashboard. Its `Debug` output hides the token.
#[derive(Clone)]
pub struct Auth {
    token: String,
}

/// The error of [`Auth::bearer`]: the token is empty or not printable ASCII.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidToken;

impl fmt::Display for InvalidToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the token must be non-empty printable ASCII without spaces")
    }
}

impl std::error::Error for InvalidToken {}

impl Auth {
    /// Requires `token`, which must be non-empty printable ASCII without spaces (what an HTTP
    /// header can carry).
    pub fn bearer(token: impl Into<String>) -> Result<Self, InvalidToken> {
        let token = token.into();
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(InvalidToken);
        }
        Ok(Self { token })
    }

    /// True when `candidate` is the token; takes the same time wherever they differ.
    pub(crate) fn matches(&self, candidate: &str) -> bool {
        constant_time_eq(self.token.as_bytes(), candidate.as_bytes())
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth").field("token", &"<redacted>").finish()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(a.ct_eq(b))
}

/// The live login sessions, by ID, with when each expires (on tokio's clock: a session's
/// lifetime is real elapsed time, not task time).
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    expiry: Mutex<HashMap<String, Instant>>,
}

impl Sessions {
    fn create(&self) -> String {
        let id = random_token();
        let now = tokio::time::Instant::now();
        let mut sessions = self.expiry.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        sessions.retain(|_, expires| *expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, expires)| **expires).map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), now + SESSION_TTL);
        id
    }

    fn is_valid(&self, id: &str) -> bool {
        let sessions = self.expiry.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Look every session up in constant time, so timing tells nothing about stored IDs.
        let now = tokio::time::Instant::now();
        sessions.iter().fold(false, |found, (known, expires)| {
            found | (constant_time_eq(known.as_bytes(), id.as_bytes()) && *expires > now)
        })
    }

    fn remove(&self, id: &str) {
        self.expiry.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(id);
    }
}

/// 32 random bytes from the thread's CSPRNG, in hex.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// How a request proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// No authentication is configured.
    Open,
    /// A valid bearer token: not a browser's ambient credential, so no CSRF check.
    Bearer,
    /// A valid session cookie.
    Session,
    /// Nothing valid.
    Anonymous,
}

fn identify(state: &AppState, headers: &HeaderMap) -> Identity {
    let Some(auth) = &state.auth else { return Identity::Open };
    if bearer(headers).is_some_and(|token| auth.matches(token)) {
        return Identity::Bearer;
    }
    if cookie(headers, SESSION_COOKIE).is_some_and(|id| state.sessions.is_valid(id)) {
        return Identity::Session;
    }
    Identity::Anonymous
}

/// Guards the API: authentication, then for POST read-only mode, the `Origin` check and the
/// CSRF token.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state, &request) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

fn check(state: &AppState, request: &Request) -> ApiResult<()> {
    let headers = request.headers();
    let path = request.uri().path();
    let identity = identify(state, headers);
    if identity == Identity::Anonymous && !PUBLIC_PATHS.contains(&path) {
        return Err(ApiError::unauthorized());
    }
    if request.method() != Method::POST {
        return Ok(());
    }
    let session_path = path == "/api/login" || path == "/api/logout";
    if state.read_only && !session_path {
        return Err(ApiError::forbidden("read_only", "the dashboard is read-only"));
    }
    check_origin(headers)?;
    if identity != Identity::Bearer {
        let cookie = cookie(headers, CSRF_COOKIE).unwrap_or_default();
        let header = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if cookie.is_empty() || !constant_time_eq(cookie.as_bytes(), header.as_bytes()) {
            return Err(ApiError::forbidden(
                "csrf_failed",
                "missing or wrong X-CSRF-Token header; get the token from GET /api/session",
            ));
        }
    }
    Ok(())
}

/// Refuses a cross-origin POST: a browser's `Origin` must name the host the request went to.
fn check_origin(headers: &HeaderMap) -> ApiResult<()> {
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let origin_host = origin.to_str().ok().and_then(|o| o.split_once("://")).map(|(_, host)| host);
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match (origin_host, host) {
        (Some(origin_host), Some(host)) if origin_host.eq_ignore_ascii_case(host) => Ok(()),
        _ => Err(ApiError::forbidden("cross_origin", "cross-origin requests are refused")),
    }
}

/// Without authentication, serves only requests addressed to an IP literal or `localhost`,
/// so a web page cannot reach a loopback dashboard through a rebound DNS name.
pub(crate) async fn host_check(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if state.auth.is_none()
        && let Some(host) = request.headers().get(header::HOST)
        && !host.to_str().is_ok_and(is_ip_or_localhost)
    {
        return ApiError::forbidden(
            "host_not_allowed",
            "without authentication the dashboard answers only to an IP address or localhost",
        )
        .into_response();
    }
    next.run(request).await
}

fn is_ip_or_localhost(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((ip, _port)) => return ip.parse::<std::net::Ipv6Addr>().is_ok(),
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(name, _port)| name)
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok()
}

/// `GET /api/session`: what the page needs before anything else.
#[derive(Debug, Serialize)]
pub(crate) struct SessionInfo {
    auth_required: bool,
    authenticated: bool,
    read_only: bool,
    refresh_ms: u64,
    csrf_token: String,
    version: &'static str,
}

/// `GET /api/session`: whether login is needed, the UI settings, and the CSRF token (also set
/// as the `asynq_csrf` cookie when the request carries no usable one).
pub(crate) async fn session(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let existing = cookie(&headers, CSRF_COOKIE).filter(|t| t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()));
    let csrf_token = existing.map_or_else(random_token, str::to_owned);
    let info = SessionInfo {
        auth_required: state.auth.is_some(),
        authenticated: identify(&state, &headers) != Identity::Anonymous,
        read_only: state.read_only,
        refresh_ms: u64::try_from(state.refresh.as_millis()).unwrap_or(u64::MAX),
        csrf_token: csrf_token.clone(),
        version: env!("CARGO_PKG_VERSION"),
    };
    let mut response = Json(info).into_response();
    if existing.is_none() {
        set_cookie(&mut response, &format!("{CSRF_COOKIE}={csrf_token}; Path=/; SameSite=Strict"));
    }
    response
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Login {
    token: String,
}

/// `POST /api/login` with `{"token": "..."}`: starts a session (HttpOnly, SameSite=Strict
/// cookie) when the token is right.
pub(crate) async fn login(State(state): State<AppState>, body: Bytes) -> ApiResult<Response> {
    let Some(auth) = &state.auth else {
        return Err(ApiError::new(StatusCode::CONFLICT, "auth_disabled", "this dashboard needs no login"));
    };
    let login: Login = parse_body(&body)?;
    if !auth.matches(&login.token) {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "invalid_token", "the token is wrong"));
    }
    let id = state.sessions.create();
    let mut response = StatusCode::NO_CONTENT.into_response();
    let max_age = SESSION_TTL.as_secs();
    set_cookie(&mut response, &format!("{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}"));
    Ok(response)
}

/// `POST /api/logout`: ends the session.
pub(crate) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers, SESSION_COOKIE) {
        state.sessions.remove(id);
    }
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    set_cookie(&mut response, &format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"));
    response
}

fn set_cookie(response: &mut Response, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_must_be_header_safe_and_debug_hides_them() {
        assert!(Auth::bearer("").is_err());
        assert!(Auth::bearer("has space").is_err());
        let auth = Auth::bearer("s3cret").expect("valid");
        assert!(auth.matches("s3cret"));
        assert!(!auth.matches("s3cre") && !auth.matches("s3cret!"));
        assert!(!format!("{auth:?}").contains("s3cret"));
    }

    #[test]
    fn cookies_are_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("a=1; asynq_csrf=abc"));
        headers.append(header::COOKIE, HeaderValue::from_static("asynq_session=xyz"));
        assert_eq!(cookie(&headers, CSRF_COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("xyz"));
        assert_eq!(cookie(&headers, "b"), None);
    }

    #[test]
    fn only_ip_literals_and_localhost_pass_the_host_check() {
        for ok in ["127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:80", "10.0.0.2"] {
            assert!(is_ip_or_localhost(ok), "{ok}");
        }
        for bad in ["evil.example:8080", "example.com", "[nope]:1", "localhost.evil.example"] {
            assert!(!is_ip_or_localhost(bad), "{bad}");
        }
    }

    #[test]
    fn sessions_expire_by_removal_and_are_random() {
        let sessions = Sessions::default();
        let a = sessions.create();
        let b = sessions.create();
        assert_ne!(a, b);
        assert!(sessions.is_valid(&a) && sessions.is_valid(&b));
        sessions.remove(&a);
        assert!(!sessions.is_valid(&a) && !sessions.is_valid("x"));
    }
}
