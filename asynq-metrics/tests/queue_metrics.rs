//! Go asynq's queue metrics, scraped over HTTP from an exporter on loopback and read with a
//! Prometheus text parser: on the memory broker, on a real Redis (with and without an
//! eviction policy that can drop tasks), and with the broker down.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod support;

use asynq_client::{Client, FlowProducer, Inspector, Task, TaskOptions};
use asynq_core::broker::Outcome;
use asynq_core::workflow::Flow;
use asynq_core::{Broker, QueueName, SimulatedClock};
use asynq_memory::MemoryBroker;
use asynq_metrics::{CONTENT_TYPE, Exporter, QueueMetrics};
use asynq_tests::{FlakyBroker, RedisServer, redis_broker};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{Served, find, parse, value};

fn exporter(broker: impl Broker) -> Exporter {
    let queue_metrics = QueueMetrics::new(Inspector::new(broker));
    let mut registry = Registry::default();
    queue_metrics.register(&mut registry);
    Exporter::new(registry).refreshing(queue_metrics)
}

/// Fills `default` with 2 pending, 1 scheduled, 1 active, 1 retry and 1 archived task,
/// `critical` with 1 pending task, and `flows` with a two-task chain: 1 pending task and 1
/// waiting for it.
async fn fill(broker: &(impl Broker + asynq_core::broker::Workflows + Clone), client: &Client) {
    let default = TaskOptions::new();
    for (kind, opts) in [("active", &default), ("retry", &default), ("archived", &default)] {
        client.enqueue(&Task::new(kind, ""), opts.clone()).await.unwrap();
    }
    let queues = [QueueName::default()];
    let taken = broker.dequeue(&queues, 3).await.unwrap();
    assert_eq!(taken.len(), 3);
    for t in &taken {
        match t.message.type_name.as_str() {
            "retry" => {
                let retry_at = SystemTime::now() + Duration::from_secs(3600);
                let outcome = Outcome::Retry { retry_at, error: "boom".into(), is_failure: true };
                broker.finish(&t.message, outcome).await.unwrap();
            }
            "archived" => broker.finish(&t.message, Outcome::Archive { error: "bad".into() }).await.unwrap(),
            _ => {}
        }
    }
    client.enqueue(&Task::new("p", "1"), default.clone()).await.unwrap();
    client.enqueue(&Task::new("p", "2"), default.clone()).await.unwrap();
    client.enqueue(&Task::new("s", ""), TaskOptions::new().process_in(Duration::from_secs(600))).await.unwrap();
    client.enqueue(&Task::new("c", ""), TaskOptions::new().queue("critical")).await.unwrap();
    let step = |id: &str| Flow::task(Task::new("step", id.to_owned()), TaskOptions::new().queue("flows").task_id(id));
    FlowProducer::new(broker.clone()).enqueue(&step("first").then(step("second"))).await.unwrap();
}

fn assert_default_queue(scrape: &prometheus_parse::Scrape) {
    let states = [
        ("active", 1.0),
        ("pending", 2.0),
        ("scheduled", 1.0),
        ("retry", 1.0),
        ("archived", 1.0),
        ("completed", 0.0),
        ("waiting", 0.0),
    ];
    for (state, n) in states {
        assert_eq!(
            value(scrape, "asynq_tasks_enqueued_total", &[("queue", "default"), ("state", state)]),
            n,
            "{state}"
        );
    }
    assert_eq!(value(scrape, "asynq_queue_size", &[("queue", "default")]), 6.0);
    assert_eq!(value(scrape, "asynq_tasks_processed_total", &[("queue", "default")]), 2.0);
    assert_eq!(value(scrape, "asynq_tasks_failed_total", &[("queue", "default")]), 2.0);
    assert_eq!(value(scrape, "asynq_queue_paused_total", &[("queue", "default")]), 0.0);
    assert_eq!(value(scrape, "asynq_tasks_enqueued_total", &[("queue", "critical"), ("state", "pending")]), 1.0);
    assert_eq!(value(scrape, "asynq_queue_size", &[("queue", "critical")]), 1.0);
    let flows = |state| value(scrape, "asynq_tasks_enqueued_total", &[("queue", "flows"), ("state", state)]);
    assert_eq!((flows("pending"), flows("waiting")), (1.0, 1.0), "the chain's second task waits for its first");
    assert_eq!(value(scrape, "asynq_queue_size", &[("queue", "flows")]), 1.0, "waiting is apart from the size");
    assert_eq!(value(scrape, "asynq_up", &[]), 1.0);
}

