//! The search API's steps over the memory broker: a search of aggregating tasks goes group by
//! group across steps, one of any other state page by page, and the steps together look at
//! every task once and find every match; bad cursors are refused.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_memory::MemoryBroker;
use asynq_web::WebConfig;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

/// GETs `uri`: its status and JSON.
async fn get(router: &axum::Router, uri: &str) -> (StatusCode, Value) {
    let response = router.clone().oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// Runs a whole search of `state` of `queue` for `q` (already encoded): the IDs it found, how
/// many tasks its steps looked at, and how many steps it took.
async fn search(router: &axum::Router, queue: &str, state: &str, q: &str) -> (Vec<String>, u64, usize) {
    let (mut found, mut scanned, mut steps) = (Vec::new(), 0, 0);
    let mut cursor: Option<String> = None;
    loop {
        let mut uri = format!("/api/queues/{queue}/states/{state}/search?q={q}");
        if let Some(cursor) = &cursor {
            uri.push_str(&format!("&cursor={}", cursor.replace('%', "%25").replace(':', "%3A").replace('\0', "%00")));
        }
        let (status, step) = get(router, &uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {step}");
        steps += 1;
        scanned += step["scanned"].as_u64().unwrap();
        found.extend(step["matches"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()));
        match step["cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (found, scanned, steps),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_steps_through_every_task_of_a_state_and_finds_every_match() {
    let broker = MemoryBroker::new();
    let client = Client::new(broker.clone());
    // Three groups of 2 100 aggregating tasks, one special task in each.
    let mut tasks = Vec::new();
    for group in ["a", "b", "c"] {
        for n in 0..2_100 {
            let (kind, user) = if n == 1_000 { ("special", 7) } else { ("digest", 1_000 + n) };
            let task = Task::new(kind, json!({ "user_id": user, "group": group }).to_string());
            tasks.push((task, TaskOptions::new().queue("g").group(group).task_id(format!("{group}-{n}"))));
        }
    }
    // 12 345 pending tasks, every 1 000th for user 7.
    for n in 0..12_345 {
        let user = if n % 1_000 == 0 { 7 } else { 1_000 + n };
        tasks.push((Task::new("digest", json!({ "user_id": user }).to_string()), TaskOptions::new().queue("g")));
    }
    for chunk in tasks.chunks(1_000) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    let router = asynq_web::router(WebConfig::new(Inspector::new(broker)));

    let (found, scanned, steps) = search(&router, "g", "aggregating", "special").await;
    assert_eq!((found, scanned, steps), (vec!["a-1000".to_owned(), "b-1000".into(), "c-1000".into()], 6_300, 2));
    let (found, scanned, _) = search(&router, "g", "aggregating", "user_id%3D7").await;
    assert_eq!((found.len(), scanned), (3, 6_300));
    let (found, scanned, steps) = search(&router, "g", "pending", "user_id%3D7").await;
    assert_eq!((found.len(), scanned, steps), (13, 12_345, 3));
    // No term: every task.
    let (found, ..) = search(&router, "g", "pending", "").await;
    assert_eq!(found.len(), 12_345);

    for (uri, code) in [
        ("/api/queues/g/states/pending/search?q=x&cursor=bogus", "invalid_cursor"),
        ("/api/queues/g/states/pending/search?q=x&cursor=g%3A0%3Aa", "invalid_cursor"),
        ("/api/queues/g/states/pending/search?q=%22open", "invalid_search"),
    ] {
        let (status, reply) = get(&router, uri).await;
        assert_eq!((status, reply["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some(code)), "{uri}");
    }
    let (status, reply) = get(&router, "/api/queues/nothing/states/pending/search?q=x").await;
    assert_eq!((status, reply["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("queue_not_found")));
}
