//! Worker metrics and task spans: a server on the memory broker (tokio paused time) runs tasks
//! that succeed, retry and panic, and a task whose worker died is recovered; the scrape over
//! HTTP and the spans a subscriber sees match what happened. Trace context travels from the
//! producer to the handler in the `traceparent` header. The series of a sharded queue's shards,
//! and of the plain queue of its name, carry `logical_queue`; those of other queues do not.

mod support;

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Capabilities;

use asynq_metrics::otel::{TRACEPARENT_HEADER, TraceContextObserver, inject_trace_context};
use asynq_metrics::{Exporter, WorkerMetrics};
use asynq_server::{Config, HandlerError, Server, handler_fn};
use asynq_tests::{Harness, PlainProducer, secs};
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use prometheus_client::registry::Registry;
use prometheus_parse::Scrape;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Served, buckets, find, parse, value};
use tracing::Instrument;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Runs 3 `ok` tasks (2 s each), one `flaky` task that fails once then succeeds, one `boom`
/// task that panics with no retries left, and recovers one `orphan` task whose worker died
/// while running it.
async fn run_server(h: &Harness, observers: Vec<Arc<dyn asynq_server::TaskObserver>>) {
    // A worker takes the orphan, starts its handler and dies; the orphan had stalled as often
    // as is forgiven, so this lease expiry is a failed attempt.
    h.client.enqueue(&Task::new("orphan", ""), TaskOptions::new().max_retry(0)).await.unwrap();
    asynq_tests::start_and_die(&h.broker, "default", asynq_core::FREE_STALLS).await;

    let config = Config {
        task_observers: observers,
        retry_delay: Arc::new(|_, _, _| Duration::from_secs(1)),
        recoverer_interval: secs(10),
        ..h.config("default", 2)
    };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(handler_fn(|ctx: asynq_server::TaskContext, task: Task| async move {
            match task.type_name() {
                "ok" => {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    Ok(())
                }
                "flaky" if ctx.retry_count() == 0 => Err(HandlerError::new("not yet")),
                "flaky" => Ok(()),
                _ => panic!("boom"),
            }
        }))
        .unwrap();
    for _ in 0..3 {
        h.client.enqueue(&Task::new("ok", ""), TaskOptions::new()).await.unwrap();
    }
    h.client.enqueue(&Task::new("flaky", ""), TaskOptions::new()).await.unwrap();
    h.client.enqueue(&Task::new("boom", ""), TaskOptions::new().max_retry(0)).await.unwrap();
    h.eventually(secs(300), "every task is settled", || async {
        let q = h.queue("default").await;
        q.processed_total == 7 && q.archived == 2 && q.size == 2
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn worker_metrics_count_durations_outcomes_panics_and_lease_expiries() {
    let h = Harness::new();
    let metrics = WorkerMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    run_server(&h, vec![Arc::new(metrics.clone())]).await;

    let served = Served::start(Exporter::new(registry)).await;
    let response = served.get("/metrics").await;
    served.stop().await;
    assert_eq!(response.status, 200);
    let scrape = parse(&response.body);
    let ok = [("queue", "default"), ("task_type", "ok")];
    let flaky = [("queue", "default"), ("task_type", "flaky")];
    let boom = [("queue", "default"), ("task_type", "boom")];
    let orphan = [("queue", "default"), ("task_type", "orphan")];

    // Durations follow tokio's paused clock: the `ok` handler sleeps exactly 2 s.
    let ok_buckets = buckets(&scrape, "asynq_worker_task_duration_seconds", &ok);
    let count_le = |b: &[(f64, f64)], le: f64| b.iter().find(|(bound, _)| *bound == le).unwrap().1;
    assert_eq!(
        (count_le(&ok_buckets, 1.0), count_le(&ok_buckets, 2.5), count_le(&ok_buckets, f64::INFINITY)),
        (0.0, 3.0, 3.0)
    );
    assert_eq!(value(&scrape, "asynq_worker_task_duration_seconds_count", &ok), 3.0);
    assert_eq!(value(&scrape, "asynq_worker_task_duration_seconds_sum", &ok), 6.0);
    assert_eq!(value(&scrape, "asynq_worker_task_duration_seconds_count", &flaky), 2.0);
    assert_eq!(value(&scrape, "asynq_worker_task_duration_seconds_count", &boom), 1.0);

    for labels in [&ok, &flaky, &boom] {
        assert_eq!(value(&scrape, "asynq_worker_tasks_in_flight", labels), 0.0);
    }
    assert_eq!(value(&scrape, "asynq_worker_tasks_processed_total", &ok), 3.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_processed_total", &flaky), 2.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_processed_total", &boom), 1.0);
    assert_eq!(find(&scrape, "asynq_worker_tasks_failed_total", &ok), None);
    assert_eq!(value(&scrape, "asynq_worker_tasks_failed_total", &flaky), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_failed_total", &boom), 1.0);

    let outcome = |t: &'static str, o: &'static str| [("queue", "default"), ("task_type", t), ("outcome", o)];
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &outcome("ok", "success")), 3.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &outcome("flaky", "retry")), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &outcome("flaky", "success")), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &outcome("boom", "archived")), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_task_panics_total", &boom), 1.0);
    assert_eq!(find(&scrape, "asynq_worker_task_panics_total", &flaky), None);
    assert_eq!(value(&scrape, "asynq_worker_lease_expiries_total", &orphan), 1.0);
    assert!(response.body.contains("\n# TYPE asynq_worker_task_duration_seconds histogram\n"));
    assert!(response.body.contains("\n# TYPE asynq_worker_tasks_in_flight gauge\n"));
    assert!(response.body.contains("\n# TYPE asynq_worker_tasks_finished counter\n"));
}

