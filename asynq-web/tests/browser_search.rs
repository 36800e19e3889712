//! Searching a large queue, in a real headless Chromium over a real redis-server: 100 000 pending
//! tasks of which 16 match. The search goes through the whole state in bounded steps (each Redis
//! call reads one page of at most 100 tasks), the page shows its progress and every
//! match, and a bulk action with the search shown acts on the matches only. The pager's first
//! and last page buttons are tried on the same queue.
//!
//! Needs Chromium and chromedriver (see `asynq_tests::browser`) and a redis-server.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

use std::sync::Arc;
use std::time::{Duration, Instant};

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{Clock, SystemClock};
use asynq_tests::browser::{Browser, screenshot_dir};
use asynq_tests::{RedisServer, RespValue, redis_broker};
use asynq_web::WebConfig;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

/// Tasks in the queue.
const TASKS: usize = 100_000;
/// Every this many tasks, one matches.
const EVERY: usize = TASKS / 16;

/// A task of the queue: the 16 matches are `metrics:flush` tasks of user 42, spread through it.
fn task(n: usize) -> Task {
    if n % EVERY == EVERY / 2 {
        Task::new("metrics:flush", json!({ "user_id": 42, "n": n }).to_string())
    } else {
        Task::new("metrics:ingest", json!({ "user_id": 1_000 + n % 5_000, "n": n }).to_string())
    }
}

