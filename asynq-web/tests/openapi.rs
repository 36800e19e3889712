//! `static/openapi.json` states what the handlers enforce: each operation's query parameters are
//! the ones its handler accepts, every bound and pattern in the file is the handler's (probed on
//! both sides of it), required bodies are required, and every status the handlers answer with
//! is declared. The probes run in-process on the memory broker; the bounds that are Rust
//! constants are compared with the file by `api::tests` too.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_memory::MemoryBroker;
use asynq_tests::FlakyBroker;
use asynq_web::{Auth, WebConfig};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use regex::Regex;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use tower::ServiceExt;

/// The CSRF token every POST carries, as cookie and header (the double submit the API checks).
const CSRF: &str = "openapi-test-csrf";

/// The codes of a 400 that refuse a path parameter.
const NAME_CODES: [&str; 11] = [
    "invalid_server_id",
    "invalid_path",
    "invalid_job_id",
    "invalid_queue",
    "invalid_task_id",
    "invalid_group",
    "invalid_entry_id",
    "invalid_workflow_id",
    "invalid_slot_key",
    "invalid_state",
    "invalid_action",
];

/// One operation of the description.
struct Operation {
    method: Method,
    path: String,
    spec: Value,
}

impl Operation {
    fn name(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The operation's parameters, `$ref`s followed.
    fn parameters(&self, doc: &Value) -> Vec<Value> {
        self.spec["parameters"].as_array().unwrap().iter().map(|p| resolve(doc, p).clone()).collect()
    }

    fn query_parameters(&self, doc: &Value) -> BTreeSet<String> {
        self.parameters(doc)
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The path with every parameter filled: `overrides` first, then a valid value.
    fn uri(&self, overrides: &[(&str, &str)], query: &str) -> String {
        let mut uri = self.path.clone();
        for (name, default) in DEFAULTS {
            let value = overrides.iter().find(|(n, _)| *n == name).map_or(default, |(_, v)| *v);
            uri = uri.replace(&format!("{{{name}}}"), &encode(value));
        }
        if query.is_empty() { uri } else { format!("{uri}?{query}") }
    }

    /// A body the operation accepts, if it takes one.
    fn body(&self) -> Option<Value> {
        match self.path.as_str() {
            "/api/login" => Some(json!({ "token": "x" })),
            "/api/queues/{queue}/batch" => Some(json!({ "action": "delete", "ids": ["x"] })),
            p if p.ends_with("/bulk") => Some(json!({ "action": "delete" })),
            _ => None,
        }
    }

    fn declared_statuses(&self) -> BTreeSet<u16> {
        self.spec["responses"].as_object().unwrap().keys().map(|k| k.parse().unwrap()).collect()
    }
}

/// A valid value of each path parameter (the task ID is the one [`memory_router`] enqueues).
const DEFAULTS: [(&str, &str); 7] = [
    ("queue", "default"),
    ("state", "pending"),
    ("id", "task-1"),
    ("action", "run"),
    ("group", "g"),
    ("entry", "e"),
    ("key", "type:t"),
];

/// Percent-encodes every byte but ASCII letters and digits.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

fn resolve<'d>(doc: &'d Value, value: &'d Value) -> &'d Value {
    match value["$ref"].as_str() {
        Some(target) => {
            let pointer = target.strip_prefix('#').expect("a local reference");
            resolve(doc, doc.pointer(pointer).unwrap_or_else(|| panic!("dangling $ref {target}")))
        }
        None => value,
    }
}

fn document() -> Value {
    serde_json::from_str(include_str!("../static/openapi.json")).expect("openapi.json is JSON")
}

fn operations(doc: &Value) -> Vec<Operation> {
    let mut operations = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, spec) in item.as_object().unwrap() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            operations.push(Operation { method, path: path.clone(), spec: spec.clone() });
        }
    }
    operations
}

/// A response: status, and the error code when there is one.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    code: Option<String>,
    text: String,
}

async fn send(router: &Router, method: &Method, uri: &str, body: Option<Value>, host: Option<&str>) -> Reply {
    let mut request = Request::builder().method(method.clone()).uri(uri);
    if method == Method::POST {
        request = request.header(header::COOKIE, format!("asynq_csrf={CSRF}")).header("x-csrf-token", CSRF);
    }
    if let Some(host) = host {
        request = request.header(header::HOST, host);
    }
    let request = match body {
        Some(body) => request.header(header::CONTENT_TYPE, "application/json").body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    };
    let response = router.clone().oneshot(request.unwrap()).await.expect("the router is infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a readable body");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let code = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
    Reply { status, code, text }
}

