//! Fuzzes the dashboard's request handling: the input becomes an HTTP request (method, path and
//! query, headers, body) sent through the `asynq-web` router over a memory broker holding a few
//! tasks, once without authentication and once behind a token. Every request must be answered
//! without a panic and without a 5xx: bad input is a 4xx, and the memory broker never fails.
//!
//! Input layout: byte 0 picks the method; the rest is split at the first `\n` into the request
//! target and the remainder; the remainder's lines up to the first empty one are `name: value`
//! headers, and what follows is the body.
#![no_main]

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_memory::MemoryBroker;
use asynq_web::{Auth, WebConfig};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, header};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use std::time::Duration;
use tower::ServiceExt;

const METHODS: [Method; 5] = [Method::GET, Method::POST, Method::DELETE, Method::PUT, Method::HEAD];

/// The runtime and the two routers every input goes through.
struct World {
    runtime: tokio::runtime::Runtime,
    open: Router,
    guarded: Router,
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let broker = MemoryBroker::new();
    runtime.block_on(async {
        let client = Client::new(broker.clone());
        for (id, options) in [
            ("p1", TaskOptions::new()),
            ("s1", TaskOptions::new().process_in(Duration::from_secs(600))),
            ("g1", TaskOptions::new().group("g")),
            ("c1", TaskOptions::new().queue("critical")),
        ] {
            client.enqueue(&Task::new("fuzz", r#"{"n":1}"#), options.task_id(id)).await.expect("enqueue");
        }
    });
    let inspector = Inspector::new(broker);
    let open = asynq_web::router(WebConfig::new(inspector.clone()));
    let auth = Auth::bearer("fuzz-token").expect("a valid token");
    let guarded = asynq_web::router(WebConfig::new(inspector).with_auth(auth));
    World { runtime, open, guarded }
});

/// The request `data` describes, or `None` when it is not a valid HTTP request at all.
fn request(data: &[u8]) -> Option<Request<Body>> {
    let (&method, rest) = data.split_first()?;
    let split = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let target = std::str::from_utf8(&rest[..split]).ok()?;
    let mut builder = Request::builder().method(METHODS[usize::from(method) % METHODS.len()].clone()).uri(target);
    let mut remainder = rest.get(split + 1..).unwrap_or_default();
    let mut has_host = false;
    while let Some(end) = remainder.iter().position(|&b| b == b'\n') {
        let line = &remainder[..end];
        remainder = &remainder[end + 1..];
        if line.is_empty() {
            break;
        }
        let text = std::str::from_utf8(line).ok()?;
        let (name, value) = text.split_once(':')?;
        has_host |= name.trim().eq_ignore_ascii_case("host");
        builder = builder.header(name.trim(), value.trim());
    }
    if !has_host {
        builder = builder.header(header::HOST, "127.0.0.1:8080");
    }
    builder.body(Body::from(remainder.to_vec())).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some(request) = request(data) else { return };
    let world = &*WORLD;
    let (parts, body) = request.into_parts();
    let body = world.runtime.block_on(axum::body::to_bytes(body, usize::MAX)).expect("an in-memory body");
    for router in [&world.open, &world.guarded] {
        let request = Request::from_parts(parts.clone(), Body::from(body.clone()));
        let response = world.runtime.block_on(router.clone().oneshot(request)).expect("the router is infallible");
        assert!(!response.status().is_server_error(), "{} for {:?}", response.status(), parts);
    }
});
