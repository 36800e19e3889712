//! The Grafana dashboard (`docs/grafana/asynq-dashboard.json`) and the Prometheus alerting rules
//! (`docs/prometheus/asynq-alerts.yml`) shipped in the repository query only metrics we export:
//! every `asynq_*` name in the rules is one `asynq metrics` exports (the queue and server
//! metrics it reads from the broker), and in the dashboard one it exports or, in the panels that
//! say so, one of the worker metrics a server exports about itself. Every rule has a unit test.
//! A sharded queue is judged whole by the rules on size and rates, never also per shard.

mod support;

use asynq_client::{Inspector, Task, TaskOptions};
use asynq_metrics::{Exporter, WorkerMetrics};
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

/// The label matchers of each `asynq_*` metric an expression reads (what is between the braces
/// after its name; empty without them).
fn selectors(expr: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find("asynq_") {
        let after = &rest[start..];
        let name_len =
            after.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')).unwrap_or(after.len());
        let after = &after[name_len..];
        let matchers = after.strip_prefix('{').and_then(|m| m.split_once('}')).map_or("", |(m, _)| m);
        found.push(matchers);
        rest = after;
    }
    found
}

/// The sample names a scrape declares: each family's (`# TYPE` line), with the suffixes of its
/// type (`_total` for counters; `_bucket`, `_sum` and `_count` for histograms).
fn declared(scrape: &str) -> BTreeSet<String> {
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

/// What the two exporters can serve, once a server has run a task that succeeds and one that
/// fails: the standalone exporter of `asynq metrics` and `asynq web --metrics` (queue and server
/// metrics, read from the broker), and the worker metrics a server exports about itself.
async fn exported() -> (BTreeSet<String>, BTreeSet<String>) {
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
    let standalone = asynq_metrics::queue_exporter(Inspector::new(h.broker.clone())).scrape().await.unwrap();
    server.shutdown().await;
    assert!(standalone.contains("asynq_server_info{"), "the running server is in the scrape: {standalone}");

    let mut registry = Registry::default();
    worker_metrics.register(&mut registry);
    let served = Served::start(Exporter::new(registry)).await;
    let workers = served.get("/metrics").await.body;
    served.stop().await;
    (declared(&standalone), declared(&workers))
}

/// The alerting rules: (name, expression) of each.
fn alert_rules() -> Vec<(String, String)> {
    let rules: serde_yaml_ng::Value = serde_yaml_ng::from_str(&doc("prometheus/asynq-alerts.yml")).expect("YAML");
    let mut alerts = Vec::new();
    for group in rules["groups"].as_sequence().expect("rule groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            let name = rule["alert"].as_str().expect("an alert name");
            assert!(rule["annotations"]["summary"].as_str().is_some(), "{name} has a summary");
            assert!(rule["annotations"]["description"].as_str().is_some(), "{name} has a description");
            assert!(rule["labels"]["severity"].as_str().is_some(), "{name} has a severity");
            alerts.push((name.to_owned(), rule["expr"].as_str().expect("an expression").to_owned()));
        }
    }
    alerts
}

