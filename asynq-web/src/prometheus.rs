//! The dashboard's Prometheus charts: with [`WebConfig::with_prometheus`](crate::WebConfig::with_prometheus)
//! the server asks a Prometheus server a fixed set of range queries over the queue metrics
//! (`asynq_queue_size`, `asynq_tasks_processed_total`, `asynq_tasks_failed_total`,
//! `asynq_queue_latency_seconds`, as `asynq metrics` and Go's `x/metrics` export them) through
//! its HTTP API (`GET /api/v1/query_range`), and the page charts the answers. The page never
//! sends PromQL: it picks a [`PromRange`], and the queries are this module's constants.

use std::fmt;
use std::time::Duration;

/// How long the dashboard waits for Prometheus to answer one query.
pub(crate) const PROMETHEUS_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer the dashboard reads from Prometheus for one query.
pub(crate) const MAX_PROMETHEUS_BODY: usize = 8 * 1024 * 1024;
/// How many points each series has at most (the range divided into steps).
pub(crate) const POINTS_PER_SERIES: u64 = 120;

/// The address of a Prometheus server: `http://host:port`, optionally with a path prefix (a
/// Prometheus behind a proxy at `http://host/prometheus`). Plain HTTP only.
#[derive(Clone, PartialEq, Eq)]
pub struct PrometheusAddr {
    /// `host:port`, as the request's `Host` and the address to connect to.
    authority: String,
    /// The path prefix, without a trailing `/` (empty for none).
    prefix: String,
}

/// Why a Prometheus address was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPrometheusAddr(String);

impl fmt::Display for InvalidPrometheusAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidPrometheusAddr {}

impl PrometheusAddr {
    /// Reads `http://host[:port][/prefix]` (port 80 when none is given).
    ///
    /// Errors: [`InvalidPrometheusAddr`] for another scheme (`https` included: the dashboard
    /// speaks plain HTTP to Prometheus), a missing host, user information, a query or a fragment.
    pub fn parse(addr: &str) -> Result<Self, InvalidPrometheusAddr> {
        let bad = |why: &str| InvalidPrometheusAddr(format!("{addr:?} is not a Prometheus address: {why}"));
        let rest = addr.strip_prefix("http://").ok_or_else(|| bad("it must start with http://"))?;
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        if authority.contains('@') {
            return Err(bad("user information is not supported"));
        }
        if path.contains(['?', '#']) || authority.contains(['?', '#']) {
            return Err(bad("no query or fragment"));
        }
        if authority.chars().any(|c| c.is_whitespace() || c.is_control()) || path.chars().any(char::is_control) {
            return Err(bad("spaces or control characters"));
        }
        let has_port = match authority.rsplit_once(':') {
            // An IPv6 literal's colons are inside its brackets.
            Some((host, port)) if !port.contains(']') => {
                port.parse::<u16>().map_err(|_| bad("the port is not a number"))?;
                if host.is_empty() {
                    return Err(bad("no host"));
                }
                true
            }
            _ => false,
        };
        let authority = if has_port { authority.to_owned() } else { format!("{authority}:80") };
        let prefix = path.trim_end_matches('/');
        let prefix = if prefix.is_empty() { String::new() } else { format!("/{prefix}") };
        Ok(Self { authority, prefix })
    }

    /// The path and query of a `query_range` request.
    fn query_range_path(&self, query: &str, start: u64, end: u64, step: u64) -> String {
        format!(
            "{}/api/v1/query_range?query={}&start={start}&end={end}&step={step}",
            self.prefix,
            percent_encode(query)
        )
    }
}

impl fmt::Display for PrometheusAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority, self.prefix)
    }
}

impl fmt::Debug for PrometheusAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrometheusAddr({self})")
    }
}

/// Percent-encodes every byte but the unreserved ones.
fn percent_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The time ranges the page may chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PromRange {
    Hour,
    SixHours,
    Day,
    Week,
}

