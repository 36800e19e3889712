//! Metrics: a worker server on the memory broker with worker metrics, Go asynq's queue metrics,
//! and `/metrics` mounted in an application's axum router. It runs a few tasks, scrapes
//! `/metrics` once over HTTP, prints the scrape and exits.
//!
//! ```text
//! cargo run --example metrics                    # listens on 127.0.0.1, a free port
//! cargo run --example metrics -- 127.0.0.1:9464  # or where told (also METRICS_ADDR)
//! ```

use anyhow::Context;
use rasynq::metrics::prometheus_client::registry::Registry;
use rasynq::metrics::{Exporter, QueueMetrics, WorkerMetrics};
use rasynq::{Client, Config, HandlerError, Inspector, MemoryBroker, ServeMux, Server, Task, TaskOptions};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("METRICS_ADDR").ok())
        .unwrap_or_else(|| "127.0.0.1:0".to_owned())
        .parse()
        .context("the listen address, e.g. 127.0.0.1:9464")?;
    let broker = MemoryBroker::new();

    // One registry for both: queue metrics read from the broker on each scrape, and the
    // metrics of this server's workers.
    let mut registry = Registry::default();
    let queue_metrics = QueueMetrics::new(Inspector::new(broker.clone()));
    queue_metrics.register(&mut registry);
    let worker_metrics = WorkerMetrics::new();
    worker_metrics.register(&mut registry);
    let exporter = Exporter::new(registry).refreshing(queue_metrics);

    // `/metrics` beside the application's own routes.
    let app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" })).merge(exporter.router());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (stop_http, http_stopped) = tokio::sync::oneshot::channel::<()>();
    let http = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = http_stopped.await;
            })
            .await
    });

    let mut mux = ServeMux::new();
    mux.handle_fn("email:send", |_ctx, _task| async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        Ok(())
    });
    mux.handle_fn("payment:charge", |ctx, _task| async move {
        if ctx.retry_count() == 0 {
            return Err(HandlerError::new("card declined, retrying"));
        }
        Ok(())
    });
    let config = Config {
        task_observers: vec![Arc::new(worker_metrics)],
        retry_delay: Arc::new(|_, _, _| Duration::from_millis(200)),
        delayed_task_check_interval: Duration::from_millis(100),
        ..Config::default()
    };
    let mut server = Server::new(broker.clone(), config)?;
    server.start(mux)?;

    let client = Client::new(broker.clone());
    for i in 0..5 {
        client.enqueue(&Task::new("email:send", format!("user {i}")), TaskOptions::new()).await?;
    }
    client.enqueue(&Task::new("payment:charge", "order 7"), TaskOptions::new()).await?;
    client.enqueue(&Task::new("report:build", "q3"), TaskOptions::new().process_in(Duration::from_secs(3600))).await?;

    let inspector = Inspector::new(broker);
    for _ in 0..500 {
        if inspector.queue_info("default").await?.processed_total == 7 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.shutdown().await;

    print!("{}", scrape(addr).await?);
    let _ = stop_http.send(());
    http.await??;
    Ok(())
}

/// `GET /metrics` over plain HTTP/1.1.
async fn scrape(addr: SocketAddr) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response.split_once("\r\n\r\n").context("an HTTP response")?;
    anyhow::ensure!(head.starts_with("HTTP/1.1 200"), "scrape failed: {head}");
    Ok(body.to_owned())
}