#[tokio::test(start_paused = true)]
async fn the_grafana_dashboard_and_the_alert_rules_query_only_exported_metrics() {
    let (standalone, workers) = exported().await;
    for name in ["asynq_tasks_processed_total", "asynq_server_active_workers", "asynq_queue_servers"] {
        assert!(standalone.contains(name), "{name}: {standalone:?}");
    }
    assert!(workers.contains("asynq_worker_task_duration_seconds_bucket"), "{workers:?}");

    // The rules must hold in a setup with no worker metrics: only the standalone exporter's.
    let alerts = alert_rules();
    let names: Vec<&str> = alerts.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "AsynqExporterDown",
            "AsynqMetricsAbsent",
            "AsynqMetricsUnreadable",
            "AsynqQueueGrowing",
            "AsynqShardedQueueGrowing",
            "AsynqQueueLatencyHigh",
            "AsynqFailureRateHigh",
            "AsynqShardedQueueFailureRateHigh",
            "AsynqNoWorkers",
            "AsynqArchiveGrowing",
            "AsynqShardedQueueArchiveGrowing",
            "AsynqRetryBacklog",
            "AsynqShardedQueueRetryBacklog",
            "AsynqRedisMayEvictTasks"
        ]
    );
    // A rule on a queue's size or rates judges a sharded queue whole: the plain queues' rule
    // reads only series without `logical_queue`, its sharded twin only series with it, each summed
    // by logical queue after the max over exporters. No other rule sums.
    let expr_of = |name: &str| &alerts.iter().find(|(n, _)| n == name).expect("the rule").1;
    for (plain, whole) in [
        ("AsynqQueueGrowing", "AsynqShardedQueueGrowing"),
        ("AsynqFailureRateHigh", "AsynqShardedQueueFailureRateHigh"),
        ("AsynqArchiveGrowing", "AsynqShardedQueueArchiveGrowing"),
        ("AsynqRetryBacklog", "AsynqShardedQueueRetryBacklog"),
    ] {
        let (plain_expr, whole_expr) = (expr_of(plain), expr_of(whole));
        for matchers in selectors(plain_expr) {
            assert!(matchers.contains(r#"logical_queue="""#), "{plain} leaves sharded queues to {whole}: {plain_expr}");
        }
        let whole_selectors = selectors(whole_expr);
        for matchers in &whole_selectors {
            assert!(matchers.contains(r#"logical_queue!="""#), "{whole} reads sharded queues only: {whole_expr}");
        }
        let summed = whole_expr.matches("sum by (logical_queue) (max by (queue, logical_queue) (").count();
        assert_eq!(summed, whole_selectors.len(), "{whole} sums the max over exporters of each queue: {whole_expr}");
    }
    for (name, expr) in &alerts {
        if !name.starts_with("AsynqShardedQueue") {
            assert!(!expr.contains("sum"), "{name} does not sum over exporters or queues: {expr}");
        }
    }
    let mut read = BTreeSet::new();
    for (name, expr) in &alerts {
        for metric in metrics_in(expr) {
            assert!(
                standalone.contains(&metric),
                "{name} reads {metric:?}, which `asynq metrics` does not export; it exports {standalone:?}"
            );
            read.insert(metric);
        }
    }

    // The dashboard may also read the worker metrics, in panels that say so.
    let dashboard: serde_json::Value = serde_json::from_str(&doc("grafana/asynq-dashboard.json")).expect("JSON");
    let mut variables = Vec::new();
    json_strings(&dashboard["templating"], "query", &mut variables);
    for query in &variables {
        for metric in metrics_in(query) {
            assert!(standalone.contains(&metric), "the variable query {query:?} reads {metric:?}");
        }
    }
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels {
        let title = panel["title"].as_str().expect("a title");
        let description = panel["description"].as_str().unwrap_or_else(|| panic!("{title} has a description"));
        let mut exprs = Vec::new();
        json_strings(panel, "expr", &mut exprs);
        assert!(!exprs.is_empty(), "{title} queries something");
        for expr in exprs {
            let metrics = metrics_in(expr);
            for metric in &metrics {
                if workers.contains(metric) {
                    assert!(
                        description.contains("WorkerMetrics"),
                        "{title} reads {metric}: say it needs WorkerMetrics"
                    );
                } else {
                    assert!(standalone.contains(metric), "{title} reads {metric:?}, which no exporter exports");
                }
                read.insert(metric.clone());
            }
            // Every exporter of one Redis serves the same broker values: a panel takes their max,
            // never their sum (`asynq_up` is each exporter's own, shown per instance); a sum over
            // a sharded queue's queues comes after it.
            if metrics.iter().any(|m| standalone.contains(m) && m != "asynq_up") {
                assert!(
                    expr.starts_with("max by (")
                        || expr.starts_with("max(")
                        || expr.starts_with("sum(max by (")
                        || expr.starts_with("sum by (logical_queue) (max by (queue, logical_queue) ("),
                    "{title}: {expr} must count N exporters of one Redis once"
                );
            }
        }
    }
    assert!(read.len() >= 14, "the dashboard and the rules read {read:?}");

    // Every state shows, the aggregating and waiting tasks too: broken down by state, none
    // filtered out, two exporters of one Redis counted once.
    let by_state = panels.iter().find(|p| p["title"] == "Tasks by state").expect("a Tasks by state panel");
    let expr = by_state["targets"][0]["expr"].as_str().expect("an expression");
    assert!(expr.starts_with("max by (queue, state) (asynq_tasks_enqueued_total"), "{expr}");
    assert!(!expr.contains("state="), "no state is filtered out: {expr}");
    let description = by_state["description"].as_str().expect("a description");
    assert!(description.contains("waiting") && description.contains("aggregating"), "{description}");

    // The queue size shows each sharded queue as a whole too.
    let size = panels.iter().find(|p| p["title"] == "Queue size").expect("a Queue size panel");
    let mut exprs = Vec::new();
    json_strings(size, "expr", &mut exprs);
    let whole = "sum by (logical_queue) (max by (queue, logical_queue) (asynq_queue_size{";
    assert!(exprs.iter().any(|e| e.starts_with(whole)), "{exprs:?}");
}

/// Every alerting rule has a `promtool test rules` case in which it fires
/// (`docs/prometheus/asynq-alerts.test.yml`; `cargo xtask test` runs promtool on it).
#[test]
fn every_alert_has_a_unit_test_in_which_it_fires() {
    let tests: serde_yaml_ng::Value = serde_yaml_ng::from_str(&doc("prometheus/asynq-alerts.test.yml")).expect("YAML");
    assert_eq!(tests["rule_files"][0].as_str(), Some("asynq-alerts.yml"));
    let mut fired = BTreeSet::new();
    let mut quiet = BTreeSet::new();
    for case in tests["tests"].as_sequence().expect("test cases") {
        for check in case["alert_rule_test"].as_sequence().expect("alert rule tests") {
            let name = check["alertname"].as_str().expect("an alert name").to_owned();
            match check["exp_alerts"].as_sequence() {
                Some(alerts) if !alerts.is_empty() => fired.insert(name),
                _ => quiet.insert(name),
            };
        }
    }
    let rules: BTreeSet<String> = alert_rules().into_iter().map(|(name, _)| name).collect();
    assert_eq!(fired, rules, "a case where each rule fires");
    assert_eq!(quiet, rules, "a case where each rule stays quiet");
}
