//! The Grafana dashboard (`docs/grafana/asynq-dashboard.json`) and the Prometheus alerting rules
//! (`docs/prometheus/asynq-alerts.yml`) shipped in the repository query only metrics we export:
//! every `asynq_*` name in their expressions is a sample name of a scrape of the queue metrics
//! and the worker metrics.

mod support;

use asynq_client::{Inspector, Task, TaskOptions};
use asynq_metrics::{Exporter, QueueMetrics, WorkerMetrics};
use asynq_server::{Config, HandlerError, Server, handler_fn};
use asynq_tests::{Harness, secs};
use prometheus_client::registry::Registry;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use support::Served;

/// A file of the repository's `docs/`.
fn doc(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs").join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every string value of a JSON document under the key `key`, at any depth.
fn json_strings<'a>(value: &'a serde_json::Value, key: &str, found: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match v {
                    serde_json::Value::String(s) if k == key => found.push(s),
                    other => json_strings(other, key, found),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_strings(v, key, found)),
        _ => {}
    }
}

/// The `asynq_*` metric names an expression reads.
fn metrics_in(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find("asynq_") {
        let name: String =
            rest[start..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
        rest = &rest[start + name.len()..];
        names.push(name);
    }
    names
}

/// The sample names a scrape of both metric sets can carry, once a server has run a task that
/// succeeds and one that fails: each family's, with the suffixes of its type (`_total` for
/// counters; `_bucket`, `_sum` and `_count` for histograms).
async fn exported() -> BTreeSet<String> {
    let h = Harness::new();
    let worker_metrics = WorkerMetrics::new();
    let config = Config { task_observers: vec![Arc::new(worker_metrics.clone())], ..h.config("default", 2) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(handler_fn(|_ctx, task: Task| async move {
            if task.type_name() == "ok" { Ok(()) } else { Err(HandlerError::new("boom")) }
        }))
        .unwrap();
    h.client.enqueue(&Task::new("ok", ""), TaskOptions::new()).await.unwrap();
    h.client.enqueue(&Task::new("fail", ""), TaskOptions::new().max_retry(0)).await.unwrap();
    h.eventually(secs(60), "both tasks are settled", || async { h.queue("default").await.processed_total == 2 }).await;
    server.shutdown().await;

    let queue_metrics = QueueMetrics::new(Inspector::new(h.broker.clone()));
    let mut registry = Registry::default();
    queue_metrics.register(&mut registry);
    worker_metrics.register(&mut registry);
    let served = Served::start(Exporter::new(registry).refreshing(queue_metrics)).await;
    let scrape = served.get("/metrics").await.body;
    served.stop().await;
    let mut names = BTreeSet::new();
    for line in scrape.lines() {
        let Some(declared) = line.strip_prefix("# TYPE ") else { continue };
        let (family, kind) = declared.split_once(' ').expect("# TYPE <name> <type>");
        let suffixes: &[&str] = match kind {
            "counter" => &["", "_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|suffix| format!("{family}{suffix}")));
    }
    names
}

#[tokio::test(start_paused = true)]
async fn the_grafana_dashboard_and_the_alert_rules_query_only_exported_metrics() {
    let exported = exported().await;
    assert!(
        exported.contains("asynq_tasks_processed_total") && exported.contains("asynq_worker_tasks_in_flight"),
        "{exported:?}"
    );

    let dashboard: serde_json::Value = serde_json::from_str(&doc("grafana/asynq-dashboard.json")).expect("JSON");
    let mut queries = Vec::new();
    json_strings(&dashboard, "expr", &mut queries);
    json_strings(&dashboard, "query", &mut queries);
    let rules: serde_yaml_ng::Value = serde_yaml_ng::from_str(&doc("prometheus/asynq-alerts.yml")).expect("YAML");
    let mut alerts = Vec::new();
    for group in rules["groups"].as_sequence().expect("rule groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            let name = rule["alert"].as_str().expect("an alert name");
            assert!(rule["annotations"]["summary"].as_str().is_some(), "{name} has a summary");
            alerts.push(name);
            queries.push(rule["expr"].as_str().expect("an expression"));
        }
    }
    assert_eq!(
        alerts,
        [
            "AsynqMetricsUnreadable",
            "AsynqQueueGrowing",
            "AsynqQueueLatencyHigh",
            "AsynqFailureRateHigh",
            "AsynqNoWorkers",
            "AsynqRedisMayEvictTasks"
        ]
    );

    let mut read = BTreeSet::new();
    for query in &queries {
        for metric in metrics_in(query) {
            assert!(exported.contains(&metric), "{metric:?} (in {query:?}) is not exported; we export {exported:?}");
            read.insert(metric);
        }
    }
    assert!(read.len() >= 8, "the dashboard and the rules read {read:?}");

    // Every state shows, our waiting workflow tasks too: broken down by state, none filtered out.
    let panels = dashboard["panels"].as_array().expect("panels");
    let by_state = panels.iter().find(|p| p["title"] == "Tasks by state").expect("a Tasks by state panel");
    let expr = by_state["targets"][0]["expr"].as_str().expect("an expression");
    assert!(expr.contains("asynq_tasks_enqueued_total") && expr.contains("by (queue, state)"), "{expr}");
    assert!(!expr.contains("state="), "no state is filtered out: {expr}");
    assert!(by_state["description"].as_str().is_some_and(|d| d.contains("waiting")), "{by_state}");
}