impl PromRange {
    /// The range named `name` (`1h`, `6h`, `24h`, `7d`).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "1h" => Some(Self::Hour),
            "6h" => Some(Self::SixHours),
            "24h" => Some(Self::Day),
            "7d" => Some(Self::Week),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "1h",
            Self::SixHours => "6h",
            Self::Day => "24h",
            Self::Week => "7d",
        }
    }

    /// Its length in seconds.
    pub(crate) fn seconds(self) -> u64 {
        match self {
            Self::Hour => 3_600,
            Self::SixHours => 6 * 3_600,
            Self::Day => 24 * 3_600,
            Self::Week => 7 * 24 * 3_600,
        }
    }

    /// The step between two points, in seconds.
    pub(crate) fn step(self) -> u64 {
        self.seconds() / POINTS_PER_SERIES
    }

    /// The window of the `rate()` queries: a few steps, and at least the 1 m that two scrapes
    /// of a usual interval need.
    fn rate_window(self) -> String {
        format!("{}s", (self.step() * 4).max(60))
    }
}

/// One chart of the page: its PromQL, fixed here.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Panel {
    pub(crate) id: &'static str,
    pub(crate) title: &'static str,
    pub(crate) unit: &'static str,
    query: &'static str,
}

/// The charts, each one query; `$window` is the range's rate window.
pub(crate) const PANELS: [Panel; 4] = [
    Panel { id: "queue_size", title: "Queue size", unit: "tasks", query: "sum by (queue) (asynq_queue_size)" },
    Panel {
        id: "processed_rate",
        title: "Tasks processed",
        unit: "tasks/s",
        query: "sum by (queue) (rate(asynq_tasks_processed_total[$window]))",
    },
    Panel {
        id: "failed_rate",
        title: "Tasks failed",
        unit: "tasks/s",
        query: "sum by (queue) (rate(asynq_tasks_failed_total[$window]))",
    },
    Panel {
        id: "latency",
        title: "Queue latency",
        unit: "seconds",
        query: "max by (queue) (asynq_queue_latency_seconds)",
    },
];

impl Panel {
    /// Its query for `range`.
    pub(crate) fn query(&self, range: PromRange) -> String {
        self.query.replace("$window", &range.rate_window())
    }
}

/// One series of an answer: its labels and its points (Unix seconds, value).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PromSeries {
    pub(crate) labels: std::collections::BTreeMap<String, String>,
    pub(crate) points: Vec<(f64, Option<f64>)>,
}

/// Why Prometheus gave no answer; logged, never shown to the page.
#[derive(Debug)]
pub(crate) struct PromFailure(pub(crate) String);

/// Asks `addr` for `query` over `[start, end]` every `step` seconds.
pub(crate) async fn query_range(
    addr: &PrometheusAddr,
    query: &str,
    start: u64,
    end: u64,
    step: u64,
) -> Result<Vec<PromSeries>, PromFailure> {
    let path = addr.query_range_path(query, start, end, step);
    let body = tokio::time::timeout(PROMETHEUS_TIMEOUT, get(addr, &path))
        .await
        .map_err(|_| PromFailure(format!("no answer within {PROMETHEUS_TIMEOUT:?}")))??;
    parse_matrix(&body)
}

/// `GET path` on `addr`, over a connection of its own; the body of a 200.
async fn get(addr: &PrometheusAddr, path: &str) -> Result<Vec<u8>, PromFailure> {
    use http_body_util::{BodyExt, Empty, Limited};
    let fail = |what: &str, e: &dyn fmt::Display| PromFailure(format!("{what}: {e}"));
    let stream = tokio::net::TcpStream::connect(&addr.authority).await.map_err(|e| fail("connect", &e))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|e| fail("handshake", &e))?;
    let connection = tokio::spawn(connection);
    let request = hyper::Request::get(path)
        .header(hyper::header::HOST, &addr.authority)
        .header(hyper::header::ACCEPT, "application/json")
        .body(Empty::<hyper::body::Bytes>::new())
        .map_err(|e| fail("request", &e))?;
    let response = sender.send_request(request).await.map_err(|e| fail("request", &e))?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_PROMETHEUS_BODY)
        .collect()
        .await
        .map_err(|e| fail("read the answer", &e))?
        .to_bytes();
    connection.abort();
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        return Err(PromFailure(format!("answered {status}: {text}")));
    }
    Ok(body.to_vec())
}