#[tokio::test]
async fn queue_metrics_on_the_memory_broker_have_go_names_types_help_and_values() {
    let clock = Arc::new(SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(1_795_305_600)));
    let broker = MemoryBroker::with_clock(clock.clone());
    let client = Client::new(broker.clone()).with_clock(clock.clone());
    fill(&broker, &client).await;
    clock.advance(Duration::from_millis(7_500));

    let served = Served::start(exporter(broker.clone())).await;
    let response = served.get("/metrics").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.content_type.as_deref(), Some(CONTENT_TYPE));
    assert!(response.body.ends_with("# EOF\n"));
    let scrape = parse(&response.body);

    assert_default_queue(&scrape);
    assert_eq!(value(&scrape, "asynq_queue_latency_seconds", &[("queue", "default")]), 7.5);
    assert_eq!(value(&scrape, "asynq_queue_latency_seconds", &[("queue", "critical")]), 7.5);
    assert_eq!(value(&scrape, "asynq_redis_eviction_risk", &[]), 0.0, "the memory broker never evicts");
    assert!(response.body.contains("\n# TYPE asynq_redis_eviction_risk gauge\n"), "{}", response.body);
    assert!(value(&scrape, "asynq_queue_memory_usage_approx_bytes", &[("queue", "default")]) >= 0.0);

    // Go's types and help texts. OpenMetrics names a counter's family without `_total`.
    let types = [
        ("asynq_tasks_enqueued_total", "gauge"),
        ("asynq_queue_size", "gauge"),
        ("asynq_queue_latency_seconds", "gauge"),
        ("asynq_queue_memory_usage_approx_bytes", "gauge"),
        ("asynq_tasks_processed", "counter"),
        ("asynq_tasks_failed", "counter"),
        ("asynq_queue_paused_total", "gauge"),
    ];
    for (family, kind) in types {
        assert!(response.body.contains(&format!("\n# TYPE {family} {kind}\n")), "{family} is a {kind}");
    }
    let help = [
        ("asynq_tasks_enqueued_total", "Number of tasks enqueued; broken down by queue and state."),
        ("asynq_queue_size", "Number of tasks in a queue"),
        (
            "asynq_queue_latency_seconds",
            "Number of seconds the oldest pending task is waiting in pending state to be processed.",
        ),
        (
            "asynq_queue_memory_usage_approx_bytes",
            "Number of memory used by a given queue (approximated number by sampling).",
        ),
        ("asynq_tasks_processed", "Number of tasks processed (both succeeded and failed); broken down by queue"),
        ("asynq_tasks_failed", "Number of tasks failed; broken down by queue"),
        ("asynq_queue_paused_total", "Number of queues paused"),
    ];
    for (family, text) in help {
        assert_eq!(scrape.docs.get(family).map(String::as_str), Some(text), "help of {family}");
    }

    // Each scrape reads the broker again.
    client.enqueue(&Task::new("p", "3"), TaskOptions::new()).await.unwrap();
    let scrape = parse(&served.get("/metrics").await.body);
    assert_eq!(value(&scrape, "asynq_tasks_enqueued_total", &[("queue", "default"), ("state", "pending")]), 3.0);
    assert_eq!(served.get("/other").await.status, 404);
    served.stop().await;
}

