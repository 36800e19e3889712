//! The dashboard's JSON API and the archive's limits, driven in-process through the router
//! against a spawned redis-server whose broker keeps small archives: what archiving all of a
//! state, a group or a selection would drop (`GET .../archive-outlook`), and what the archive's
//! trims dropped (`trimmed` in the bulk, batch and job replies).

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{ArchiveLimits, SystemClock};
use asynq_tests::{RedisServer, redis_broker_with_archive_limits};
use asynq_web::{Auth, WebConfig};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

const TOKEN: &str = "correct-horse-battery-staple";

/// Sends a request with the bearer token (which needs no CSRF token); the status and the JSON.
async fn send(router: &Router, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
    let request = Request::builder().method(method).uri(path).header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    let request = match body {
        Some(body) => request.header(header::CONTENT_TYPE, "application/json").body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    };
    let response = router.clone().oneshot(request.unwrap()).await.expect("the router is infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a readable body");
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn read(router: &Router, path: &str) -> Value {
    let (status, body) = send(router, Method::GET, path, None).await;
    assert_eq!(status, StatusCode::OK, "GET {path}: {body}");
    body
}

async fn act(router: &Router, path: &str, body: Value) -> Value {
    let (status, body) = send(router, Method::POST, path, Some(body)).await;
    assert_eq!(status, StatusCode::OK, "POST {path}: {body}");
    body
}

fn enqueue(id: &str, group: Option<&str>) -> (Task, TaskOptions) {
    let options = TaskOptions::new().queue("bulkq").task_id(id);
    let options = match group {
        Some(group) => options.group(group),
        None => options,
    };
    (Task::new("t", id.to_owned()), options)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archives_say_beforehand_and_afterwards_what_the_archive_s_limits_drop() {
    let redis = RedisServer::start();
    // The archive keeps 4 tasks, for less than an hour.
    let limits = ArchiveLimits::new(5, Duration::from_secs(3600)).unwrap();
    let broker = redis_broker_with_archive_limits(&redis.url(), Arc::new(SystemClock), limits).await;
    let client = Client::new(broker.clone());
    let tasks: Vec<_> = (0..6).map(|n| enqueue(&format!("p{n}"), None)).collect();
    assert!(client.enqueue_batch(&tasks).await.iter().all(Result::is_ok));
    let router = asynq_web::router(WebConfig::new(Inspector::new(broker)).with_auth(Auth::bearer(TOKEN).unwrap()));

    // Every pending task: 6 for 4 places.
    let outlook = read(&router, "/api/queues/bulkq/states/pending/archive-outlook").await;
    assert_eq!(
        outlook,
        json!({"archived": 0, "adding": 6, "dropped": 2, "expired": 0, "over_size": 2, "max_size": 5, "max_age_secs": 3600})
    );
    let done = act(&router, "/api/queues/bulkq/states/pending/bulk", json!({ "action": "archive" })).await;
    assert_eq!(done, json!({"count": 6, "trimmed": {"total": 2, "by_size": 2, "by_age": 0}}));
    assert_eq!(read(&router, "/api/queues/bulkq").await["queue"]["archived"], 4, "the archive keeps 4");

    // A selection of two: two more go.
    let selected: Vec<_> = ["s1", "s2"].iter().map(|id| enqueue(id, None)).collect();
    assert!(client.enqueue_batch(&selected).await.iter().all(Result::is_ok));
    let outlook = read(&router, "/api/queues/bulkq/archive-outlook?adding=2").await;
    assert_eq!((outlook["archived"].as_u64(), outlook["dropped"].as_u64()), (Some(4), Some(2)), "{outlook}");
    let done =
        act(&router, "/api/queues/bulkq/batch", json!({ "action": "archive", "ids": ["s1", "s2", "gone"] })).await;
    assert_eq!(done["succeeded"], json!(["s1", "s2"]));
    assert_eq!(done["failed"][0]["id"], "gone");
    assert_eq!(done["trimmed"], json!({"total": 2, "by_size": 2, "by_age": 0}));
    // Other actions carry no trim count.
    let deleted = act(&router, "/api/queues/bulkq/batch", json!({ "action": "delete", "ids": ["p5"] })).await;
    assert_eq!(deleted.get("trimmed"), None, "{deleted}");

    // A group.
    assert!(client.enqueue_batch(&[enqueue("g1", Some("g"))]).await.iter().all(Result::is_ok));
    let outlook = read(&router, "/api/queues/bulkq/groups/g/archive-outlook").await;
    assert_eq!((outlook["adding"].as_u64(), outlook["dropped"].as_u64()), (Some(1), Some(0)), "{outlook}");
    let done = act(&router, "/api/queues/bulkq/groups/g/bulk", json!({ "action": "archive" })).await;
    assert_eq!(done, json!({"count": 1, "trimmed": {"total": 0, "by_size": 0, "by_age": 0}}));
    let done = act(&router, "/api/queues/bulkq/states/archived/bulk", json!({ "action": "run" })).await;
    assert_eq!(done, json!({"count": 4}), "a run carries no trim count");

    // Bad input.
    for bad in ["adding=0", "adding=1001", "adding=x", "other=1"] {
        let (status, body) =
            send(&router, Method::GET, &format!("/api/queues/bulkq/archive-outlook?{bad}"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (status, body) = send(&router, Method::GET, "/api/queues/bulkq/states/archived/archive-outlook", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_argument")), "{body}");
    let (status, _) = send(&router, Method::GET, "/api/queues/missing/archive-outlook", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_job_reports_what_the_trims_dropped() {
    let redis = RedisServer::start();
    let limits = ArchiveLimits::new(100, Duration::from_secs(3600)).unwrap();
    let broker = redis_broker_with_archive_limits(&redis.url(), Arc::new(SystemClock), limits).await;
    let client = Client::new(broker.clone());
    // Several steps on Redis (250 tasks a step), so the job outlasts a zero reply wait.
    let tasks: Vec<_> = (0..1_000).map(|n| enqueue(&format!("p{n}"), None)).collect();
    for chunk in tasks.chunks(500) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    let config = WebConfig::new(Inspector::new(broker)).with_auth(Auth::bearer(TOKEN).unwrap());
    let router = asynq_web::router(config.job_reply_wait(Duration::ZERO));
    let outlook = read(&router, "/api/queues/bulkq/states/pending/archive-outlook").await;
    assert_eq!(outlook["dropped"], 901);

    let (status, reply) =
        send(&router, Method::POST, "/api/queues/bulkq/states/pending/bulk", Some(json!({ "action": "archive" })))
            .await;
    let trimmed = match status {
        StatusCode::OK => reply["trimmed"].clone(),
        StatusCode::ACCEPTED => {
            assert_eq!(reply["job"]["trimmed"], Value::Null, "{reply}");
            let path = format!("/api/jobs/{}", reply["job"]["id"]);
            asynq_tests::wait_for("the archive job to finish", || {
                let (router, path) = (&router, &path);
                async move { read(router, path).await["state"] == "done" }
            })
            .await;
            let job = read(&router, &path).await;
            assert_eq!(job["count"], 1_000, "{job}");
            job["trimmed"].clone()
        }
        other => panic!("{other}: {reply}"),
    };
    assert_eq!(trimmed, json!({"total": 901, "by_size": 901, "by_age": 0}));
    assert_eq!(read(&router, "/api/queues/bulkq").await["queue"]["archived"], 99);
}
