//! The dashboard's JSON API, driven in-process through the router (tower's `oneshot`) against a
//! spawned redis-server holding tasks from our client and from Go asynq's fixtures: every
//! endpoint, authentication, CSRF, read-only mode, validation, 404s, the static assets and their
//! headers, and the OpenAPI description's coverage of the routes.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

use asynq_client::{Client, FlowProducer, Inspector, SchedulerEnqueueEvent, SchedulerEntry, Task, TaskOptions};
use asynq_core::broker::{SchedulerState, ServerState};
use asynq_core::workflow::{Flow, WORKFLOW_CANCELLED_ERROR};
use asynq_core::{
    Clock, Progress, QueueName, ServerInfo, ServerStatus, SimulatedClock, SystemClock, TaskId, WorkerInfo,
};
use asynq_memory::MemoryBroker;
use asynq_tests::{RedisCluster, RedisServer, load_fixture, read_fixture, redis_broker};
use asynq_web::{Auth, WebConfig};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt;

const TOKEN: &str = "correct-horse-battery-staple";

/// A response, read whole.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The error code of an error response with `status`.
    fn error(&self, status: StatusCode) -> String {
        assert_eq!(self.status, status, "{}", self.text());
        let body = self.json();
        assert!(body["error"]["message"].is_string(), "{body}");
        body["error"]["code"].as_str().expect("an error code").to_owned()
    }

    fn header(&self, name: header::HeaderName) -> &str {
        self.headers.get(&name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no {name} header"))
    }
}

/// A browser-like caller: keeps the cookies it is given and sends the CSRF header on POST.
struct Web {
    router: Router,
    cookies: Mutex<BTreeMap<String, String>>,
    csrf: Mutex<String>,
}

impl Web {
    fn new(config: WebConfig) -> Self {
        Self { router: asynq_web::router(config), cookies: Mutex::default(), csrf: Mutex::default() }
    }

    /// A caller that has fetched its session (and so its CSRF token) already.
    async fn with_session(config: WebConfig) -> Self {
        let web = Self::new(config);
        let session = web.get("/api/session").await;
        assert_eq!(session.status, StatusCode::OK);
        web
    }

    async fn send(&self, mut request: Request<Body>) -> Reply {
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

    async fn get(&self, path: &str) -> Reply {
        self.send(Request::get(path).body(Body::empty()).unwrap()).await
    }

    /// A POST with the CSRF header and an optional JSON body.
    async fn post(&self, path: &str, body: Option<Value>) -> Reply {
        let csrf = self.csrf.lock().unwrap().clone();
        self.send(post_request(path, body).header("x-csrf-token", csrf).body_or_empty()).await
    }

    /// The JSON of a GET that must succeed.
    async fn read(&self, path: &str) -> Value {
        let reply = self.get(path).await;
        assert_eq!(reply.status, StatusCode::OK, "GET {path}: {}", reply.text());
        reply.json()
    }

    /// A POST that must succeed; its JSON, or null for 204.
    async fn act(&self, path: &str, body: Option<Value>) -> Value {
        let reply = self.post(path, body).await;
        assert!(reply.status.is_success(), "POST {path}: {} {}", reply.status, reply.text());
        if reply.status == StatusCode::NO_CONTENT { Value::Null } else { reply.json() }
    }
}

/// A request builder with a pending body.
struct Post {
    builder: axum::http::request::Builder,
    body: Option<Value>,
}

fn post_request(path: &str, body: Option<Value>) -> Post {
    Post { builder: Request::builder().method(Method::POST).uri(path), body }
}

impl Post {
    fn header(mut self, name: &str, value: impl AsRef<str>) -> Self {
        self.builder = self.builder.header(name, value.as_ref());
        self
    }

