//! What the API tests share: a browser-like caller of the router that keeps its cookies and
//! sends the CSRF token, and the bearer token.
#![allow(dead_code)] // each test file uses its own part

use asynq_web::WebConfig;
pub(crate) mod dashboard;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Mutex;
use tower::ServiceExt;

pub(crate) const TOKEN: &str = "correct-horse-battery-staple";

/// A response, read whole.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The error code of an error response with `status`.
    pub(crate) fn error(&self, status: StatusCode) -> String {
        assert_eq!(self.status, status, "{}", self.text());
        let body = self.json();
        assert!(body["error"]["message"].is_string(), "{body}");
        body["error"]["code"].as_str().expect("an error code").to_owned()
    }

    pub(crate) fn header(&self, name: header::HeaderName) -> &str {
        self.headers.get(&name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no {name} header"))
    }
}

/// A browser-like caller: keeps the cookies it is given and sends the CSRF header on POST.
pub(crate) struct Web {
    router: Router,
    cookies: Mutex<BTreeMap<String, String>>,
    pub(crate) csrf: Mutex<String>,
}

impl Web {
    pub(crate) fn new(config: WebConfig) -> Self {
        Self { router: asynq_web::router(config), cookies: Mutex::default(), csrf: Mutex::default() }
    }

    /// A caller that has fetched its session (and so its CSRF token) already.
    pub(crate) async fn with_session(config: WebConfig) -> Self {
        let web = Self::new(config);
        let session = web.get("/api/session").await;
        assert_eq!(session.status, StatusCode::OK);
        web
    }

    pub(crate) async fn send(&self, mut request: Request<Body>) -> Reply {
        let cookie = {
            let cookies = self.cookies.lock().unwrap();
            cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
        };
        if !cookie.is_empty() && !request.headers().contains_key(header::COOKIE) {
            request.headers_mut().insert(header::COOKIE, cookie.parse().unwrap());
        }
        let response = self.router.clone().oneshot(request).await.expect("the router is infallible");
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a readable body");
        for set in headers.get_all(header::SET_COOKIE) {
            let set = set.to_str().unwrap();
            let (pair, _) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            let mut cookies = self.cookies.lock().unwrap();
            if value.is_empty() {
                cookies.remove(name);
            } else {
                cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let reply = Reply { status, headers, body };
        if reply.status == StatusCode::OK
            && reply.headers.get(header::CONTENT_TYPE).is_some_and(|c| c == "application/json")
            && let Some(token) = reply.json().get("csrf_token").and_then(Value::as_str)
        {
            *self.csrf.lock().unwrap() = token.to_owned();
        }
        reply
    }

    pub(crate) async fn get(&self, path: &str) -> Reply {
        self.send(Request::get(path).body(Body::empty()).unwrap()).await
    }

    /// A POST with the CSRF header and an optional JSON body.
    pub(crate) async fn post(&self, path: &str, body: Option<Value>) -> Reply {
        let csrf = self.csrf.lock().unwrap().clone();
        self.send(post_request(path, body).header("x-csrf-token", csrf).body_or_empty()).await
    }

    /// The JSON of a GET that must succeed.
    pub(crate) async fn read(&self, path: &str) -> Value {
        let reply = self.get(path).await;
        assert_eq!(reply.status, StatusCode::OK, "GET {path}: {}", reply.text());
        reply.json()
    }

    /// A POST that must succeed; its JSON, or null for 204.
    pub(crate) async fn act(&self, path: &str, body: Option<Value>) -> Value {
        let reply = self.post(path, body).await;
        assert!(reply.status.is_success(), "POST {path}: {} {}", reply.status, reply.text());
        if reply.status == StatusCode::NO_CONTENT { Value::Null } else { reply.json() }
    }
}

/// A request builder with a pending body.
pub(crate) struct Post {
    pub(crate) builder: axum::http::request::Builder,
    body: Option<Value>,
}

pub(crate) fn post_request(path: &str, body: Option<Value>) -> Post {
    Post { builder: Request::builder().method(Method::POST).uri(path), body }
}

impl Post {
    pub(crate) fn header(mut self, name: &str, value: impl AsRef<str>) -> Self {
        self.builder = self.builder.header(name, value.as_ref());
        self
    }

    pub(crate) fn body_or_empty(self) -> Request<Body> {
        match self.body {
            Some(body) => self
                .builder
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
            None => self.builder.body(Body::empty()).unwrap(),
        }
    }
}

pub(crate) fn queue<'v>(list: &'v Value, name: &str) -> &'v Value {
    list["queues"].as_array().unwrap().iter().find(|q| q["name"] == name).unwrap_or_else(|| panic!("no queue {name}"))
}

pub(crate) fn ids(page: &Value) -> Vec<String> {
    page["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect()
}
