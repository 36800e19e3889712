//! The dashboard's JSON API, driven in-process through the router (tower's `oneshot`) against a
//! spawned redis-server holding tasks from our client and from Go asynq's fixtures: every
//! endpoint, authentication, CSRF, read-only mode, validation, 404s, the static assets and their
//! headers, and the OpenAPI description's coverage of the routes.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

use asynq_client::{Client, Inspector, SchedulerEnqueueEvent, SchedulerEntry, Task, TaskOptions};
use asynq_core::broker::{SchedulerState, ServerState};
use asynq_core::{Clock, ServerInfo, ServerStatus, SystemClock, WorkerInfo};
use asynq_memory::MemoryBroker;
use asynq_tests::{PlainProducer, RedisCluster, RedisServer, load_fixture, read_fixture, redis_broker};
use asynq_web::{Auth, WebConfig};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

mod support;
use support::{TOKEN, Web, ids, post_request, queue};

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
    assert_eq!((ids(&found), &found["total"]), (ids(&aggregating), &json!(3)));
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
    assert_eq!(web.read("/api/queues").await, json!({ "queues": [], "sharded": [], "eviction_risks": [] }));
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

#[tokio::test]
async fn the_overview_lists_a_sharded_queue_with_its_shards_and_their_sum() {
    use asynq_core::broker::Capabilities;
    let broker = Arc::new(MemoryBroker::new());
    let web = Web::new(WebConfig::new(Inspector::from_shared(broker.clone())));
    assert_eq!(web.read("/api/queues").await["sharded"], json!([]), "none declared");
    let shards = broker.clone().as_sharded_queues().unwrap();
    shards.declare_sharded_queue(&asynq_core::QueueName::from_static("orders"), 2).await.unwrap();
    let placing = Client::from_shared(broker.clone());
    for n in 0..3 {
        placing.enqueue(&Task::new("ship", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    // A producer that does not place tasks on shards puts them in the plain queue of the name.
    let plain = Client::new(PlainProducer(MemoryBroker::clone(&broker)));
    plain.enqueue(&Task::new("ship", "go"), TaskOptions::new().queue("orders")).await.unwrap();
    plain.enqueue(&Task::new("mail", "x"), TaskOptions::new().queue("emails")).await.unwrap();

    let overview = web.read("/api/queues").await;
    let names: Vec<&str> = overview["queues"].as_array().unwrap().iter().filter_map(|q| q["name"].as_str()).collect();
    assert_eq!(names, ["emails", "orders~0", "orders~1"], "the shards are queues; the logical name is under sharded");
    let sharded = overview["sharded"].as_array().expect("an array");
    assert_eq!(sharded.len(), 1, "{overview}");
    assert_eq!((&sharded[0]["name"], &sharded[0]["shards"]), (&json!("orders"), &json!(["orders~0", "orders~1"])));
    assert_eq!(
        (&sharded[0]["pending"], &sharded[0]["size"]),
        (&json!(4), &json!(4)),
        "the shards and plain queue summed"
    );
    let shards: u64 = ["orders~0", "orders~1"].iter().map(|q| queue(&overview, q)["pending"].as_u64().unwrap()).sum();
    assert_eq!(shards, 3, "the fourth is in the plain queue of the name");
    assert_eq!(sharded[0]["draining"], json!([]));

    Inspector::from_shared(broker.clone()).reshard_queue("orders", 3).await.unwrap();
    let overview = web.read("/api/queues").await;
    let sharded = &overview["sharded"][0];
    assert_eq!(sharded["shards"], json!(["orders~g2~0", "orders~g2~1", "orders~g2~2"]));
    assert_eq!((&sharded["draining"], &sharded["size"]), (&json!(["orders~0", "orders~1"]), &json!(4)), "{overview}");
}