#[tokio::test]
async fn queue_metrics_on_redis_cover_every_state() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(asynq_core::SystemClock)).await;
    let client = Client::new(broker.clone());
    fill(&broker, &client).await;

    let served = Served::start(exporter(broker.clone())).await;
    let scrape = parse(&served.get("/metrics").await.body);
    assert_default_queue(&scrape);
    assert!(value(&scrape, "asynq_queue_memory_usage_approx_bytes", &[("queue", "default")]) > 0.0);
    assert!(value(&scrape, "asynq_queue_latency_seconds", &[("queue", "default")]) >= 0.0);
    assert_eq!(value(&scrape, "asynq_redis_eviction_risk", &[]), 0.0, "noeviction keeps every task");

    // The next scrape sees a policy that lets Redis evict tasks.
    redis.command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]).unwrap();
    let scrape = parse(&served.get("/metrics").await.body);
    assert_eq!(value(&scrape, "asynq_redis_eviction_risk", &[]), 1.0);
    assert_default_queue(&scrape);
    served.stop().await;
}

#[tokio::test]
async fn a_failed_refresh_shows_as_asynq_up_0_without_stale_queue_series() {
    let broker = FlakyBroker::new(MemoryBroker::new());
    Client::new(broker.clone()).enqueue(&Task::new("t", ""), TaskOptions::new()).await.unwrap();
    let served = Served::start(exporter(broker.clone())).await;
    let scrape = parse(&served.get("/metrics").await.body);
    assert_eq!(value(&scrape, "asynq_up", &[]), 1.0);

    broker.go_down();
    let response = served.get("/metrics").await;
    assert_eq!(response.status, 200);
    let scrape = parse(&response.body);
    assert_eq!(value(&scrape, "asynq_up", &[]), 0.0);
    assert_eq!(find(&scrape, "asynq_queue_size", &[("queue", "default")]), None);

    broker.come_back();
    let scrape = parse(&served.get("/metrics").await.body);
    assert_eq!(value(&scrape, "asynq_up", &[]), 1.0);
    assert_eq!(value(&scrape, "asynq_queue_size", &[("queue", "default")]), 1.0);
    served.stop().await;
}

#[tokio::test]
async fn metrics_awaiting_their_broker_show_asynq_up_0_until_connected() {
    let queue_metrics = QueueMetrics::awaiting_broker();
    assert!(!queue_metrics.has_broker());
    let served = Served::start(queue_metrics.exporter()).await;
    let response = served.get("/metrics").await;
    assert_eq!(response.status, 200);
    let scrape = parse(&response.body);
    assert_eq!(value(&scrape, "asynq_up", &[]), 0.0);
    assert_eq!(find(&scrape, "asynq_queue_size", &[("queue", "default")]), None);

    let broker = MemoryBroker::new();
    Client::new(broker.clone()).enqueue(&Task::new("t", ""), TaskOptions::new()).await.unwrap();
    assert!(queue_metrics.connect(Inspector::new(broker.clone())), "the first broker is taken");
    assert!(!queue_metrics.connect(Inspector::new(MemoryBroker::new())), "a second one is refused");
    let scrape = parse(&served.get("/metrics").await.body);
    assert_eq!(value(&scrape, "asynq_up", &[]), 1.0);
    assert_eq!(value(&scrape, "asynq_queue_size", &[("queue", "default")]), 1.0);
    served.stop().await;
}

#[tokio::test]
async fn serve_queue_metrics_binds_where_told_and_stops_on_shutdown() {
    let broker = MemoryBroker::new();
    Client::new(broker.clone()).enqueue(&Task::new("t", ""), TaskOptions::new()).await.unwrap();
    // Find a free port, then hand it to the entry point the CLI uses.
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(asynq_metrics::serve_queue_metrics(Inspector::new(broker), addr, async {
        let _ = stopped.await;
    }));
    let mut response = None;
    for _ in 0..500 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            response = Some(support::get(addr, "/metrics").await);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let scrape = parse(&response.expect("the exporter listens").body);
    assert_eq!(value(&scrape, "asynq_queue_size", &[("queue", "default")]), 1.0);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