/// The series of a `query_range` answer (`resultType` `matrix`).
fn parse_matrix(body: &[u8]) -> Result<Vec<PromSeries>, PromFailure> {
    let bad = |why: &str| PromFailure(format!("not a query_range answer: {why}"));
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?;
    if value["status"] != "success" {
        return Err(bad(&format!("status {}", value["status"])));
    }
    if value["data"]["resultType"] != "matrix" {
        return Err(bad("not a matrix"));
    }
    let results = value["data"]["result"].as_array().ok_or_else(|| bad("no result"))?;
    let mut series = Vec::with_capacity(results.len());
    for result in results {
        let labels = result["metric"]
            .as_object()
            .map(|labels| labels.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect())
            .unwrap_or_default();
        let points = result["values"]
            .as_array()
            .ok_or_else(|| bad("a series without values"))?
            .iter()
            .filter_map(|point| {
                let time = point.get(0)?.as_f64()?;
                // Values are strings ("1.5", "NaN", "+Inf"); what is not finite is a gap.
                let value = point.get(1)?.as_str()?.parse::<f64>().ok().filter(|v| v.is_finite());
                Some((time, value))
            })
            .collect();
        series.push(PromSeries { labels, points });
    }
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_plain_http_with_an_optional_prefix() {
        let addr = PrometheusAddr::parse("http://localhost:9090").unwrap();
        assert_eq!(addr.to_string(), "http://localhost:9090");
        assert_eq!(
            addr.query_range_path("sum by (queue) (x)", 1, 2, 3),
            "/api/v1/query_range?query=sum%20by%20%28queue%29%20%28x%29&start=1&end=2&step=3"
        );
        let prefixed = PrometheusAddr::parse("http://prom.internal/prometheus/").unwrap();
        assert_eq!(prefixed.to_string(), "http://prom.internal:80/prometheus");
        assert_eq!(PrometheusAddr::parse("http://[::1]:9090").unwrap().to_string(), "http://[::1]:9090");
        for bad in ["https://x:9090", "x:9090", "http://", "http://u@x", "http://x:port", "http://x/?q", "http://:1"] {
            assert!(PrometheusAddr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_range_has_its_fixed_queries() {
        for name in ["1h", "6h", "24h", "7d"] {
            let range = PromRange::parse(name).unwrap();
            assert_eq!(range.as_str(), name);
            assert_eq!(range.seconds() / range.step(), POINTS_PER_SERIES);
        }
        assert!(PromRange::parse("1y").is_none());
        assert_eq!(PANELS[1].query(PromRange::Hour), "sum by (queue) (rate(asynq_tasks_processed_total[120s]))");
        assert_eq!(PANELS[0].query(PromRange::Week), "sum by (queue) (asynq_queue_size)");
    }

    #[test]
    fn a_matrix_answer_is_read_and_anything_else_refused() {
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"queue":"default"},"values":[[1700000000,"3"],[1700000030.5,"NaN"]]}]}}"#;
        let series = parse_matrix(body).unwrap();
        assert_eq!(series[0].labels["queue"], "default");
        assert_eq!(series[0].points, vec![(1_700_000_000.0, Some(3.0)), (1_700_000_030.5, None)]);
        assert!(parse_matrix(br#"{"status":"error","error":"bad"}"#).is_err());
        assert!(parse_matrix(br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#).is_err());
        assert!(parse_matrix(b"<html>").is_err());
    }
}