/// GETs `uri` from `router` and returns its JSON.
async fn get(router: &axum::Router, uri: &str) -> Value {
    let response = router.clone().oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    assert_eq!(status, StatusCode::OK, "GET {uri}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_finds_all_16_matches_among_100_000_tasks_and_a_bulk_action_touches_only_them() {
    let started = Instant::now();
    let redis = tokio::task::spawn_blocking(RedisServer::start).await.expect("redis-server starts");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let broker = redis_broker(&redis.url(), clock).await;
    let client = Client::new(broker.clone());
    let tasks: Vec<_> = (0..TASKS).map(|n| (task(n), TaskOptions::new().queue("big"))).collect();
    for chunk in tasks.chunks(1_000) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    let inspector = Inspector::new(broker);
    eprintln!("{TASKS} tasks enqueued after {:?}", started.elapsed());

    // Through the API: every step is short, and together they look at every task once.
    redis.command(&["CONFIG", "RESETSTAT"]).unwrap();
    let router = asynq_web::router(WebConfig::new(inspector.clone()));
    for query in ["metrics:FLUSH"] {
        let (mut found, mut scanned, mut steps) = (Vec::new(), 0, 0);
        let mut cursor: Option<String> = None;
        loop {
            let mut uri = format!("/api/queues/big/states/pending/search?q={}", encode(query));
            if let Some(cursor) = &cursor {
                uri.push_str(&format!("&cursor={}", encode(cursor)));
            }
            let step = get(&router, &uri).await;
            steps += 1;
            scanned += step["scanned"].as_u64().unwrap() as usize;
            found.extend(
                step["matches"].as_array().unwrap().iter().map(|t| t["payload_preview"].as_str().unwrap().to_owned()),
            );
            match step["cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!((found.len(), scanned), (16, TASKS), "{query}: {found:?}");
        assert!(found.iter().all(|payload| payload.contains(r#""user_id":42}"#)), "{query}: {found:?}");
        // A step ends at 5 000 tasks; the last may find an empty page.
        assert!((TASKS / 5_000..=TASKS / 5_000 + 1).contains(&steps), "{query}: {steps} steps");
    }
    // Each Redis call reads one page of at most 100 tasks, so that no command holds Redis for
    // long: the calls number at least one per 100 tasks looked at. (A count, not a time: on a
    // loaded machine preemption stretches a short command's measured time. The bench measures
    // the longest Redis command.)
    let calls = redis_calls(&redis);
    assert!(calls >= TASKS / 100, "{calls} Redis calls read {TASKS} tasks: more than 100 tasks a call");
    eprintln!("API searches done after {:?}", started.elapsed());

    // In the page.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("bound address"));
    let config = WebConfig::new(inspector.clone()).refresh(Duration::from_secs(1));
    let server = tokio::spawn(asynq_web::serve(listener, config, std::future::pending()));
    let browser = Browser::start().await;
    eprintln!("browser after {:?}", started.elapsed());
    browser.set_viewport(1280, 800).await;
    browser.goto(&format!("{url}#/queues/big/pending")).await;
    browser.wait_for_text("#page-info", "the listing", |t| t.starts_with("Page 1 of 5,000")).await;
    // First and last page.
    browser.click("#last-page").await;
    browser.wait_for_text("#page-info", "the last page", |t| t.starts_with("Page 5,000 of 5,000")).await;
    let last = r#"#tasks tr[data-task-id] td[data-field="payload"]"#;
    browser.wait_for_text(last, "the last task", |t| t.contains(&format!(r#""n":{}"#, TASKS - 20))).await;
    assert!(
        browser.attr("#last-page", "disabled").await.is_some()
            && browser.attr("#next-page", "disabled").await.is_some()
    );
    browser.click("#first-page").await;
    browser.wait_for_text("#page-info", "the first page", |t| t.starts_with("Page 1 of 5,000")).await;
    assert!(browser.attr("#first-page", "disabled").await.is_some());

    // The search (a payload's field) shows its progress, then all 16 matches; the bulk action
    // says it acts on them.
    eprintln!("paged after {:?}", started.elapsed());
    browser.fill("#search", "user_id=42").await;
    browser.wait_for_text("#search-progress", "the search's progress", |t| t.starts_with("Searching")).await;
    browser.wait_for_text("#search-progress", "the finished search", |t| t.starts_with("Searched all 100,000")).await;
    assert_eq!(browser.attr("#search-progress", "data-matches").await.as_deref(), Some("16"));
    assert_eq!(browser.count("#tasks tr[data-task-id]").await, 16, "all on the first page");
    assert!(browser.text("#page-info").await.ends_with("16 task(s) matching"));
    let types = browser
        .eval(
            "return [...document.querySelectorAll('#tasks td[data-field=\"type\"]')].map((td) => td.textContent);",
            vec![],
        )
        .await;
    assert_eq!(types, json!(vec!["metrics:flush"; 16]));
    let archive = r#"button[data-bulk-all="archive"][data-filtered="true"]"#;
    browser.wait_for_text(archive, "the bulk action on the matches", |t| t == "Archive 16 matching").await;
    eprintln!("searched after {:?}", started.elapsed());
    browser.screenshot(&screenshot_dir().join("web-search.png")).await;
    browser.eval("window.confirm = () => true; return true;", vec![]).await;
    browser.click(archive).await;
    browser.wait_for_text("#tasks tr.empty", "no match left", |t| t == "No task matches.").await;
    let big = inspector.queue_info("big").await.expect("queue info");
    assert_eq!((big.pending, big.archived), (TASKS - 16, 16), "only the matches were archived");
    let archived =
        inspector.list_tasks("big", asynq_core::TaskState::Archived, asynq_core::broker::Page { size: 20, number: 0 });
    assert!(archived.await.unwrap().iter().all(|t| t.type_name == "metrics:flush"));
    // Without the search (the box emptied), the bulk action is on every task again.
    browser.eval("const box = document.querySelector('#search'); box.value = ''; box.dispatchEvent(new Event('input')); return true;", vec![]).await;
    browser.wait_for_text(r#"button[data-bulk-all="archive"]"#, "the plain bulk action", |t| t == "Archive all").await;
    assert!(!browser.is_visible("#search-progress").await);
    eprintln!("done after {:?}", started.elapsed());
    server.abort();
}

/// `text` percent-encoded for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// How many commands Redis ran since its statistics were reset, scripts' own calls included.
fn redis_calls(redis: &RedisServer) -> usize {
    let RespValue::Bulk(info) = redis.command(&["INFO", "commandstats"]).unwrap() else {
        panic!("INFO answers a bulk string")
    };
    String::from_utf8_lossy(&info)
        .lines()
        .filter_map(|line| line.split("calls=").nth(1))
        .filter_map(|rest| rest.split(',').next()?.parse::<usize>().ok())
        .sum()
}