/// A dashboard over a memory broker holding pending task `task-1` in queue `default`.
async fn memory_router(config: impl FnOnce(WebConfig) -> WebConfig) -> Router {
    let broker = MemoryBroker::new();
    let options = TaskOptions::new().task_id("task-1");
    Client::new(broker.clone()).enqueue(&Task::new("t", "p"), options).await.unwrap();
    asynq_web::router(config(WebConfig::new(Inspector::new(broker))))
}

/// The field names in serde's "unknown field `x`, expected one of `a`, `b`" (or "expected
/// `a`"), as a query string with an unknown parameter is refused.
fn expected_fields(message: &str) -> BTreeSet<String> {
    let (_, expected) = message.split_once("expected").unwrap_or_else(|| panic!("no expected fields in {message:?}"));
    expected.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

#[tokio::test]
async fn each_operation_declares_the_query_parameters_its_handler_accepts() {
    let doc = document();
    let router = memory_router(|c| c).await;
    for op in operations(&doc) {
        let reply = send(&router, &op.method, &op.uri(&[], "undeclared_parameter=1"), op.body(), None).await;
        let accepted = if reply.code.as_deref() == Some("invalid_query") {
            assert_eq!(reply.status, StatusCode::BAD_REQUEST);
            expected_fields(&reply.text)
        } else {
            // A handler that reads no query ignores it.
            BTreeSet::new()
        };
        assert_eq!(op.query_parameters(&doc), accepted, "{}: {}", op.name(), reply.text);
    }
}

#[tokio::test]
async fn every_query_bound_in_the_file_is_the_handlers() {
    let doc = document();
    let router = memory_router(|c| c).await;
    let mut probed = 0;
    for op in operations(&doc) {
        for param in op.parameters(&doc).iter().filter(|p| p["in"] == "query") {
            let name = param["name"].as_str().unwrap();
            let schema = resolve(&doc, &param["schema"]);
            let mut cases: Vec<(String, bool)> = Vec::new();
            if let (Some(min), Some(max)) = (schema["minimum"].as_u64(), schema["maximum"].as_u64()) {
                cases.extend([(min.to_string(), true), (max.to_string(), true), ((max + 1).to_string(), false)]);
                if let Some(below) = min.checked_sub(1) {
                    cases.push((below.to_string(), false));
                }
                let default = schema["default"].as_u64().expect("a default");
                assert!((min..=max).contains(&default), "{}: default {default}", op.name());
            }
            if let Some(max) = schema["maxLength"].as_u64() {
                let max = usize::try_from(max).unwrap();
                cases.extend([("x".repeat(max), true), ("x".repeat(max + 1), false)]);
            }
            if schema["pattern"].is_string() {
                let example = schema["example"].as_str().expect("a pattern comes with an example that matches it");
                cases.extend([(example.to_owned(), true), ("not-a-match".to_owned(), false)]);
            }
            assert!(!cases.is_empty(), "{}: query parameter {name} states no bound", op.name());
            for (value, ok) in cases {
                let reply = send(&router, &op.method, &op.uri(&[], &format!("{name}={value}")), op.body(), None).await;
                let refused = reply.status == StatusCode::BAD_REQUEST;
                assert_eq!(!refused, ok, "{} with {name}={value:.20}: {reply:?}", op.name());
                probed += 1;
            }
        }
    }
    assert!(probed >= 20, "only {probed} probes");
}

#[tokio::test]
async fn path_parameters_are_refused_exactly_where_the_file_says() {
    let doc = document();
    let router = memory_router(|c| c).await;
    let samples = [
        "default",
        "with space",
        "é日本",
        "a/b",
        "a{b}",
        "}",
        " ",
        "\u{3000}\u{2003}",
        "\u{a0}x",
        "tab\there",
        "bell\u{7}",
        "del\u{7f}",
        "next\u{85}line",
        "\u{feff}",
        "run",
        "pending",
    ];
    for op in operations(&doc) {
        for param in op.parameters(&doc).iter().filter(|p| p["in"] == "path") {
            let name = param["name"].as_str().unwrap();
            let schema = resolve(&doc, &param["schema"]);
            let mut cases: Vec<(String, bool)> = Vec::new();
            if let Some(pattern) = schema["pattern"].as_str() {
                let regex = Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
                cases.extend(samples.iter().map(|s| ((*s).to_owned(), regex.is_match(s))));
                let max =
                    usize::try_from(schema["maxLength"].as_u64().expect("a maxLength beside the pattern")).unwrap();
                assert_eq!(schema["minLength"], 1, "{}: {name}", op.name());
                cases.extend([("x".repeat(max), true), ("x".repeat(max + 1), false)]);
            } else if let Some(values) = schema["enum"].as_array() {
                cases.extend(values.iter().map(|v| (v.as_str().unwrap().to_owned(), true)));
                cases.push(("bogus".to_owned(), false));
            } else {
                panic!("{}: path parameter {name} states neither a pattern nor an enum", op.name());
            }
            for (value, ok) in cases {
                let reply = send(&router, &op.method, &op.uri(&[(name, &value)], ""), op.body(), None).await;
                let refused = reply.status == StatusCode::BAD_REQUEST
                    && reply.code.as_deref().is_some_and(|code| NAME_CODES.contains(&code));
                assert_eq!(!refused, ok, "{} with {name}={value:?}: {reply:?}", op.name());
            }
        }
    }
}

#[tokio::test]
async fn required_bodies_are_required_and_optional_ones_are_not() {
    let doc = document();
    let router = memory_router(|c| c).await;
    // Logging in needs a dashboard with a token.
    let guarded = memory_router(|c| c.with_auth(Auth::bearer("token").unwrap())).await;
    for op in operations(&doc).into_iter().filter(|op| op.method == Method::POST) {
        let router = if op.path == "/api/login" { &guarded } else { &router };
        let reply = send(router, &op.method, &op.uri(&[], ""), None, None).await;
        let required = resolve(&doc, &op.spec["requestBody"])["required"].as_bool();
        match required {
            Some(true) => assert_eq!(reply.code.as_deref(), Some("invalid_body"), "{}: {reply:?}", op.name()),
            _ => assert_ne!(reply.code.as_deref(), Some("invalid_body"), "{}: {reply:?}", op.name()),
        }
        if let Some(body) = op.body() {
            assert!(required.is_some(), "{} takes a body the file does not describe", op.name());
            let reply = send(router, &op.method, &op.uri(&[], ""), Some(body), None).await;
            assert_ne!(reply.status, StatusCode::BAD_REQUEST, "{}: {reply:?}", op.name());
        }
    }
    let batch = "/api/queues/default/batch";
    let too_many: Vec<String> = (0..1001).map(|n| n.to_string()).collect();
    let reply = send(&router, &Method::POST, batch, Some(json!({ "action": "delete", "ids": too_many })), None).await;
    assert_eq!(reply.code.as_deref(), Some("invalid_ids"));
    let ids = &doc["components"]["schemas"]["BatchRequest"]["properties"]["ids"];
    assert_eq!((ids["minItems"].as_u64(), ids["maxItems"].as_u64()), (Some(1), Some(1000)));
}

#[tokio::test]
async fn every_status_the_handlers_answer_with_is_declared() {
    let doc = document();
    let open = memory_router(|c| c).await;
    let guarded = memory_router(|c| c.with_auth(Auth::bearer("token").unwrap())).await;
    let read_only = memory_router(|c| c.read_only(true)).await;
    let flaky = FlakyBroker::new(MemoryBroker::new());
    flaky.go_down();
    let down = asynq_web::router(WebConfig::new(Inspector::new(flaky)));
    let mut seen: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
    for op in operations(&doc) {
        let mut probes = vec![
            (&open, op.uri(&[], ""), op.body(), None),
            (&open, op.uri(&[("queue", "missing"), ("id", "missing")], ""), op.body(), None),
            (&open, op.uri(&[("queue", "a{b}")], ""), op.body(), None),
            (&open, op.uri(&[], ""), op.body(), Some("rebound.example")),
            (&guarded, op.uri(&[], ""), op.body(), None),
            (&read_only, op.uri(&[], ""), op.body(), None),
            (&down, op.uri(&[], ""), op.body(), None),
        ];
        if op.method == Method::POST {
            probes.push((&open, op.uri(&[], ""), None, None));
        }
        for (router, uri, body, host) in probes {
            let reply = send(router, &op.method, &uri, body, host).await;
            assert!(
                op.declared_statuses().contains(&reply.status.as_u16()),
                "{} answered {uri} with an undeclared {}: {}",
                op.name(),
                reply.status,
                reply.text
            );
            seen.entry(op.name()).or_default().insert(reply.status.as_u16());
        }
    }
    // The probes reached the statuses that matter.
    assert!(seen["GET /api/queues"].is_superset(&BTreeSet::from([200, 401, 403, 503])), "{seen:?}");
    assert!(
        seen["POST /api/queues/{queue}/pause"].is_superset(&BTreeSet::from([204, 400, 401, 403, 409, 503])),
        "{seen:?}"
    );
    assert!(seen["POST /api/login"].contains(&409), "a login without a token to check");
}
