//! The metrics page in a real headless Chromium: per task type metrics from the record in a
//! real redis-server, and the Prometheus charts drawn from a fake Prometheus on loopback.
//!
//! Needs Chromium and chromedriver: `cargo xtask test` installs them (see `asynq_tests::browser`).

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::broker::TaskMetrics;
use asynq_core::task_metrics::{TaskMetricsSample, TypeCounts};
use asynq_core::{Clock, QueueName, SystemClock};
use asynq_tests::browser::{Browser, screenshot_dir};
use asynq_tests::{RedisServer, redis_broker};
use asynq_web::{PrometheusAddr, WebConfig};
use axum::extract::Query;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A fake Prometheus answering every range query with two queues' series: `default` at 4 then 7,
/// `critical` at 1.
async fn fake_prometheus() -> String {
    async fn query_range(Query(params): Query<HashMap<String, String>>) -> String {
        let end: f64 = params["end"].parse().expect("end");
        json!({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {"queue": "default"}, "values": [[end - 600.0, "4"], [end, "7"]]},
            {"metric": {"queue": "critical"}, "values": [[end - 600.0, "1"], [end, "1"]]},
        ]}})
        .to_string()
    }
    let app = axum::Router::new().route("/api/v1/query_range", axum::routing::get(query_range));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn sample(queue: &str, type_name: &str, runs: u64, failed: u64, total_ms: u64, clock: &dyn Clock) -> TaskMetricsSample {
    TaskMetricsSample {
        queue: QueueName::new(queue).expect("a queue name"),
        type_name: type_name.to_owned(),
        at: clock.now(),
        counts: TypeCounts { runs, failed, total_ms, max_ms: total_ms },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_page_lists_each_type_s_counts_and_charts_prometheus() {
    let redis = tokio::task::spawn_blocking(RedisServer::start).await.expect("redis-server starts");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let broker = redis_broker(&redis.url(), clock.clone()).await;
    let client = Client::new(broker.clone());
    for queue in ["emails", "billing"] {
        client.enqueue(&Task::new("seed", ""), TaskOptions::new().queue(queue)).await.expect("enqueue");
    }
    // As servers record them: two writes of email:send add up.
    broker
        .record_task_metrics(&[
            sample("emails", "email:send", 3, 1, 300, clock.as_ref()),
            sample("billing", "invoice:charge", 3, 0, 30, clock.as_ref()),
        ])
        .await
        .expect("recorded");
    broker.record_task_metrics(&[sample("emails", "email:send", 2, 0, 200, clock.as_ref())]).await.expect("recorded");

    let prometheus = PrometheusAddr::parse(&fake_prometheus().await).expect("an address");
    let config = WebConfig::new(Inspector::new(broker)).refresh(Duration::from_secs(1)).with_prometheus(prometheus);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("bound address"));
    let server = tokio::spawn(asynq_web::serve(listener, config, std::future::pending()));

    let browser = Browser::start().await;
    browser.set_viewport(1280, 900).await;
    browser.goto(&format!("{url}#/metrics")).await;
    let email = r#"#type-metrics tr[data-queue="emails"][data-type="email:send"]"#;
    browser.wait_for(email).await;
    assert_eq!(browser.text(&format!(r#"{email} [data-field="runs"]"#)).await, "5");
    assert_eq!(browser.text(&format!(r#"{email} [data-field="failed"]"#)).await, "1");
    assert_eq!(browser.text(&format!(r#"{email} [data-field="error_rate"]"#)).await, "20.0%");
    assert_eq!(browser.text(&format!(r#"{email} [data-field="mean_ms"]"#)).await, "100 ms");
    let invoice = r#"#type-metrics tr[data-queue="billing"][data-type="invoice:charge"]"#;
    assert_eq!(browser.text(&format!(r#"{invoice} [data-field="runs"]"#)).await, "3");
    assert_eq!(browser.text(&format!(r#"{invoice} [data-field="failed"]"#)).await, "0");
    assert_eq!(browser.count("#type-metrics tbody tr").await, 2);
    // The trend draws the runs and the failure of this hour's bucket.
    assert_eq!(
        browser.attr(&format!(r#"{email} rect[data-kind="processed"]"#), "data-value").await.as_deref(),
        Some("5")
    );
    assert_eq!(browser.attr(&format!(r#"{email} rect[data-kind="failed"]"#), "data-value").await.as_deref(), Some("1"));
    assert_eq!(browser.attr(r#"#nav a[data-nav="metrics"]"#, "aria-current").await.as_deref(), Some("page"));
    // A page of its own is given the frozen helpers only: the parts the dashboard's own files
    // shared while they loaded (the session and its CSRF token among them) are not left on `window`.
    let given =
        browser.eval("const d = window.asynqDashboard; return [Object.isFrozen(d), Object.keys(d).sort()];", vec![]);
    let helpers =
        ["api", "emptyRow", "enc", "fmtMs", "fmtNumber", "fmtTime", "h", "refresh", "register", "svg", "table"];
    assert_eq!(given.await, json!([true, helpers]));

    // The last hour, per minute: the same counts.
    browser
        .eval(
            "const s = document.getElementById('metrics-window'); s.value = '1h'; \
             s.dispatchEvent(new Event('change'));",
            vec![],
        )
        .await;
    browser
        .wait_for_text("#type-metrics-note", "the hour's 60 buckets", |t| t.starts_with("60 buckets of 1 min"))
        .await;
    assert_eq!(browser.text(&format!(r#"{email} [data-field="runs"]"#)).await, "5");

    // The Prometheus charts: one line per queue in each of the four, the latest value named.
    for panel in ["queue_size", "processed_rate", "failed_rate", "latency"] {
        browser.wait_for(&format!(r#"#prom-charts svg[data-panel="{panel}"] polyline[data-queue="default"]"#)).await;
    }
    let legend = browser.text(r#"#prom-charts div[data-panel="queue_size"] .legend"#).await;
    assert!(legend.contains("critical: 1") && legend.contains("default: 7"), "{legend}");
    assert!(!browser.is_visible("#prom-range[hidden]").await);
    browser.screenshot(&screenshot_dir().join("metrics.png")).await;
    server.abort();
}