/// The fields of every `asynq.task` span, as strings, in creation order.
#[derive(Clone, Default)]
struct TaskSpans(Arc<Mutex<Vec<(Id, SpanFields)>>>);

type SpanFields = BTreeMap<String, String>;

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for TaskSpans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        if attrs.metadata().name() == asynq_server::TASK_SPAN_NAME {
            let mut fields = BTreeMap::new();
            attrs.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().push((id.clone(), fields));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, fields)) = spans.iter_mut().rev().find(|(i, _)| i == id) {
            values.record(&mut Fields(fields));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn every_attempt_runs_in_an_asynq_task_span_with_its_fields_and_outcome() {
    let spans = TaskSpans::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let h = Harness::new();
    run_server(&h, Vec::new()).await;

    let seen: Vec<BTreeMap<String, String>> = spans.0.lock().unwrap().iter().map(|(_, f)| f.clone()).collect();
    assert_eq!(seen.len(), 6, "{seen:#?}");
    let field = |f: &BTreeMap<String, String>, k: &str| f.get(k).cloned().unwrap_or_default();
    let summary: Vec<(String, String, String)> =
        seen.iter().map(|f| (field(f, "task_type"), field(f, "retry_count"), field(f, "outcome"))).collect();
    for expected in
        [("ok", "0", "success"), ("flaky", "0", "retry"), ("flaky", "1", "success"), ("boom", "0", "archived")]
    {
        let expected = (expected.0.to_owned(), expected.1.to_owned(), expected.2.to_owned());
        assert!(summary.contains(&expected), "{expected:?} not in {summary:?}");
    }
    assert!(seen.iter().all(|f| field(f, "queue") == "default" && field(f, "task_id").len() == 36), "{seen:#?}");
}

#[tokio::test(start_paused = true)]
async fn the_trace_context_travels_from_the_producer_to_the_handler_in_the_traceparent_header() {
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("asynq-metrics-test")));
    let _guard = tracing::subscriber::set_default(subscriber);
    let h = Harness::new();

    // The producer enqueues from inside a span of its trace.
    let request = tracing::info_span!("http.request");
    let producer_trace = request.context().span().span_context().trace_id();
    let task = request.in_scope(|| inject_trace_context(Task::new("traced", "")));
    assert!(task.headers()[TRACEPARENT_HEADER].contains(&producer_trace.to_string()));
    let untraced = inject_trace_context(Task::new("traced", "alone"));
    assert!(untraced.headers().is_empty(), "outside a span nothing is injected");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let config = Config { task_observers: vec![Arc::new(TraceContextObserver)], ..h.config("default", 1) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let record = seen.clone();
    server
        .start(handler_fn(move |_ctx, task: Task| {
            let span = tracing::Span::current().context().span().span_context().clone();
            record.lock().unwrap().push((task.payload().clone(), span.trace_id()));
            async { Ok(()) }
        }))
        .unwrap();
    h.client.enqueue(&task, TaskOptions::new()).await.unwrap();
    h.client.enqueue(&untraced, TaskOptions::new()).await.unwrap();
    h.eventually(secs(10), "both tasks ran", || async { seen.lock().unwrap().len() == 2 }).await;
    server.shutdown().await;

    let seen = seen.lock().unwrap().clone();
    let traced = seen.iter().find(|(p, _)| p.is_empty()).unwrap().1;
    let alone = seen.iter().find(|(p, _)| !p.is_empty()).unwrap().1;
    assert_eq!(traced, producer_trace, "the handler's span joins the producer's trace");
    assert_ne!(alone, producer_trace, "a task without the header starts a trace of its own");
    assert_ne!(alone, opentelemetry::trace::TraceId::INVALID);
}

