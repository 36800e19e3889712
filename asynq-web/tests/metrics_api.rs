//! The metrics page's API: per task type metrics read from the record servers keep, and the
//! Prometheus charts asked of a fake Prometheus HTTP server on loopback, whose requests show
//! that exactly the fixed queries go out.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

use asynq_client::Inspector;
use asynq_core::QueueName;
use asynq_core::broker::TaskMetrics;
use asynq_core::task_metrics::{TaskMetricsSample, TypeCounts};
use asynq_memory::MemoryBroker;
use asynq_web::{PrometheusAddr, WebConfig};
use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tower::ServiceExt;

async fn get(router: &Router, uri: &str) -> (StatusCode, Value) {
    let request = Request::get(uri).header("host", "127.0.0.1").body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&body))))
}

fn sample(queue: &str, type_name: &str, runs: u64, failed: u64, total_ms: u64, max_ms: u64) -> TaskMetricsSample {
    TaskMetricsSample {
        queue: QueueName::new(queue).unwrap(),
        type_name: type_name.to_owned(),
        at: SystemTime::now(),
        counts: TypeCounts { runs, failed, total_ms, max_ms },
    }
}

#[tokio::test]
async fn type_metrics_are_listed_per_queue_and_type_over_an_hour_and_a_day() {
    let broker = MemoryBroker::new();
    let client = asynq_client::Client::new(broker.clone());
    for queue in ["default", "critical"] {
        let task = asynq_client::Task::new("seed", "");
        client.enqueue(&task, asynq_client::TaskOptions::new().queue(queue)).await.unwrap();
    }
    broker
        .record_task_metrics(&[
            sample("default", "email:send", 4, 1, 100, 40),
            sample("default", "image:resize", 2, 2, 900, 600),
            sample("critical", "email:send", 1, 0, 7, 7),
        ])
        .await
        .unwrap();
    let router = asynq_web::router(WebConfig::new(Inspector::new(broker)));

    for (window, resolution, buckets) in [("1h", "minute", 60), ("24h", "hour", 24)] {
        let (status, body) = get(&router, &format!("/api/metrics/types?window={window}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["resolution"], resolution);
        assert_eq!(body["buckets"].as_array().unwrap().len(), buckets);
        let types = body["types"].as_array().unwrap();
        let rows: Vec<(&str, &str, u64, u64)> = types
            .iter()
            .map(|t| {
                let (queue, name) = (t["queue"].as_str().unwrap(), t["type"].as_str().unwrap());
                (queue, name, t["runs"].as_u64().unwrap(), t["failed"].as_u64().unwrap())
            })
            .collect();
        assert_eq!(
            rows,
            vec![("critical", "email:send", 1, 0), ("default", "email:send", 4, 1), ("default", "image:resize", 2, 2)]
        );
        let image = &types[2];
        assert_eq!(image["mean_ms"], 450.0);
        assert_eq!(image["max_ms"], 600);
        let runs: u64 = image["series"]["runs"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(runs, 2);
        assert_eq!(image["series"]["mean_ms"].as_array().unwrap().len(), buckets);
    }
    let (status, body) = get(&router, "/api/metrics/types").await;
    assert_eq!((status, body["window"].as_str()), (StatusCode::OK, Some("24h")));
    let (status, body) = get(&router, "/api/metrics/types?window=7d").await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_window")));
}

/// What the fake Prometheus was asked, and how it answers.
#[derive(Clone, Default)]
struct Fake {
    asked: Arc<Mutex<Vec<HashMap<String, String>>>>,
    broken: bool,
}

async fn query_range(State(fake): State<Fake>, Query(params): Query<HashMap<String, String>>) -> (StatusCode, String) {
    fake.asked.lock().unwrap().push(params.clone());
    if fake.broken {
        return (StatusCode::INTERNAL_SERVER_ERROR, "secret internal detail".to_owned());
    }
    let query = &params["query"];
    let end: f64 = params["end"].parse().unwrap();
    // Each query answers with a value of its own, so the test sees which chart got which.
    let value = ["asynq_queue_size", "processed", "failed", "latency"]
        .iter()
        .position(|metric| query.contains(metric))
        .map_or(-1.0, |i| i as f64 + 1.5);
    let answer = json!({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"queue": "default"}, "values": [[end - 30.0, value.to_string()], [end, "NaN"]]},
        {"metric": {"queue": "critical"}, "values": [[end, "0"]]},
    ]}});
    (StatusCode::OK, answer.to_string())
}

