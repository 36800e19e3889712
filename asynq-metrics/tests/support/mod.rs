//! Test helpers: scrape an exporter over HTTP on loopback and read the scrape with
//! prometheus-parse, a Prometheus text parser.

#![allow(dead_code, unreachable_pub)]

use asynq_metrics::Exporter;
use prometheus_parse::{Scrape, Value};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// An exporter served on 127.0.0.1:0 until dropped.
pub struct Served {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Served {
    pub async fn start(exporter: Exporter) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(asynq_metrics::serve(listener, exporter, async {
            let _ = stopped.await;
        }));
        Self { addr, stop: Some(stop), task: Some(task) }
    }

    /// `GET path`: status, content type, body.
    pub async fn get(&self, path: &str) -> Response {
        get(self.addr, path).await
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap().unwrap();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: String,
}

/// A plain HTTP/1.1 GET with `Connection: close`.
pub async fn get(addr: SocketAddr, path: &str) -> Response {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let content_type = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_owned());
    Response { status, content_type, body: body.to_owned() }
}

/// Parses a scrape.
pub fn parse(body: &str) -> Scrape {
    Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("a valid exposition")
}

/// The value of the sample `metric` whose labels are exactly `labels`; panics if absent.
pub fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    find(scrape, metric, labels).unwrap_or_else(|| panic!("no sample {metric}{labels:?}"))
}

/// The value of the sample `metric` whose labels are exactly `labels`, if any.
pub fn find(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == metric
                && s.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
        })
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            other => panic!("{metric} is not a single value: {other:?}"),
        })
}

/// The buckets of the histogram `metric` with `labels`: (upper bound, cumulative count).
pub fn buckets(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
    let sample = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == metric
                && s.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
        })
        .unwrap_or_else(|| panic!("no histogram {metric}{labels:?}"));
    match &sample.value {
        Value::Histogram(b) => b.iter().map(|b| (b.less_than, b.count)).collect(),
        other => panic!("{metric} is not a histogram: {other:?}"),
    }
}