/// Keeps every span the SDK finishes, for the test to read.
#[derive(Debug, Clone, Default)]
struct FinishedSpans(Arc<Mutex<Vec<opentelemetry_sdk::trace::SpanData>>>);

impl opentelemetry_sdk::trace::SpanExporter for FinishedSpans {
    async fn export(&self, batch: Vec<opentelemetry_sdk::trace::SpanData>) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn an_enqueue_span_and_a_task_span_make_one_trace_with_no_call_per_task() {
    let finished = FinishedSpans::default();
    let provider =
        opentelemetry_sdk::trace::SdkTracerProvider::builder().with_simple_exporter(finished.clone()).build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("asynq-metrics-test")));
    let _guard = tracing::subscriber::set_default(subscriber);
    let h = Harness::new();
    // No observer: the server continues the trace itself.
    let mut server = Server::new(h.broker.clone(), h.config("default", 1)).unwrap();
    server.start(handler_fn(|_ctx, _task: Task| async { Ok(()) })).unwrap();

    let request = tracing::info_span!("http.request");
    let producer_trace = request.context().span().span_context().trace_id();
    let info = h.client.enqueue(&Task::new("auto", ""), TaskOptions::new()).instrument(request.clone()).await.unwrap();
    drop(request);
    h.eventually(secs(10), "the task ran", || async { h.queue("default").await.processed_total == 1 }).await;
    server.shutdown().await;

    let spans = finished.0.lock().unwrap().clone();
    let named = |name: &str| spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}: {spans:#?}"));
    let attribute = |span: &opentelemetry_sdk::trace::SpanData, key: &str| {
        span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
    };
    let send = named("send default");
    let process = named("process default");
    assert_eq!(send.span_kind, opentelemetry::trace::SpanKind::Producer);
    assert_eq!(process.span_kind, opentelemetry::trace::SpanKind::Consumer);
    for (span, operation) in [(send, "send"), (process, "process")] {
        assert_eq!(attribute(span, "messaging.system").as_deref(), Some("asynq"));
        assert_eq!(attribute(span, "messaging.operation.type").as_deref(), Some(operation));
        assert_eq!(attribute(span, "messaging.destination.name").as_deref(), Some("default"));
        assert_eq!(attribute(span, "messaging.message.id").as_deref(), Some(info.id.as_str()));
        assert_eq!(span.span_context.trace_id(), producer_trace, "{} is in the request's trace", span.name);
    }
    assert_eq!(process.parent_span_id, send.span_context.span_id(), "the task span continues the enqueue span");
}

/// A durable sleep frees its worker: the attempt that parks is counted by outcome `parked`,
/// neither processed nor failed, and its span says `parked`; the attempt that goes on succeeds.
#[tokio::test(start_paused = true)]
async fn a_park_is_its_own_outcome_neither_processed_nor_failed() {
    let spans = TaskSpans::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let h = Harness::new();
    let metrics = WorkerMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let config = Config { task_observers: vec![Arc::new(metrics.clone())], ..h.config("default", 1) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(handler_fn(|ctx: asynq_server::TaskContext, _task: Task| async move {
            ctx.sleep(Duration::from_secs(60)).await?;
            Ok(())
        }))
        .unwrap();
    h.client.enqueue(&Task::new("nap", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(300), "the task goes on and succeeds", || async {
        h.queue("default").await.processed_total == 1
    })
    .await;
    server.shutdown().await;

    let served = Served::start(Exporter::new(registry)).await;
    let response = served.get("/metrics").await;
    served.stop().await;
    let scrape = parse(&response.body);
    let nap = [("queue", "default"), ("task_type", "nap")];
    let outcome = |o: &'static str| [("queue", "default"), ("task_type", "nap"), ("outcome", o)];
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &outcome("parked")), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &outcome("success")), 1.0);
    assert_eq!(find(&scrape, "asynq_worker_tasks_finished_total", &outcome("retry")), None);
    assert_eq!(value(&scrape, "asynq_worker_tasks_processed_total", &nap), 1.0, "the park is not processed");
    assert_eq!(find(&scrape, "asynq_worker_tasks_failed_total", &nap), None);
    assert_eq!(value(&scrape, "asynq_worker_task_duration_seconds_count", &nap), 2.0, "every attempt is timed");

    let outcomes: Vec<String> =
        spans.0.lock().unwrap().iter().map(|(_, f)| f.get("outcome").cloned().unwrap_or_default()).collect();
    assert_eq!(outcomes, ["parked", "success"]);
}

