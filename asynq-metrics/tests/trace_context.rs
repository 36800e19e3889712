//! Trace context with the `opentelemetry` feature and a `tracing-opentelemetry` layer installed:
//! a task enqueued outside any span carries none, and a workflow stored inside a request's span
//! joins its trace, every task carrying the context and every handler's span in that trace (on
//! the memory broker, tokio paused time).

use asynq_client::{FlowProducer, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Inspect;
use asynq_core::trace_context::{TRACEPARENT_HEADER, in_trace};
use asynq_core::workflow::Flow;
use asynq_server::{Server, handler_fn};
use asynq_tests::{Harness, secs};
use opentelemetry::trace::{TraceContextExt, TraceId, TracerProvider};
use std::sync::{Arc, Mutex};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

/// Installs a `tracing-opentelemetry` layer for the test; keep the guard.
fn traced() -> tracing::subscriber::DefaultGuard {
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("asynq-trace-test")));
    tracing::subscriber::set_default(subscriber)
}

/// The `traceparent` header of task `id` in the default queue, if it has one.
async fn traceparent(h: &Harness, id: &str) -> Option<String> {
    let info = h.broker.task_info(&QueueName::default(), &asynq_core::TaskId::new(id).unwrap()).await.unwrap();
    info.headers.get(TRACEPARENT_HEADER).cloned()
}

#[tokio::test(start_paused = true)]
async fn a_task_or_workflow_enqueued_outside_any_span_carries_no_trace_context() {
    let _guard = traced();
    let h = Harness::new();
    assert!(!in_trace());
    let info = h.client.enqueue(&Task::new("alone", ""), TaskOptions::new()).await.unwrap();
    assert_eq!(traceparent(&h, &info.id).await, None, "outside a span nothing is written");
    let batch = h.client.enqueue_batch(&[(Task::new("alone", "b"), TaskOptions::new())]).await;
    assert_eq!(traceparent(&h, &batch[0].as_ref().unwrap().id).await, None);
    let step = |n: &str| Flow::task(Task::new("step", n.to_owned()), TaskOptions::new());
    let workflow = FlowProducer::new(h.broker.clone()).enqueue(&step("a").then(step("b"))).await.unwrap();
    for task in &workflow.tasks {
        assert_eq!(traceparent(&h, task.id.as_str()).await, None, "{task:?}");
    }

    // Inside a span, a plain enqueue carries the context (the contrast).
    let request = tracing::info_span!("http.request");
    assert!(request.in_scope(in_trace));
    let info =
        h.client.enqueue(&Task::new("traced", ""), TaskOptions::new()).instrument(request.clone()).await.unwrap();
    let trace = request.context().span().span_context().trace_id();
    assert!(traceparent(&h, &info.id).await.is_some_and(|header| header.contains(&trace.to_string())));
}

#[tokio::test(start_paused = true)]
async fn a_workflow_joins_the_producer_s_trace() {
    let _guard = traced();
    let h = Harness::new();
    let seen: Arc<Mutex<Vec<(String, TraceId)>>> = Arc::default();
    let record = seen.clone();
    let mut server = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    server
        .start(handler_fn(move |ctx: asynq_server::TaskContext, _task: Task| {
            let trace = tracing::Span::current().context().span().span_context().trace_id();
            record.lock().unwrap().push((ctx.task_id().to_owned(), trace));
            async { Ok(()) }
        }))
        .unwrap();

    let request = tracing::info_span!("http.request");
    let producer_trace = request.context().span().span_context().trace_id();
    let step = |n: &str| Flow::task(Task::new("step", n.to_owned()), TaskOptions::new().retention(secs(3600)));
    let mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let own = Flow::task(
        Task::new("step", "own").with_headers([(TRACEPARENT_HEADER.to_owned(), mine.to_owned())].into()),
        TaskOptions::new().retention(secs(3600)),
    );
    let flow = Flow::chord([step("a"), step("b")], step("sum")).then(own);
    let workflow = FlowProducer::new(h.broker.clone())
        .with_clock(h.clock.clone())
        .enqueue(&flow)
        .instrument(request.clone())
        .await
        .unwrap();
    drop(request);
    let (traced, own_id) = workflow.tasks.split_at(3);
    for task in traced {
        let header = traceparent(&h, task.id.as_str()).await.expect("every task carries the context");
        assert!(header.contains(&producer_trace.to_string()), "{header}");
    }
    assert_eq!(traceparent(&h, own_id[0].id.as_str()).await.as_deref(), Some(mine), "a caller's own is kept");

    h.eventually(secs(10), "every task ran", || async { seen.lock().unwrap().len() == 4 }).await;
    server.shutdown().await;
    let seen = seen.lock().unwrap().clone();
    for task in traced {
        let (_, trace) = seen.iter().find(|(id, _)| id == task.id.as_str()).expect("it ran");
        assert_eq!(*trace, producer_trace, "the handler of {} joins the producer's trace", task.id);
    }
}
