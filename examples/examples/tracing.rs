//! One trace across a producer and a worker, printed by OpenTelemetry's stdout exporter: a
//! request span, the client's `send default` span inside it, and the worker's `process default`
//! span and the handler's own span under that, all with one trace ID. Nothing is written per
//! task: the client puts its enqueue span's context in the task's `traceparent` header, and the
//! server continues it (the `opentelemetry` feature of `rasynq`). Runs on the embedded memory
//! broker and exits by itself.
//!
//! ```text
//! cargo run --example tracing
//! ```

use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use rasynq::{Client, Config, Inspector, MemoryBroker, ServeMux, Server, Task, TaskOptions};
use std::time::Duration;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let provider =
        SdkTracerProvider::builder().with_simple_exporter(opentelemetry_stdout::SpanExporter::default()).build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("tracing-example")));
    tracing::subscriber::set_global_default(subscriber)?;

    let broker = MemoryBroker::new();
    let mut mux = ServeMux::new();
    mux.handle_fn("email:welcome", |_ctx, _task| {
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(())
        }
        .instrument(tracing::info_span!("render_email"))
    });
    let mut server = Server::new(broker.clone(), Config::default())?;
    server.start(mux)?;

    let client = Client::new(broker.clone());
    let request = tracing::info_span!("POST /signup");
    let task = Task::new("email:welcome", r#"{"user_id":42}"#);
    let info = client.enqueue(&task, TaskOptions::new()).instrument(request).await?;
    let inspector = Inspector::new(broker);
    while inspector.queue_info(&info.queue).await?.processed_total == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await;
    provider.shutdown()?;
    Ok(())
}
