//! The dashboard's task API, driven in-process through the router: shared concurrency slots,
//! bulk jobs and their progress, the task list's search, cancelling a running task.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::broker::ServerState;
use asynq_core::{Clock, QueueName, ServerInfo, ServerStatus, SystemClock, TaskId, WorkerInfo};
use asynq_memory::MemoryBroker;
use asynq_tests::{RedisServer, redis_broker};
use asynq_web::WebConfig;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod support;
use support::{Web, ids, queue};

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
/// The task list's search looks through every task of a state, however many: past the
/// 10 000 tasks it once stopped at, group by group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_of_aggregating_tasks_counts_every_match() {
    let broker = MemoryBroker::new();
    let client = Client::new(broker.clone());
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;
    for group in 0..22 {
        let tasks: Vec<_> = (0..499)
            .map(|n| {
                let type_name = if n == 7 { "special" } else { "digest" };
                let options =
                    TaskOptions::new().queue("g").group(format!("g{group:02}")).task_id(format!("g{group:02}-{n}"));
                (Task::new(type_name, format!("{n}")), options)
            })
            .collect();
        assert!(client.enqueue_batch(&tasks).await.iter().all(Result::is_ok));
    }
    let all = web.read("/api/queues/g/states/aggregating/tasks?search=digest&size=100").await;
    assert_eq!((all["total"].as_u64(), all["has_next"].as_bool()), (Some(22 * 498), Some(true)), "every task");
    // The last group's match, past the first 10 000 tasks, is on the last page.
    let special = web.read("/api/queues/g/states/aggregating/tasks?search=special&size=10&page=3").await;
    assert_eq!((ids(&special), &special["total"]), (vec!["g20-7".to_owned(), "g21-7".to_owned()], &json!(22)));
}

/// On Redis, the task list's search goes through a queue of 12 000 pending tasks, finds the
/// matches beyond the first 10 000, and no Redis command it sends takes 10 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_of_a_large_queue_finds_every_match_in_short_commands() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let client = Client::new(broker.clone());
    let tasks: Vec<_> = (0..12_000)
        .map(|n| {
            let user = if n % 1_000 == 999 { 7 } else { 1_000 + n };
            let payload = json!({ "user_id": user, "note": "x".repeat(200) }).to_string();
            (Task::new("digest", payload), TaskOptions::new().queue("big").task_id(format!("t{n:05}")))
        })
        .collect();
    for chunk in tasks.chunks(1_000) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;
    for command in [&["CONFIG", "SET", "slowlog-log-slower-than", "10000"][..], &["SLOWLOG", "RESET"]] {
        redis.command(command).unwrap();
    }
    let page = web.read("/api/queues/big/states/pending/tasks?search=user_id%3D7&size=5&page=3").await;
    assert_eq!(
        (ids(&page), &page["total"], &page["has_next"]),
        (vec!["t10999".to_owned(), "t11999".to_owned()], &json!(12), &json!(false)),
        "{page}"
    );
    let slow = redis.command(&["SLOWLOG", "GET", "10"]).unwrap();
    assert_eq!(slow.as_array().map(|entries| entries.len()), Some(0), "commands of 10 ms or more: {slow:?}");
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
    assert_eq!(found["total"].as_u64(), Some(1_103), "{found}");
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