/// A fake Prometheus on a free loopback port, serving under `prefix`.
async fn fake_prometheus(prefix: &str, fake: Fake) -> String {
    let app =
        Router::new().route(&format!("{prefix}/api/v1/query_range"), axum::routing::get(query_range)).with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}{prefix}")
}

#[tokio::test]
async fn prometheus_charts_come_from_the_fixed_range_queries() {
    let fake = Fake::default();
    let addr = fake_prometheus("/prom", fake.clone()).await;
    let config =
        WebConfig::new(Inspector::new(MemoryBroker::new())).with_prometheus(PrometheusAddr::parse(&addr).unwrap());
    let router = asynq_web::router(config);

    let (status, body) = get(&router, "/api/metrics/prometheus?range=6h").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["step_seconds"], 180);
    let panels = body["panels"].as_array().unwrap();
    let ids: Vec<&str> = panels.iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["queue_size", "processed_rate", "failed_rate", "latency"]);
    for (i, panel) in panels.iter().enumerate() {
        let series = panel["series"].as_array().unwrap();
        assert_eq!(series[0]["queue"], "critical", "series by queue");
        assert_eq!(series[1]["queue"], "default");
        let points = series[1]["points"].as_array().unwrap();
        assert_eq!(points[0][1], i as f64 + 1.5, "{}", panel["id"]);
        assert_eq!(points[1][1], Value::Null, "NaN is a gap");
    }

    let mut asked = fake.asked.lock().unwrap().clone();
    asked.sort_by(|a, b| a["query"].cmp(&b["query"]));
    let queries: Vec<&str> = asked.iter().map(|p| p["query"].as_str()).collect();
    assert_eq!(
        queries,
        [
            "max by (queue) (asynq_queue_latency_seconds)",
            "sum by (queue) (asynq_queue_size)",
            "sum by (queue) (rate(asynq_tasks_failed_total[720s]))",
            "sum by (queue) (rate(asynq_tasks_processed_total[720s]))",
        ]
    );
    for params in &asked {
        let (start, end): (u64, u64) = (params["start"].parse().unwrap(), params["end"].parse().unwrap());
        assert_eq!((end - start, params["step"].as_str()), (6 * 3600, "180"));
        assert_eq!(params.len(), 4, "query, start, end and step only: {params:?}");
    }

    // The page cannot choose the PromQL: unknown parameters and ranges are refused.
    let (status, _) = get(&router, "/api/metrics/prometheus?query=up").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = get(&router, "/api/metrics/prometheus?range=1y").await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_range")));
    assert_eq!(fake.asked.lock().unwrap().len(), 4, "nothing more was asked");
}

#[tokio::test]
async fn without_prometheus_or_with_a_failing_one_the_page_is_told_without_details() {
    let router = asynq_web::router(WebConfig::new(Inspector::new(MemoryBroker::new())));
    let (status, body) = get(&router, "/api/metrics/prometheus").await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("prometheus_not_configured")));

    let broken = Fake { broken: true, ..Fake::default() };
    let addr = fake_prometheus("", broken).await;
    let config =
        WebConfig::new(Inspector::new(MemoryBroker::new())).with_prometheus(PrometheusAddr::parse(&addr).unwrap());
    let (status, body) = get(&asynq_web::router(config), "/api/metrics/prometheus").await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_GATEWAY, Some("prometheus_unavailable")));
    assert!(!body.to_string().contains("secret"), "{body}");

    // Nothing listens on a port just freed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let config =
        WebConfig::new(Inspector::new(MemoryBroker::new())).with_prometheus(PrometheusAddr::parse(&addr).unwrap());
    let (status, _) = get(&asynq_web::router(config), "/api/metrics/prometheus").await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
}