    fn body_or_empty(self) -> Request<Body> {
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

/// A redis-server holding Go asynq's fixtures (queues `interop` and `interop-processed`), tasks
/// of ours in queue `web`, a server with one worker, and a scheduler entry with history.
struct Fixture {
    redis: RedisServer,
    inspector: Inspector,
    json_task: String,
    binary_task: String,
    scheduled_task: String,
}

async fn fixture() -> Fixture {
    let redis = RedisServer::start();
    load_fixture(&redis, &read_fixture("v0.26.0-enqueued.json"));
    load_fixture(&redis, &read_fixture("v0.26.0-processed.json"));
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let client = Client::new(broker.clone());
    let web = TaskOptions::new().queue("web");
    let json_task = client
        .enqueue(
            &Task::new("email:send", r#"{"to":"a@example.com","n":[1,2]}"#).with_header("trace", "t-1"),
            web.clone(),
        )
        .await
        .unwrap()
        .id;
    let binary_task = client.enqueue(&Task::new("blob:store", vec![0u8, 159, 146, 150]), web.clone()).await.unwrap().id;
    let later = web.clone().process_in(Duration::from_secs(3600));
    let scheduled_task = client.enqueue(&Task::new("report:build", "q3"), later.clone()).await.unwrap().id;
    client.enqueue(&Task::new("report:build", "q4"), later).await.unwrap();
    for n in 0..3 {
        client.enqueue(&Task::new("digest:add", format!("{n}")), web.clone().group("daily")).await.unwrap();
    }

    let now = SystemClock.now();
    let server = ServerInfo {
        host: "worker-1".into(),
        pid: 4242,
        server_id: "server-1".into(),
        concurrency: 10,
        // A queue pattern (Config::queue_patterns) is listed among the queues it serves.
        queues: BTreeMap::from([("web".to_owned(), 1), ("tenant:*".to_owned(), 2)]),
        strict_priority: false,
        status: ServerStatus::Active,
        started: now,
        active_workers: 1,
    };
    let worker = WorkerInfo {
        host: "worker-1".into(),
        pid: 4242,
        server_id: "server-1".into(),
        task_id: "running-1".into(),
        task_type: "email:send".into(),
        task_payload: "{}".into(),
        queue: "web".into(),
        started: now,
        deadline: now + Duration::from_secs(60),
    };
    broker.write_server_state(&server, &[worker], Duration::from_secs(3600)).await.unwrap();
    let entry = SchedulerEntry {
        id: "entry-1".into(),
        spec: "@every 30s".into(),
        task_type: "cleanup".into(),
        task_payload: "{}".into(),
        options: vec!["Queue(\"web\")".into()],
        next: Some(now + Duration::from_secs(30)),
        prev: None,
    };
    broker.write_scheduler_entries("scheduler-1", &[entry], Duration::from_secs(3600)).await.unwrap();
    let event = SchedulerEnqueueEvent { task_id: "enqueued-1".into(), enqueued_at: now };
    broker.record_scheduler_enqueue("entry-1", &event).await.unwrap();

    let inspector = Inspector::new(broker.clone());
    let (json_task, binary_task) = (json_task.into_string(), binary_task.into_string());
    Fixture { redis, inspector, json_task, binary_task, scheduled_task: scheduled_task.into_string() }
}

fn queue<'v>(list: &'v Value, name: &str) -> &'v Value {
    list["queues"].as_array().unwrap().iter().find(|q| q["name"] == name).unwrap_or_else(|| panic!("no queue {name}"))
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_endpoint_shows_our_tasks_and_go_asynqs() {
    let fx = fixture().await;
    let web = Web::with_session(WebConfig::new(fx.inspector.clone())).await;

    let queues = web.read("/api/queues").await;
    let ours = queue(&queues, "web");
    assert_eq!(
        (ours["pending"].as_u64(), ours["scheduled"].as_u64(), ours["aggregating"].as_u64()),
        (Some(2), Some(2), Some(3))
    );
    assert_eq!(ours["size"], 7);
    assert_eq!(ours["paused"], false);
    let go = queue(&queues, "interop");
    assert_eq!(
        (go["pending"].as_u64(), go["scheduled"].as_u64(), go["aggregating"].as_u64()),
        (Some(4), Some(1), Some(1)),
        "{go}"
    );
    let processed = queue(&queues, "interop-processed");
    assert_eq!(
        (processed["retry"].as_u64(), processed["archived"].as_u64(), processed["completed"].as_u64()),
        (Some(1), Some(2), Some(1))
    );

    let history = web.read("/api/history?days=3").await;
    assert_eq!(history["days"].as_array().unwrap().len(), 3);
    let one = web.read("/api/queues/interop-processed/history?days=2").await;
    let dates: Vec<&str> = one["days"].as_array().unwrap().iter().map(|d| d["date"].as_str().unwrap()).collect();
    assert!(dates.windows(2).all(|w| w[0] < w[1]), "oldest first: {dates:?}");

    let detail = web.read("/api/queues/web").await;
    assert_eq!(detail["queue"]["name"], "web");
    assert_eq!(detail["queue"]["waiting"], 0);
    assert!(detail["location"].is_null(), "a single server has no slot");

    // Listings, with paging and search.
    let pending = web.read("/api/queues/web/states/pending/tasks").await;
    assert_eq!(ids(&pending), [fx.json_task.clone(), fx.binary_task.clone()]);
    assert_eq!((pending["total"].as_u64(), pending["has_next"].as_bool()), (Some(2), Some(false)));
    let first = web.read("/api/queues/web/states/pending/tasks?page=1&size=1").await;
    assert_eq!((ids(&first), first["has_next"].as_bool()), (vec![fx.json_task.clone()], Some(true)));
    let second = web.read("/api/queues/web/states/pending/tasks?page=2&size=1").await;
    assert_eq!(ids(&second), vec![fx.binary_task.clone()]);
    let found = web.read("/api/queues/web/states/pending/tasks?search=BLOB").await;
    assert_eq!((ids(&found), found["total"].as_u64()), (vec![fx.binary_task.clone()], Some(1)));
    let prefix = &fx.json_task[..8];
    let by_id = web.read(&format!("/api/queues/web/states/pending/tasks?search={prefix}")).await;
    assert_eq!(ids(&by_id), vec![fx.json_task.clone()]);
    let go_pending = web.read("/api/queues/interop/states/pending/tasks").await;
    assert!(ids(&go_pending).contains(&"fixed-id".to_owned()), "{go_pending}");
    let archived = web.read("/api/queues/interop-processed/states/archived/tasks").await;
    assert!(archived["tasks"].as_array().unwrap().iter().all(|t| t["last_error"].is_string()), "{archived}");
    let aggregating = web.read("/api/queues/web/states/aggregating/tasks").await;
    assert_eq!(aggregating["total"], 3);
    // A search of aggregating tasks goes group by group and finds what the listing shows.
    let found = web.read("/api/queues/web/states/aggregating/tasks?search=DIGEST").await;
    assert_eq!((ids(&found), found["search_truncated"].as_bool()), (ids(&aggregating), Some(false)));
    let go_found = web.read("/api/queues/interop/states/aggregating/tasks?search=interop").await;
    assert_eq!(go_found["total"], 1, "{go_found}");

    // One task: JSON pretty-printed in its own key order, anything else as a hex dump.
    let task = web.read(&format!("/api/queues/web/tasks/{}", fx.json_task)).await;
    assert_eq!((task["type"].as_str(), task["state"].as_str()), (Some("email:send"), Some("pending")));
    assert_eq!(task["payload"]["format"], "json");
    assert_eq!(task["payload"]["text"], "{\n  \"to\": \"a@example.com\",\n  \"n\": [\n    1,\n    2\n  ]\n}");
    assert_eq!(task["headers"]["trace"], "t-1");
    assert_eq!((&task["priority"], &task["workflow"]), (&json!(0), &Value::Null), "the defaults");
    assert_eq!((&task["parked"], &task["steps"]), (&Value::Null, &json!([])), "no durable steps");
    let binary = web.read(&format!("/api/queues/web/tasks/{}", fx.binary_task)).await;
    assert_eq!(binary["payload"]["format"], "hex");
    assert!(binary["payload"]["text"].as_str().unwrap().starts_with("00000000  00 9f 92 96"), "{binary}");
    let retry = web.read("/api/queues/interop-processed/states/retry/tasks").await;
    let retry_id = ids(&retry).pop().expect("Go's retry task");
    let go_task = web.read(&format!("/api/queues/interop-processed/tasks/{retry_id}")).await;
    assert_eq!((go_task["state"].as_str(), go_task["retried"].as_u64()), (Some("retry"), Some(1)), "{go_task}");
    assert!(go_task["next_process_at"].is_string());
    let completed = web.read("/api/queues/interop-processed/states/completed/tasks").await;
    let completed_id = ids(&completed).pop().expect("Go's completed task");
    let go_completed = web.read(&format!("/api/queues/interop-processed/tasks/{completed_id}")).await;
    assert!(go_completed["completed_at"].is_string(), "{go_completed}");

    // Groups.
    let groups = web.read("/api/queues/web/groups").await;
    assert_eq!(groups["groups"], json!([{ "group": "daily", "size": 3 }]));
    let group_tasks = web.read("/api/queues/web/groups/daily/tasks?size=2").await;
    assert_eq!((group_tasks["tasks"].as_array().unwrap().len(), group_tasks["has_next"].as_bool()), (2, Some(true)));
    let go_groups = web.read("/api/queues/interop/groups").await;
    assert_eq!(go_groups["groups"][0]["group"], "g1");

    // Servers, schedulers, Redis.
    let servers = web.read("/api/servers").await;
    let server = &servers["servers"][0];
    assert_eq!(
        (server["id"].as_str(), server["host"].as_str(), server["status"].as_str()),
        (Some("server-1"), Some("worker-1"), Some("active"))
    );
    assert_eq!(server["workers"][0]["task_id"], "running-1");
    assert_eq!(server["queues"], json!({ "tenant:*": 2, "web": 1 }), "a pattern is listed as the heartbeat has it");
    let entries = web.read("/api/schedulers").await;
    assert_eq!(
        (entries["entries"][0]["id"].as_str(), entries["entries"][0]["spec"].as_str()),
        (Some("entry-1"), Some("@every 30s"))
    );
    let events = web.read("/api/schedulers/entry-1/history").await;
    assert_eq!(events["events"][0]["task_id"], "enqueued-1");
    let redis = web.read("/api/redis").await;
    assert_eq!(redis["kind"], "redis");
    assert_eq!(redis["namespace"], "asynq");
    assert!(
        redis["version"].is_string()
            && redis["used_memory_human"].is_string()
            && redis["connected_clients"].is_string(),
        "{redis}"
    );
    assert_eq!(redis["nodes"].as_array().unwrap().len(), 1);
    assert_eq!(redis["queue_locations"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_change_queues_and_tasks() {
    let fx = fixture().await;
    let web = Web::with_session(WebConfig::new(fx.inspector.clone())).await;

    // Pause and unpause; pausing twice is a conflict.
    web.act("/api/queues/web/pause", None).await;
    assert_eq!(queue(&web.read("/api/queues").await, "web")["paused"], true);
    assert_eq!(web.post("/api/queues/web/pause", None).await.error(StatusCode::CONFLICT), "failed_precondition");
    web.act("/api/queues/web/unpause", None).await;
    assert_eq!(queue(&web.read("/api/queues").await, "web")["paused"], false);

    // One task at a time.
    web.act(&format!("/api/queues/web/tasks/{}/run", fx.scheduled_task), None).await;
    assert_eq!(fx.inspector.task_info("web", &fx.scheduled_task).await.unwrap().state.as_str(), "pending");
    web.act(&format!("/api/queues/web/tasks/{}/archive", fx.scheduled_task), None).await;
    assert_eq!(fx.inspector.task_info("web", &fx.scheduled_task).await.unwrap().state.as_str(), "archived");
    web.act(&format!("/api/queues/web/tasks/{}/delete", fx.scheduled_task), None).await;
    let gone = web.get(&format!("/api/queues/web/tasks/{}", fx.scheduled_task)).await;
    assert_eq!(gone.error(StatusCode::NOT_FOUND), "task_not_found");
    let cancel = web.post(&format!("/api/queues/web/tasks/{}/cancel", fx.json_task), None).await;
    assert_eq!(cancel.error(StatusCode::CONFLICT), "failed_precondition");
    let run_pending = web.post(&format!("/api/queues/web/tasks/{}/run", fx.json_task), None).await;
    assert_eq!(run_pending.error(StatusCode::CONFLICT), "failed_precondition");

    // A selection, reporting each task's outcome.
    let batch = web
        .act("/api/queues/web/batch", Some(json!({ "action": "archive", "ids": [fx.json_task, "no-such-task"] })))
        .await;
    assert_eq!(batch["succeeded"], json!([fx.json_task]));
    assert_eq!(batch["failed"][0]["id"], "no-such-task");
    assert_eq!(batch["failed"][0]["code"], "task_not_found");

    // Every task of a state, of a group.
    let bulk = web.act("/api/queues/web/states/archived/bulk", Some(json!({ "action": "run" }))).await;
    assert_eq!(bulk["count"], 1);
    let bulk = web.act("/api/queues/web/groups/daily/bulk", Some(json!({ "action": "archive" }))).await;
    assert_eq!(bulk["count"], 3);
    let go_bulk =
        web.act("/api/queues/interop-processed/states/archived/bulk", Some(json!({ "action": "delete" }))).await;
    assert_eq!(go_bulk["count"], 2);
    let active = web.post("/api/queues/web/states/active/bulk", Some(json!({ "action": "delete" }))).await;
    assert_eq!(active.error(StatusCode::BAD_REQUEST), "invalid_argument");

    // Delete a queue: refused while it holds tasks, unless forced.
    let refused = web.post("/api/queues/web/delete", Some(json!({ "force": false }))).await;
    assert_eq!(refused.error(StatusCode::CONFLICT), "queue_not_empty");
    web.act("/api/queues/web/delete", Some(json!({ "force": true }))).await;
    let names = web.read("/api/queues").await;
    assert!(names["queues"].as_array().unwrap().iter().all(|q| q["name"] != "web"), "{names}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_requires_the_token_or_a_login_session() {
    let inspector = Inspector::new(MemoryBroker::new());
    let config = WebConfig::new(inspector).with_auth(Auth::bearer(TOKEN).unwrap());
    let web = Web::with_session(config).await;

    let session = web.read("/api/session").await;
    assert_eq!((session["auth_required"].as_bool(), session["authenticated"].as_bool()), (Some(true), Some(false)));
    let denied = web.get("/api/queues").await;
    assert_eq!(denied.error(StatusCode::UNAUTHORIZED), "unauthorized");
    assert_eq!(denied.header(header::WWW_AUTHENTICATE), "Bearer");
    for path in ["/api/servers", "/api/redis", "/api/schedulers", "/api/history"] {
        assert_eq!(web.get(path).await.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    assert_eq!(web.post("/api/queues/default/pause", None).await.status, StatusCode::UNAUTHORIZED);
    // The page itself and the API description stay public.
    assert_eq!(web.get("/").await.status, StatusCode::OK);
    assert_eq!(web.get("/api/openapi.json").await.status, StatusCode::OK);

    // API clients send the bearer token; a wrong one is refused.
    let bearer = |token: &str| Request::get("/api/queues").header(header::AUTHORIZATION, format!("Bearer {token}"));
    let fresh = Web::new(WebConfig::new(Inspector::new(MemoryBroker::new())).with_auth(Auth::bearer(TOKEN).unwrap()));
    assert_eq!(fresh.send(bearer(TOKEN).body(Body::empty()).unwrap()).await.status, StatusCode::OK);
    assert_eq!(fresh.send(bearer("wrong").body(Body::empty()).unwrap()).await.status, StatusCode::UNAUTHORIZED);

    // Browsers log in: a wrong token is refused, the right one sets an HttpOnly session cookie.
    let wrong = web.post("/api/login", Some(json!({ "token": "nope" }))).await;
    assert_eq!(wrong.error(StatusCode::UNAUTHORIZED), "invalid_token");
    let login = web.post("/api/login", Some(json!({ "token": TOKEN }))).await;
    assert_eq!(login.status, StatusCode::NO_CONTENT, "{}", login.text());
    let cookie = login.header(header::SET_COOKIE);
    assert!(cookie.starts_with("asynq_session=") && !cookie.contains(TOKEN), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie} lacks {attribute}");
    }
    assert_eq!(web.read("/api/queues").await, json!({ "queues": [], "eviction_risks": [] }));
    assert_eq!(web.read("/api/session").await["authenticated"], true);

    // Logging out ends the session.
    assert_eq!(web.post("/api/logout", None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(web.get("/api/queues").await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_need_the_csrf_token_unless_sent_with_a_bearer_token() {
    let broker = MemoryBroker::new();
    Client::new(broker.clone()).enqueue(&Task::new("t", "p"), TaskOptions::new()).await.unwrap();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker.clone()))).await;

    let session = web.read("/api/session").await;
    let token = session["csrf_token"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 64);
    let without = web.send(post_request("/api/queues/default/pause", None).body_or_empty()).await;
    assert_eq!(without.error(StatusCode::FORBIDDEN), "csrf_failed");
    let wrong = web
        .send(post_request("/api/queues/default/pause", None).header("x-csrf-token", "0".repeat(64)).body_or_empty())
        .await;
    assert_eq!(wrong.error(StatusCode::FORBIDDEN), "csrf_failed");
    let no_cookie = post_request("/api/queues/default/pause", None)
        .header("x-csrf-token", &token)
        .header("cookie", "other=1")
        .body_or_empty();
    assert_eq!(web.send(no_cookie).await.error(StatusCode::FORBIDDEN), "csrf_failed");
    let cross = post_request("/api/queues/default/pause", None)
        .header("x-csrf-token", &token)
        .header("origin", "http://evil.example")
        .header("host", "127.0.0.1:8080")
        .body_or_empty();
    assert_eq!(web.send(cross).await.error(StatusCode::FORBIDDEN), "cross_origin");
    let same = post_request("/api/queues/default/pause", None)
        .header("x-csrf-token", &token)
        .header("origin", "http://127.0.0.1:8080")
        .header("host", "127.0.0.1:8080")
        .body_or_empty();
    assert_eq!(web.send(same).await.status, StatusCode::NO_CONTENT);
    assert!(Inspector::new(broker.clone()).queue_info("default").await.unwrap().paused);

    // A bearer token is no ambient credential: no CSRF token needed.
    let authed = Web::new(WebConfig::new(Inspector::new(broker.clone())).with_auth(Auth::bearer(TOKEN).unwrap()));
    let request = post_request("/api/queues/default/unpause", None)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body_or_empty();
    assert_eq!(authed.send(request).await.status, StatusCode::NO_CONTENT);
    // A session cookie is: it needs the CSRF token.
    let browser =
        Web::with_session(WebConfig::new(Inspector::new(broker)).with_auth(Auth::bearer(TOKEN).unwrap())).await;
    let login = browser.send(post_request("/api/login", Some(json!({ "token": TOKEN }))).body_or_empty()).await;
    assert_eq!(login.error(StatusCode::FORBIDDEN), "csrf_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_mode_refuses_every_mutation() {
    let fx = fixture().await;
    let web = Web::with_session(WebConfig::new(fx.inspector.clone()).read_only(true)).await;
    assert_eq!(web.read("/api/session").await["read_only"], true);
    let task = format!("/api/queues/web/tasks/{}", fx.json_task);
    let mutations = [
        ("/api/queues/web/pause".to_owned(), None),
        ("/api/queues/web/delete".to_owned(), Some(json!({ "force": true }))),
        (format!("{task}/delete"), None),
        ("/api/queues/web/batch".to_owned(), Some(json!({ "action": "delete", "ids": [fx.json_task] }))),
        ("/api/queues/web/states/pending/bulk".to_owned(), Some(json!({ "action": "delete" }))),
        ("/api/queues/web/groups/daily/bulk".to_owned(), Some(json!({ "action": "delete" }))),
        ("/api/workflows/any/cancel".to_owned(), None),
        ("/api/servers/server-1/quiet".to_owned(), None),
        ("/api/servers/server-1/stop".to_owned(), None),
    ];
    for (path, body) in mutations {
        assert_eq!(web.post(&path, body).await.error(StatusCode::FORBIDDEN), "read_only", "{path}");
    }
    assert_eq!(web.read(&task).await["state"], "pending");
    assert_eq!(queue(&web.read("/api/queues").await, "web")["size"], 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_400_with_a_code_and_missing_things_a_404() {
    let fx = fixture().await;
    let web = Web::with_session(WebConfig::new(fx.inspector.clone())).await;
    let bad_reads = [
        ("/api/queues/web/states/bogus/tasks", "invalid_state"),
        ("/api/queues/web/states/pending/tasks?size=1000", "invalid_page_size"),
        ("/api/queues/web/states/pending/tasks?size=0", "invalid_page_size"),
        ("/api/queues/web/states/pending/tasks?page=0", "invalid_page"),
        ("/api/queues/web/states/pending/tasks?page=x", "invalid_query"),
        ("/api/queues/web/states/pending/tasks?colour=red", "invalid_query"),
        ("/api/queues/a%7Bb%7D", "invalid_queue"),
        ("/api/queues/%20/history", "invalid_queue"),
        ("/api/queues/web/history?days=0", "invalid_days"),
        ("/api/history?days=1000", "invalid_days"),
        ("/api/queues/web/tasks/%20", "invalid_task_id"),
        ("/api/schedulers/%20/history", "invalid_entry_id"),
    ];
    for (path, code) in bad_reads {
        assert_eq!(web.get(path).await.error(StatusCode::BAD_REQUEST), code, "{path}");
    }
    let long_search = format!("/api/queues/web/states/pending/tasks?search={}", "x".repeat(300));
    assert_eq!(web.get(&long_search).await.error(StatusCode::BAD_REQUEST), "invalid_search");
    let bad_posts = [
        ("/api/queues/web/tasks/x/explode", None, "invalid_action"),
        ("/api/queues/web/batch", Some(json!({ "action": "run", "ids": [] })), "invalid_ids"),
        ("/api/queues/web/batch", Some(json!({ "action": "fly", "ids": ["a"] })), "invalid_body"),
        ("/api/queues/web/states/pending/bulk", Some(json!({ "action": "cancel" })), "invalid_action"),
        ("/api/queues/web/states/pending/bulk", None, "invalid_body"),
        ("/api/queues/web/delete", Some(json!({ "force": "yes" })), "invalid_body"),
        ("/api/queues/a%7Bb%7D/pause", None, "invalid_queue"),
    ];
    for (path, body, code) in bad_posts {
        assert_eq!(web.post(path, body).await.error(StatusCode::BAD_REQUEST), code, "{path}");
    }
    let garbage = post_request("/api/queues/web/batch", None)
        .header("x-csrf-token", web.csrf.lock().unwrap().clone())
        .builder
        .body(Body::from("{not json"))
        .unwrap();
    assert_eq!(web.send(garbage).await.error(StatusCode::BAD_REQUEST), "invalid_body");

    assert_eq!(web.get("/api/queues/nope").await.error(StatusCode::NOT_FOUND), "queue_not_found");
    assert_eq!(web.get("/api/queues/nope/states/pending/tasks").await.error(StatusCode::NOT_FOUND), "queue_not_found");
    assert_eq!(web.get("/api/queues/web/tasks/nope").await.error(StatusCode::NOT_FOUND), "task_not_found");
    assert_eq!(web.post("/api/queues/web/tasks/nope/run", None).await.error(StatusCode::NOT_FOUND), "task_not_found");
    assert_eq!(web.get("/api/nothing-here").await.error(StatusCode::NOT_FOUND), "not_found");
    assert_eq!(web.get("/secret.txt").await.error(StatusCode::NOT_FOUND), "not_found");
    assert_eq!(web.get("/api/queues/web/pause").await.error(StatusCode::METHOD_NOT_ALLOWED), "method_not_allowed");
    let delete = Request::delete("/api/queues/web").body(Body::empty()).unwrap();
    assert_eq!(web.send(delete).await.error(StatusCode::METHOD_NOT_ALLOWED), "method_not_allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_outage_is_a_503_that_names_no_url() {
    let mut fx = fixture().await;
    let web = Web::with_session(WebConfig::new(fx.inspector.clone())).await;
    fx.redis.kill();
    let reply = web.get("/api/queues").await;
    assert!(matches!(reply.status, StatusCode::SERVICE_UNAVAILABLE | StatusCode::INTERNAL_SERVER_ERROR), "{reply:?}");
    let text = reply.text();
    assert!(!text.contains("redis://") && !text.contains("127.0.0.1"), "{text}");
    assert!(reply.json()["error"]["code"].as_str().unwrap().starts_with("backend_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_assets_are_served_with_a_strict_policy() {
    let web = Web::new(WebConfig::new(Inspector::new(MemoryBroker::new())));
    let index = web.get("/").await;
    assert_eq!(index.status, StatusCode::OK);
    assert_eq!(index.header(header::CONTENT_TYPE), "text/html; charset=utf-8");
    assert_eq!(index.header(header::CACHE_CONTROL), "no-cache");
    let csp = index.header(header::CONTENT_SECURITY_POLICY);
    for directive in ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{csp}");
    assert_eq!(index.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
    assert_eq!(index.header(header::REFERRER_POLICY), "no-referrer");
    let html = index.text();
    assert!(html.contains("id=\"login\"") && html.contains("id=\"last-updated\"") && html.contains("id=\"error\""));
    assert!(!html.contains("<script>") && !html.contains("<style"), "no inline code");
    let scripts: Vec<&str> = html.split("<script src=\"").skip(1).filter_map(|s| s.split('"').next()).collect();
    let names =
        ["core.js", "charts.js", "overview.js", "queue.js", "workflows.js", "system.js", "app.js", "metrics.js"];
    assert_eq!(scripts.len(), names.len(), "{scripts:?}");
    for (script, name) in scripts.iter().zip(names) {
        assert!(script.starts_with(&format!("/assets/{name}?v=")), "{script}");
    }

    let scripts = scripts.into_iter().map(|script| (script, "text/javascript; charset=utf-8"));
    for (path, content_type) in
        scripts.chain([("/assets/app.css", "text/css; charset=utf-8"), ("/assets/favicon.svg", "image/svg+xml")])
    {
        let asset = web.get(path).await;
        assert_eq!(asset.status, StatusCode::OK, "{path}");
        assert_eq!(asset.header(header::CONTENT_TYPE), content_type, "{path}");
        assert!(asset.header(header::CACHE_CONTROL).contains("immutable"), "{path}");
        assert!(asset.headers.contains_key(header::CONTENT_SECURITY_POLICY), "{path}");
        if content_type.starts_with("text/javascript") {
            assert!(asset.text().contains("window.asynqDashboard"), "{path} shares its parts");
        }
    }
    let api = web.get("/api/session").await;
    assert_eq!(api.header(header::CACHE_CONTROL), "no-store");
    assert_eq!(api.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
    assert!(api.header(header::SET_COOKIE).contains("SameSite=Strict"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_only_ip_and_localhost_hosts_are_served() {
    let open = Web::new(WebConfig::new(Inspector::new(MemoryBroker::new())));
    let with_host = |host: &str| Request::get("/api/session").header(header::HOST, host).body(Body::empty()).unwrap();
    assert_eq!(open.send(with_host("rebound.evil.example")).await.error(StatusCode::FORBIDDEN), "host_not_allowed");
    for host in ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"] {
        assert_eq!(open.send(with_host(host)).await.status, StatusCode::OK, "{host}");
    }
    let guarded = Web::new(WebConfig::new(Inspector::new(MemoryBroker::new())).with_auth(Auth::bearer(TOKEN).unwrap()));
    assert_eq!(guarded.send(with_host("dash.example.com")).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_description_covers_every_route() {
    let web = Web::new(WebConfig::new(Inspector::new(MemoryBroker::new())));
    let doc = web.read("/api/openapi.json").await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let described: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |m| (m.to_uppercase(), path.clone())))
        .collect();
    let served: BTreeSet<(String, String)> =
        asynq_web::api_routes().into_iter().map(|r| (r.method.to_owned(), r.path.to_owned())).collect();
    assert_eq!(served, described);
    // Every reference resolves.
    let text = doc.to_string();
    for reference in text.split("\"$ref\":\"#/components/").skip(1) {
        let target = reference.split('"').next().unwrap();
        let (kind, name) = target.split_once('/').unwrap();
        assert!(doc["components"][kind][name].is_object(), "dangling $ref {target}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_and_the_redis_page_carry_the_eviction_risk() {
    let memory = Web::new(WebConfig::new(Inspector::new(MemoryBroker::new())));
    assert_eq!(memory.read("/api/queues").await["eviction_risks"], json!([]), "the memory broker never evicts");
    assert_eq!(memory.read("/api/redis").await["eviction_risks"], json!([]));
    assert_eq!(memory.read("/api/redis").await["namespace"], json!(null));

    let fx = fixture().await;
    let web = Web::new(WebConfig::new(fx.inspector.clone()));
    assert_eq!(web.read("/api/queues").await["eviction_risks"], json!([]), "noeviction keeps every task");
    fx.redis.command(&["CONFIG", "SET", "maxmemory-policy", "volatile-lfu"]).unwrap();
    let overview = web.read("/api/queues").await;
    let risks = overview["eviction_risks"].as_array().expect("an array");
    assert_eq!(risks.len(), 1, "{overview}");
    assert_eq!(risks[0]["policy"], "volatile-lfu");
    let warning = risks[0]["warning"].as_str().unwrap();
    assert!(warning.contains("maxmemory-policy volatile-lfu") && warning.contains("noeviction"), "{warning}");
    assert_eq!(queue(&overview, "web")["size"], 7, "the queues are listed as before");
    assert_eq!(web.read("/api/redis").await["eviction_risks"], overview["eviction_risks"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_the_redis_page_lists_nodes_and_queue_slots() {
    let cluster = RedisCluster::start(3);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    let broker = redis_broker(&url, Arc::new(SystemClock)).await;
    Client::new(broker.clone()).enqueue(&Task::new("t", "p"), TaskOptions::new().queue("critical")).await.unwrap();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;
    let redis = web.read("/api/redis").await;
    assert_eq!(redis["kind"], "redis-cluster");
    assert_eq!(redis["nodes"].as_array().unwrap().len(), 3);
    let location = &redis["queue_locations"][0];
    assert_eq!(location["queue"], "critical");
    let slot = u16::try_from(location["slot"].as_u64().unwrap()).unwrap();
    assert_eq!(slot, RedisCluster::key_slot("asynq:{critical}:pending"));
    let detail = web.read("/api/queues/critical").await;
    assert_eq!(detail["location"]["slot"], location["slot"]);
    assert_eq!(web.read("/api/queues/critical/states/pending/tasks").await["total"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_served_beside_the_dashboard_need_its_token() {
    let scrape = || async { "asynq_tasks_enqueued_total 3\n" };
    let metrics = Router::new().route("/metrics", axum::routing::get(scrape));
    let inspector = Inspector::new(MemoryBroker::new());
    let web = Web::new(WebConfig::new(inspector).with_auth(Auth::bearer(TOKEN).unwrap()).with_metrics(metrics));

    let denied = web.get("/metrics").await;
    assert_eq!(denied.error(StatusCode::UNAUTHORIZED), "unauthorized");
    let bearer = Request::get("/metrics").header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    let scraped = web.send(bearer.body(Body::empty()).unwrap()).await;
    assert_eq!((scraped.status, scraped.text()), (StatusCode::OK, "asynq_tasks_enqueued_total 3\n".to_owned()));
    assert_eq!(scraped.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff", "the dashboard's headers apply too");
    // The dashboard itself is unchanged.
    assert_eq!(web.get("/").await.status, StatusCode::OK);
    assert_eq!(web.get("/api/queues").await.status, StatusCode::UNAUTHORIZED);

    // Without metrics, /metrics is the dashboard's 404.
    let plain = Web::new(WebConfig::new(Inspector::new(MemoryBroker::new())));
    assert_eq!(plain.get("/metrics").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn a_queue_s_last_hour_is_sampled_from_the_first_request() {
    use asynq_core::broker::{Dequeue, Outcome};
    let clock = Arc::new(asynq_tests::TokioClock::new(std::time::UNIX_EPOCH + Duration::from_secs(1_795_000_000)));
    let broker = MemoryBroker::with_clock(clock.clone());
    let client = Client::new(broker.clone()).with_clock(clock.clone());
    for i in 0..10 {
        client.enqueue(&Task::new("job", i.to_string()), TaskOptions::new().queue("q")).await.unwrap();
    }
    let web = Web::new(WebConfig::new(Inspector::new(broker.clone())));
    let series = web.read("/api/queues/q/series").await;
    assert_eq!(series["interval_seconds"], 10);
    // The first request started the sampler: its first sample is taken at once.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let first = web.read("/api/queues/q/series").await;
    assert_eq!(first["samples"].as_array().map(Vec::len), Some(1), "{first}");
    assert_eq!(first["samples"][0]["pending"], 10);
    assert_eq!(first["samples"][0]["processed_per_second"], Value::Null, "no rate before a second sample");

    let taken = broker.dequeue(&[asynq_core::QueueName::from_static("q")], 5).await.unwrap();
    for task in &taken {
        broker.finish(&task.message, Outcome::Done).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    let second = web.read("/api/queues/q/series").await;
    let samples = second["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "{second}");
    assert_eq!((samples[1]["pending"].as_u64(), samples[1]["active"].as_u64()), (Some(5), Some(0)));
    assert_eq!(samples[1]["processed_per_second"].as_f64(), Some(0.5), "5 tasks in 10 s");
    assert_eq!(samples[1]["failed_per_second"].as_f64(), Some(0.0));
    assert_eq!(web.get("/api/queues/nope/series").await.status, StatusCode::NOT_FOUND);
}

/// A step of a workflow in queue `queue`, with task ID `id`.
fn step(queue: &str, id: &str) -> Flow {
    Flow::task(Task::new("media:step", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_are_listed_shown_with_their_edges_and_cancelled() {
    use asynq_core::broker::{Dequeue, Outcome};
    let redis = RedisServer::start();
    let clock = Arc::new(SimulatedClock::new(SystemClock.now()));
    let broker = redis_broker(&redis.url(), clock.clone()).await;
    let producer = FlowProducer::new(broker.clone());
    let solo = producer.enqueue(&step("misc", "solo")).await.unwrap().id.into_string();
    clock.advance(Duration::from_secs(10));
    // A chord of three members, then a chain of two.
    let kept = Flow::task(
        Task::new("media:step", "m1"),
        TaskOptions::new().queue("media").task_id("m1").retention(Duration::from_secs(3600)),
    );
    let chord = Flow::chord([kept, step("media", "m2"), step("media", "m3")], step("media", "merge"));
    let media = producer.enqueue(&chord.then(step("media", "publish"))).await.unwrap().id.into_string();
    let taken = broker.dequeue(&[QueueName::from_static("media")], 3).await.unwrap();
    let message = |id: &str| &taken.iter().find(|t| t.message.id == id).expect("a member was taken").message;
    let (q, m1) = (QueueName::from_static("media"), TaskId::from_static("m1"));
    broker.write_result(&q, &m1, Bytes::from_static(b"thumb.png")).await.unwrap();
    broker.finish(message("m1"), Outcome::Complete).await.unwrap();
    broker.finish(message("m2"), Outcome::Done).await.unwrap();
    let report = Progress::new(0.5, "encoding", clock.now()).unwrap();
    broker.write_progress(&q, &TaskId::from_static("m3"), &report).await.unwrap();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker.clone()))).await;

    // The list: newest first, with sizes and states, paged.
    let list = web.read("/api/workflows").await;
    let rows: Vec<(&str, u64, &str)> = list["workflows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["id"].as_str().unwrap(), w["tasks"].as_u64().unwrap(), w["state"].as_str().unwrap()))
        .collect();
    assert_eq!(rows, [(media.as_str(), 5, "running"), (solo.as_str(), 1, "running")]);
    assert_eq!(list["has_next"], false);
    let first = web.read("/api/workflows?size=1").await;
    assert_eq!((first["workflows"][0]["id"].as_str(), &first["has_next"]), (Some(media.as_str()), &json!(true)));
    let second = web.read("/api/workflows?size=1&page=2").await;
    assert_eq!((second["workflows"][0]["id"].as_str(), &second["has_next"]), (Some(solo.as_str()), &json!(false)));

    // One workflow: its state, counts, graph (every task with its parents) and a page of tasks.
    let shown = web.read(&format!("/api/workflows/{media}")).await;
    assert_eq!((&shown["state"], &shown["total"], &shown["graph_limit"]), (&json!("running"), &json!(5), &json!(300)));
    assert_eq!(shown["counts"], json!({ "active": 1, "completed": 1, "succeeded": 1, "waiting": 2 }));
    let graph = shown["graph"].as_array().expect("a workflow of five tasks is drawn");
    let edges: Vec<(&str, &str, Value)> =
        graph.iter().map(|t| (t["id"].as_str().unwrap(), t["state"].as_str().unwrap(), t["parents"].clone())).collect();
    assert_eq!(
        edges,
        [
            ("m1", "completed", json!([])),
            ("m2", "succeeded", json!([])),
            ("m3", "active", json!([])),
            ("merge", "waiting", json!([0, 1, 2])),
            ("publish", "waiting", json!([3])),
        ]
    );
    assert_eq!(shown["tasks"], shown["graph"], "one page holds every task");
    let m1 = &graph[0];
    assert_eq!(
        (&m1["type"], &m1["result_size"], &m1["result_preview"]),
        (&json!("media:step"), &json!(9), &json!("thumb.png"))
    );
    assert_eq!(
        (&graph[1]["type"], &graph[1]["queue"]),
        (&json!("media:step"), &json!("media")),
        "a task that succeeded without retention keeps its type"
    );
    assert_eq!(
        (&graph[2]["progress"]["fraction"], &graph[2]["progress"]["message"]),
        (&json!(0.5), &json!("encoding"))
    );
    let page = web.read(&format!("/api/workflows/{media}?page=2&size=3")).await;
    let indices: Vec<&Value> = page["tasks"].as_array().unwrap().iter().map(|t| &t["index"]).collect();
    assert_eq!((indices, &page["has_next"]), (vec![&json!(3), &json!(4)], &json!(false)));

    assert_eq!(web.get("/api/workflows/nope").await.error(StatusCode::NOT_FOUND), "workflow_not_found");
    assert_eq!(web.post("/api/workflows/nope/cancel", None).await.error(StatusCode::NOT_FOUND), "workflow_not_found");
    assert_eq!(web.get("/api/workflows/%20").await.error(StatusCode::BAD_REQUEST), "invalid_workflow_id");
    assert_eq!(web.get("/api/workflows?size=0").await.error(StatusCode::BAD_REQUEST), "invalid_page_size");

    // Read-only: no cancel.
    let read_only = Web::with_session(WebConfig::new(Inspector::new(broker.clone())).read_only(true)).await;
    let refused = read_only.post(&format!("/api/workflows/{solo}/cancel"), None).await;
    assert_eq!(refused.error(StatusCode::FORBIDDEN), "read_only");
    assert_eq!(web.read(&format!("/api/workflows/{solo}")).await["state"], "running");

    // Cancelled: what is still to run is archived, what runs is asked to stop.
    assert_eq!(web.act(&format!("/api/workflows/{solo}/cancel"), None).await, json!({ "archived": 1, "stopping": 0 }));
    assert_eq!(web.read(&format!("/api/workflows/{solo}")).await["state"], "cancelled");
    let done = web.act(&format!("/api/workflows/{media}/cancel"), None).await;
    assert_eq!(done["stopping"], 1, "m3 runs: {done}");
    let merge = &web.read(&format!("/api/workflows/{media}")).await["graph"][3];
    assert_eq!((&merge["state"], &merge["last_error"]), (&json!("archived"), &json!(WORKFLOW_CANCELLED_ERROR)));
    // A task deleted is gone, not succeeded; it keeps its type.
    web.act("/api/queues/misc/tasks/solo/delete", None).await;
    let solo_task = &web.read(&format!("/api/workflows/{solo}")).await["graph"][0];
    assert_eq!((&solo_task["state"], &solo_task["type"]), (&json!("gone"), &json!("media:step")));
}

#[tokio::test]
async fn a_workflow_too_large_to_draw_comes_without_its_graph_and_pages_its_tasks() {
    let broker = MemoryBroker::new();
    let members: Vec<Flow> = (0..301).map(|n| step("wide", &format!("member-{n}"))).collect();
    let flow = Flow::chord(members, step("wide", "callback"));
    let id = FlowProducer::new(broker.clone()).enqueue(&flow).await.unwrap().id.into_string();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;

    let listed = web.read("/api/workflows").await;
    assert_eq!((&listed["workflows"][0]["tasks"], &listed["workflows"][0]["state"]), (&json!(302), &Value::Null));
    let shown = web.read(&format!("/api/workflows/{id}?page=4&size=100")).await;
    assert_eq!((&shown["total"], &shown["graph"], &shown["state"]), (&json!(302), &Value::Null, &json!("running")));
    assert_eq!(shown["counts"], json!({ "pending": 301, "waiting": 1 }));
    let tasks = shown["tasks"].as_array().unwrap();
    assert_eq!(tasks.iter().map(|t| t["index"].as_u64().unwrap()).collect::<Vec<_>>(), [300, 301]);
    assert_eq!(tasks[1]["parents"].as_array().map(Vec::len), Some(301));
    assert_eq!(shown["has_next"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_workflow_tasks_and_priorities_are_shown() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let flow = step("steps", "first").then(step("steps", "second"));
    let workflow = FlowProducer::new(broker.clone()).enqueue(&flow).await.unwrap().id.into_string();
    let client = Client::new(broker.clone());
    let steps = TaskOptions::new().queue("steps");
    client.enqueue(&Task::new("report:user", "7"), steps.clone().task_id("vip").priority(8)).await.unwrap();
    client.enqueue(&Task::new("report:all", ""), steps.task_id("backfill").priority(-5)).await.unwrap();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;

    // The queue counts the waiting task apart from its size, which counts Go's states.
    let queue = &web.read("/api/queues/steps").await["queue"];
    assert_eq!((&queue["waiting"], &queue["pending"], &queue["size"]), (&json!(1), &json!(3), &json!(3)), "{queue}");
    assert_eq!(self::queue(&web.read("/api/queues").await, "steps")["waiting"], 1);

    // Listed in its own state, with its workflow; its page says so too.
    let waiting = web.read("/api/queues/steps/states/waiting/tasks").await;
    assert_eq!((ids(&waiting), &waiting["total"]), (vec!["second".to_owned()], &json!(1)));
    assert_eq!(
        (&waiting["tasks"][0]["state"], &waiting["tasks"][0]["workflow"]),
        (&json!("waiting"), &json!(workflow))
    );
    let second = web.read("/api/queues/steps/tasks/second").await;
    assert_eq!((&second["state"], &second["workflow"]), (&json!("waiting"), &json!(workflow)));
    // It takes no action of its own (its workflow's page cancels it).
    for action in ["run", "archive", "delete"] {
        let refused = web.post(&format!("/api/queues/steps/tasks/second/{action}"), None).await;
        assert_eq!(refused.error(StatusCode::CONFLICT), "failed_precondition", "{action}");
    }
    assert_eq!(web.read("/api/queues/steps/tasks/second").await["state"], "waiting");

    // Pending tasks in the order they run, each with its priority.
    let pending = web.read("/api/queues/steps/states/pending/tasks").await;
    let listed: Vec<(&str, &Value)> =
        pending["tasks"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap(), &t["priority"])).collect();
    assert_eq!(listed, [("vip", &json!(8)), ("first", &json!(0)), ("backfill", &json!(-5))]);
    let vip = web.read("/api/queues/steps/tasks/vip").await;
    assert_eq!((&vip["priority"], &vip["workflow"]), (&json!(8), &Value::Null));
    assert_eq!(web.read("/api/queues/steps/tasks/first").await["workflow"], json!(workflow));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holders_of_a_shared_concurrency_slot_are_listed() {
    use asynq_core::broker::Capabilities;
    use asynq_core::slots::SharedLimit;
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let slots = Arc::new(broker.clone()).as_concurrency_slots().expect("Redis keeps shared limits");
    let limit = SharedLimit::new("type:pdf:render", 2).unwrap();
    let now = SystemClock.now();
    let until = now + Duration::from_secs(30);
    assert!(slots.take_slot(&limit, &TaskId::from_static("render-1"), now, until).await.unwrap());
    let web = Web::with_session(WebConfig::new(Inspector::new(broker)).read_only(true)).await;

    let held = web.read("/api/slots/type%3Apdf%3Arender").await;
    assert_eq!(held["key"], "type:pdf:render");
    assert_eq!(
        held["holders"],
        json!([{ "task_id": "render-1", "held_until": timestamp(until) }]),
        "read-only dashboards read slots too"
    );
    let free = web.read("/api/slots/type:video:encode").await;
    assert_eq!((&free["key"], &free["holders"]), (&json!("type:video:encode"), &json!([])));

    // Given back, it is gone.
    slots.release_slot(limit.key(), &TaskId::from_static("render-1")).await.unwrap();
    assert_eq!(web.read("/api/slots/type:pdf:render").await["holders"], json!([]));

    for bad in ["%20", "a%07b", &"k".repeat(asynq_core::slots::MAX_SLOT_KEY_LEN + 1)] {
        assert_eq!(
            web.get(&format!("/api/slots/{bad}")).await.error(StatusCode::BAD_REQUEST),
            "invalid_slot_key",
            "{bad}"
        );
    }
    let longest = "k".repeat(asynq_core::slots::MAX_SLOT_KEY_LEN);
    assert_eq!(web.read(&format!("/api/slots/{longest}")).await["holders"], json!([]));

    // The memory broker keeps shared limits too.
    let memory = Web::with_session(WebConfig::new(Inspector::new(MemoryBroker::new()))).await;
    assert_eq!(memory.read("/api/slots/type:pdf:render").await["holders"], json!([]));
}

/// A time as the API writes it: RFC 3339 in UTC, to the second.
fn timestamp(time: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A bulk action that does not end within the reply wait is answered with 202 and a job, which
/// runs to its end and reports its progress; a forced removal likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_bulk_action_answers_with_a_job_that_reports_its_progress() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let client = Client::new(broker.clone());
    let tasks: Vec<_> =
        (0..3_000).map(|n| (Task::new("bulk", format!("{n}")), TaskOptions::new().queue("big"))).collect();
    for chunk in tasks.chunks(500) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    // No wait: the action, several steps on Redis, is still running when the reply goes.
    let config = WebConfig::new(Inspector::new(broker)).job_reply_wait(Duration::ZERO);
    let web = Web::with_session(config).await;

    let reply = web.post("/api/queues/big/states/pending/bulk", Some(json!({ "action": "archive" }))).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    let job = reply.json()["job"].clone();
    assert_eq!(job["state"], "running", "{job}");
    assert_eq!(job["description"], r#"archive the pending tasks of queue "big""#);
    let path = format!("/api/jobs/{}", job["id"]);
    let listed = web.read("/api/jobs").await;
    assert!(listed["jobs"].as_array().unwrap().iter().any(|j| j["id"] == job["id"]), "{listed}");
    let seen = Mutex::new(Vec::new());
    asynq_tests::wait_for("the archive job to finish", || {
        let (web, path, seen) = (&web, &path, &seen);
        async move {
            let job = web.read(path).await;
            seen.lock().unwrap().push(job["done"].as_u64().unwrap());
            job["state"] == "done"
        }
    })
    .await;
    let seen = seen.into_inner().unwrap();
    let finished = web.read(&path).await;
    assert_eq!((finished["count"].as_u64(), finished["done"].as_u64()), (Some(3_000), Some(3_000)), "{finished}");
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "progress only grows: {seen:?}");
    assert_eq!(queue(&web.read("/api/queues").await, "big")["archived"], 3_000);

    let reply = web.post("/api/queues/big/delete", Some(json!({ "force": true }))).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    let path = format!("/api/jobs/{}", reply.json()["job"]["id"]);
    asynq_tests::wait_for("the removal to finish", || {
        let (web, path) = (&web, &path);
        async move { web.read(path).await["state"] != "running" }
    })
    .await;
    let finished = web.read(&path).await;
    assert_eq!(finished["state"], "done", "{finished}");
    assert_eq!(finished["count"], Value::Null);
    assert_eq!(web.get("/api/queues/big").await.error(StatusCode::NOT_FOUND), "queue_not_found");
    assert_eq!(web.get("/api/jobs/999").await.error(StatusCode::NOT_FOUND), "job_not_found");
}

/// A search of aggregating tasks goes group by group, stops once it has looked through 10 000
/// tasks (the page that passes the limit is read whole), and says when it stopped early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_of_aggregating_tasks_stops_at_its_limit() {
    let broker = MemoryBroker::new();
    let client = Client::new(broker.clone());
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;
    let fill = |groups: std::ops::Range<usize>| {
        let client = client.clone();
        async move {
            for group in groups {
                let tasks: Vec<_> = (0..499)
                    .map(|n| {
                        (
                            Task::new("digest", format!("{n}")),
                            TaskOptions::new().queue("g").group(format!("g{group:02}")),
                        )
                    })
                    .collect();
                assert!(client.enqueue_batch(&tasks).await.iter().all(Result::is_ok));
            }
        }
    };
    fill(0..20).await;
    let all = web.read("/api/queues/g/states/aggregating/tasks?search=digest&size=100").await;
    assert_eq!((all["total"].as_u64(), all["search_truncated"].as_bool()), (Some(9_980), Some(false)), "every task");
    fill(20..22).await;
    let cut = web.read("/api/queues/g/states/aggregating/tasks?search=digest&size=100").await;
    assert_eq!(
        (cut["total"].as_u64(), cut["search_truncated"].as_bool()),
        (Some(10_479), Some(true)),
        "stopped after the page that passed 10 000"
    );
}

/// A group of more than one page is searched through to its end among groups of one page,
/// whose first pages are read together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_of_aggregating_tasks_reads_every_page_of_a_big_group() {
    let broker = MemoryBroker::new();
    let client = Client::new(broker.clone());
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;
    let mut tasks = Vec::new();
    for (group, count, type_name) in [("big", 1_100, "digest"), ("small", 3, "digest"), ("other", 40, "report")] {
        tasks.extend(
            (0..count).map(|n| (Task::new(type_name, format!("{n}")), TaskOptions::new().queue("h").group(group))),
        );
    }
    for chunk in tasks.chunks(500) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    let found = web.read("/api/queues/h/states/aggregating/tasks?search=digest&size=100").await;
    assert_eq!((found["total"].as_u64(), found["search_truncated"].as_bool()), (Some(1_103), Some(false)), "{found}");
    let others = web.read("/api/queues/h/states/aggregating/tasks?search=report").await;
    assert_eq!(others["total"].as_u64(), Some(40), "{others}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_answers_with_what_the_request_found() {
    let broker = MemoryBroker::new();
    let info = Client::new(broker.clone()).enqueue(&Task::new("t", "p"), TaskOptions::new()).await.unwrap();
    let taken = asynq_core::broker::Dequeue::dequeue(&broker, &[QueueName::from_static("default")], 1).await.unwrap();
    assert_eq!(taken.len(), 1);
    let web = Web::with_session(WebConfig::new(Inspector::new(broker.clone()))).await;

    // Active, but no server's heartbeat reports it.
    let found = web.act(&format!("/api/queues/default/tasks/{}/cancel", info.id), None).await;
    assert_eq!(
        found,
        json!({
            "outcome": "not_running",
            "queue": "default",
            "state": "active",
            "message": "not running (active in queue default)",
        })
    );
    let server = ServerInfo {
        host: "h".into(),
        pid: 1,
        server_id: "s1".into(),
        concurrency: 1,
        queues: BTreeMap::from([("default".to_owned(), 1)]),
        strict_priority: false,
        status: ServerStatus::Active,
        started: std::time::SystemTime::now(),
        active_workers: 1,
    };
    let worker = WorkerInfo {
        host: "h".into(),
        pid: 1,
        server_id: "s1".into(),
        task_id: info.id.to_string(),
        task_type: "t".into(),
        task_payload: "p".into(),
        queue: "default".into(),
        started: std::time::SystemTime::now(),
        deadline: std::time::SystemTime::now() + Duration::from_secs(60),
    };
    broker.write_server_state(&server, &[worker], Duration::from_secs(60)).await.unwrap();
    let found = web.act(&format!("/api/queues/default/tasks/{}/cancel", info.id), None).await;
    assert_eq!(found, json!({ "outcome": "running", "servers": ["s1"], "message": "running on server s1" }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_quieted_and_stopped_by_a_request_their_heartbeat_reads() {
    use asynq_core::{ServerControl, ServerRequest};
    let fx = fixture().await;
    let broker = redis_broker(&fx.redis.url(), Arc::new(SystemClock)).await;
    let web = Web::with_session(WebConfig::new(fx.inspector.clone())).await;

    let sent = web.act("/api/servers/server-1/quiet", None).await;
    assert_eq!(sent, json!({ "server": "server-1", "request": "quiet" }));
    assert_eq!(broker.take_server_request("server-1").await.unwrap(), Some(ServerRequest::Quiet));
    let reply = web.post("/api/servers/server-1/stop", None).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    assert_eq!(broker.take_server_request("server-1").await.unwrap(), Some(ServerRequest::Stop));

    // An unknown server is a 404 and nothing is kept for it; a malformed ID a 400.
    let keys_before = fx.redis.command(&["DBSIZE"]).unwrap();
    let unknown = web.post("/api/servers/no-such-server/stop", None).await;
    assert_eq!(unknown.error(StatusCode::NOT_FOUND), "server_not_found");
    assert_eq!(fx.redis.command(&["DBSIZE"]).unwrap(), keys_before);
    assert_eq!(broker.take_server_request("no-such-server").await.unwrap(), None);
    let blank = web.post("/api/servers/%20/quiet", None).await;
    assert_eq!(blank.error(StatusCode::BAD_REQUEST), "invalid_server_id");
    // Without the CSRF token the request is refused.
    let forged = web.send(post_request("/api/servers/server-1/stop", None).body_or_empty()).await;
    assert_eq!(forged.error(StatusCode::FORBIDDEN), "csrf_failed");
    assert_eq!(broker.take_server_request("server-1").await.unwrap(), None);
}