/// A server serving `default` and the sharded queue `orders` (2 shards) runs 4 `ship` tasks placed
/// on the shards, 1 left in the plain queue `orders` (as Go's producers leave them) and 1 `email`
/// task in `default`; returns the scrape of its worker metrics and the shards.
async fn run_sharded_server() -> (Scrape, Vec<QueueName>) {
    let h = Harness::new();
    let shards = Arc::new(h.broker.clone()).as_sharded_queues().unwrap();
    let orders = shards.declare_sharded_queue(&QueueName::from_static("orders"), 2).await.unwrap();
    // A client over the broker places on the shards by itself; Go's producers do not.
    let sharding = Client::new(h.broker.clone()).with_clock(h.clock.clone());
    for n in 0..4 {
        sharding.enqueue(&Task::new("ship", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    let go = Client::new(PlainProducer(h.broker.clone())).with_clock(h.clock.clone());
    go.enqueue(&Task::new("ship", "go"), TaskOptions::new().queue("orders")).await.unwrap();
    h.client.enqueue(&Task::new("email", ""), TaskOptions::new()).await.unwrap();

    let metrics = WorkerMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let config = Config {
        task_observers: vec![Arc::new(metrics)],
        sharded_queues: [("orders".to_owned(), 1)].into(),
        ..h.config("default", 2)
    };
    let ran = Arc::new(AtomicUsize::new(0));
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let count = ran.clone();
    server
        .start(handler_fn(move |_ctx, _task: Task| {
            count.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        }))
        .unwrap();
    h.eventually(secs(30), "every task ran", || async { ran.load(Ordering::SeqCst) == 6 }).await;
    server.shutdown().await;

    let served = Served::start(Exporter::new(registry)).await;
    let body = served.get("/metrics").await.body;
    served.stop().await;
    (parse(&body), orders.shards().to_vec())
}

#[tokio::test(start_paused = true)]
async fn the_worker_series_of_a_sharded_queue_carry_its_logical_queue() {
    let (scrape, shards) = run_sharded_server().await;
    let ship = |queue: &'static str| [("queue", queue), ("logical_queue", "orders"), ("task_type", "ship")];
    let on_shards: f64 = shards
        .iter()
        .map(|shard| {
            let labels = [("queue", shard.as_str()), ("logical_queue", "orders"), ("task_type", "ship")];
            find(&scrape, "asynq_worker_tasks_processed_total", &labels).unwrap_or(0.0)
        })
        .sum();
    assert_eq!(on_shards, 4.0, "the shards' tasks, each counted once");
    assert_eq!(value(&scrape, "asynq_worker_tasks_processed_total", &ship("orders")), 1.0, "the plain queue's");
    assert_eq!(value(&scrape, "asynq_worker_task_duration_seconds_count", &ship("orders")), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_in_flight", &ship("orders")), 0.0);
    let success = [("queue", "orders"), ("logical_queue", "orders"), ("task_type", "ship"), ("outcome", "success")];
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &success), 1.0);
    let unlabelled: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| s.labels.get("task_type") == Some("ship") && s.labels.get("logical_queue") != Some("orders"))
        .collect();
    assert!(unlabelled.is_empty(), "every series of the sharded queue names it: {unlabelled:?}");
}

#[tokio::test(start_paused = true)]
async fn the_worker_series_of_an_ordinary_queue_keep_their_labels_beside_a_sharded_one() {
    let (scrape, _) = run_sharded_server().await;
    let email = [("queue", "default"), ("task_type", "email")];
    // `value` and `find` match the labels exactly: no `logical_queue` beside them.
    assert_eq!(value(&scrape, "asynq_worker_tasks_processed_total", &email), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_task_duration_seconds_count", &email), 1.0);
    assert_eq!(value(&scrape, "asynq_worker_tasks_in_flight", &email), 0.0);
    let success = [("queue", "default"), ("task_type", "email"), ("outcome", "success")];
    assert_eq!(value(&scrape, "asynq_worker_tasks_finished_total", &success), 1.0);
    let labelled: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| s.labels.get("queue") == Some("default") && s.labels.get("logical_queue").is_some())
        .collect();
    assert!(labelled.is_empty(), "{labelled:?}");
}
