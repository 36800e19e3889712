//! Credentials never leak: with a distinctive user name and password in the Redis URL, nothing
//! the broker, client, server, inspector, metrics exporter or dashboard logs (at TRACE level),
//! returns as an error, prints with `Debug`, scrapes or serves shows the password — in a normal
//! run, with a wrong password, with nothing listening, and with Redis killed mid-run.
//! (The CLI's own output is checked the same way in `asynq-cli/tests/cli_errors.rs`.)

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{Clock, SystemClock};
use asynq_metrics::{Exporter, QueueMetrics};
use asynq_redis::{RedisBroker, RedisConfig, RedisTarget};
use asynq_server::{Config, HandlerError, Server};
use asynq_tests::{Recorder, RedisServer, capture_logs, wait_for};
use asynq_web::WebConfig;
use axum::body::Body;
use axum::http::{Request, header};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

const USER: &str = "canary-user";
const PASSWORD: &str = "Canary-Pa55-7f3a9c";

/// Everything read in the test, to be searched for the password at the end.
#[derive(Default)]
struct Seen(Vec<(String, String)>);

impl Seen {
    fn add(&mut self, what: &str, text: impl Into<String>) {
        self.0.push((what.to_owned(), text.into()));
    }

    fn error(&mut self, what: &str, error: &dyn std::fmt::Debug, display: &dyn std::fmt::Display) {
        self.add(what, format!("{display} | {error:?}"));
    }

    fn assert_no_password(&self) {
        for (what, text) in &self.0 {
            assert!(!text.contains(PASSWORD), "{what} shows the password: {text}");
            assert!(!text.is_empty(), "{what} is empty: nothing was checked");
        }
    }
}

/// A queue dashboard over `broker`, and what it serves at each of `paths`.
async fn dashboard_pages(broker: &RedisBroker, paths: &[&str]) -> Vec<(String, String)> {
    let router = asynq_web::router(WebConfig::new(Inspector::new(broker.clone())));
    let mut pages = Vec::new();
    for path in paths {
        let request = Request::get(*path).header(header::HOST, "127.0.0.1:8080").body(Body::empty()).unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        pages.push((format!("GET {path} ({status})"), String::from_utf8_lossy(&body).into_owned()));
    }
    pages
}

/// Go's queue metrics over `broker`.
fn exporter(broker: &RedisBroker) -> Exporter {
    let metrics = QueueMetrics::new(Inspector::new(broker.clone())).with_timeout(Duration::from_millis(500));
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    Exporter::new(registry).refreshing(metrics)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_log_error_debug_output_scrape_or_dashboard_page_shows_the_password() {
    let logs = capture_logs(tracing::Level::TRACE);
    let mut redis = RedisServer::start();
    let rule = ["ACL", "SETUSER", USER, "on", &format!(">{PASSWORD}"), "~*", "&*", "+@all"];
    assert!(redis.command(&rule).unwrap().is_ok());
    let url = format!("redis://{USER}:{PASSWORD}@{}", redis.addr());
    let mut seen = Seen::default();

    // A normal run: tasks succeed and fail, the inspector, exporter and dashboard read them.
    let target = RedisTarget::from_url(&url).unwrap();
    seen.add("RedisTarget's Debug", format!("{target:?}"));
    let config = RedisConfig { response_timeout: Duration::from_millis(500), ..RedisConfig::new(target) };
    seen.add("RedisConfig's Debug", format!("{config:?}"));
    let broker = RedisBroker::connect_with(config.clone()).await.unwrap();
    seen.add("RedisBroker's Debug", format!("{broker:?}"));
    let client = Client::new(broker.clone());
    seen.add("Client's Debug", format!("{client:?}"));
    for i in 0..6 {
        client
            .enqueue(&Task::new(if i % 2 == 0 { "ok" } else { "fail" }, ""), TaskOptions::new().max_retry(0))
            .await
            .unwrap();
    }
    let server_config = Config { concurrency: 2, task_check_interval: Duration::from_millis(20), ..Config::default() };
    seen.add("server Config's Debug", format!("{server_config:?}"));
    let mut server = Server::new(RedisBroker::connect_with(config.clone()).await.unwrap(), server_config).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    server
        .start(rec.handler(clock, |_, task| async move {
            if task.type_name() == "fail" { Err(HandlerError::new("failed on purpose")) } else { Ok(()) }
        }))
        .unwrap();
    let inspector = Inspector::new(broker.clone());
    wait_for("every task to run", || async { inspector.queue_info("default").await.unwrap().archived == 3 }).await;
    seen.add("queue info", format!("{:?}", inspector.queue_info("default").await.unwrap()));
    seen.add("backend info", format!("{:?}", inspector.backend_info().await.unwrap()));
    wait_for("the server's record", || async { !inspector.servers().await.unwrap().is_empty() }).await;
    seen.add("servers", format!("{:?}", inspector.servers().await.unwrap()));
    let metrics = exporter(&broker);
    seen.add("a scrape with Redis up", metrics.scrape().await.unwrap());
    let pages = ["/api/queues", "/api/queues/default", "/api/redis", "/api/servers", "/api/queues/nosuch"];
    for (what, page) in dashboard_pages(&broker, &pages).await {
        seen.add(&what, page);
    }

    // A wrong password, and nothing listening.
    let wrong = format!("redis://{USER}:{PASSWORD}-wrong@{}", redis.addr());
    let refused = RedisBroker::connect(&wrong).await.expect_err("a wrong password is refused");
    seen.error("the wrong-password error", &refused, &refused);
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nobody = format!("redis://{USER}:{PASSWORD}@127.0.0.1:{closed_port}");
    let unreachable = RedisBroker::connect(&nobody).await.expect_err("nothing listens there");
    seen.error("the connection error", &unreachable, &unreachable);

    // Redis dies mid-run: calls fail, the server logs its failures, scrapes report it down.
    redis.kill();
    let failed = client.enqueue(&Task::new("ok", ""), TaskOptions::new()).await.expect_err("Redis is gone");
    seen.error("an enqueue error with Redis down", &failed, &failed);
    let failed = inspector.queue_info("default").await.expect_err("Redis is gone");
    seen.error("an inspector error with Redis down", &failed, &failed);
    seen.add("a scrape with Redis down", metrics.scrape().await.unwrap());
    for (what, page) in dashboard_pages(&broker, &["/api/queues", "/api/redis"]).await {
        seen.add(&format!("{what} with Redis down"), page);
    }
    wait_for("the server to log a failure", || async { logs.text().contains(" ERROR ") }).await;
    tokio::time::timeout(Duration::from_secs(30), server.shutdown()).await.expect("shutdown ends without Redis");

    seen.add("the logs", logs.text());
    seen.assert_no_password();
    assert!(logs.text().contains("TRACE") || logs.text().contains("DEBUG"), "logging below INFO was captured");
}
