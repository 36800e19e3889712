//! `asynq metrics` and `asynq web --metrics`, run as the binary against a Redis where a server
//! recorded its heartbeat, export that server and the task it runs, with no metrics from the
//! server itself; and both exporters of the one Redis serve the same server series.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod common;

use asynq_core::broker::ServerState;
use asynq_core::{ServerInfo, ServerStatus, WorkerInfo};
use asynq_tests::RedisServer;
use common::{block_on, broker};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long an exporter may take to listen.
const WAIT: Duration = Duration::from_secs(20);

/// A running `asynq` command, killed when dropped.
struct Serving {
    child: Child,
    /// Its HOME, empty, so that no config file applies.
    _home: tempfile::TempDir,
}

impl Serving {
    /// Runs `asynq -u <redis> <args...>`.
    fn start(redis: &str, args: &[&str]) -> Self {
        let home = tempfile::tempdir().expect("a temporary HOME");
        let mut command = Command::new(env!("CARGO_BIN_EXE_asynq"));
        command.args(["-u", redis]).args(args).env("HOME", home.path()).env("NO_COLOR", "1");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ASYNQ_") {
                command.env_remove(name);
            }
        }
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        Self { child: command.spawn().expect("the asynq binary runs"), _home: home }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address")
}

/// The body of a 200 reply to `GET /metrics` on `addr` with `asynq_up 1`; `None` until then.
fn scrape(addr: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n")?;
    (head.starts_with("HTTP/1.1 200") && body.lines().any(|l| l == "asynq_up 1")).then(|| body.to_owned())
}

fn wait_for_scrape(addr: SocketAddr) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(body) = scrape(addr) {
            return body;
        }
        assert!(Instant::now() < deadline, "no scrape with asynq_up 1 at {addr} after {WAIT:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server series of a scrape, sorted.
fn server_series(body: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = body
        .lines()
        .filter(|l| {
            l.starts_with("asynq_server_")
                || l.starts_with("asynq_active_workers")
                || l.starts_with("asynq_queue_servers")
        })
        .collect();
    lines.sort_unstable();
    lines
}

#[test]
fn both_exporters_serve_the_servers_recorded_in_redis() {
    let redis = RedisServer::start();
    let now = SystemTime::now();
    let server = ServerInfo {
        host: "worker-1".into(),
        pid: 4242,
        server_id: "9d2c5a1e-0000-4000-8000-000000000001".into(),
        concurrency: 10,
        queues: BTreeMap::from([("default".to_owned(), 1)]),
        strict_priority: false,
        status: ServerStatus::Active,
        started: UNIX_EPOCH + Duration::from_secs(1_795_000_000),
        active_workers: 1,
    };
    let worker = WorkerInfo {
        host: server.host.clone(),
        pid: server.pid,
        server_id: server.server_id.clone(),
        task_id: "task-1".into(),
        task_type: "email:welcome".into(),
        task_payload: "{}".into(),
        queue: "default".into(),
        started: now,
        deadline: now + Duration::from_secs(1800),
    };
    block_on(async {
        // A TTL that outlives the test, as a live server's next heartbeat would.
        broker(&redis).await.write_server_state(&server, &[worker], Duration::from_secs(300)).await.expect("write");
    });

    let (metrics_addr, web_addr) = (free_addr(), free_addr());
    let _metrics = Serving::start(&redis.addr(), &["metrics", "--listen", &metrics_addr.to_string()]);
    let _web = Serving::start(&redis.addr(), &["web", "--metrics", "--listen", &web_addr.to_string()]);
    let from_metrics = wait_for_scrape(metrics_addr);
    let from_web = wait_for_scrape(web_addr);

    let id = r#"server_id="9d2c5a1e-0000-4000-8000-000000000001",host="worker-1",pid="4242""#;
    for line in [
        format!(r#"asynq_server_info{{{id},status="active"}} 1"#),
        format!("asynq_server_concurrency{{{id}}} 10"),
        format!("asynq_server_active_workers{{{id}}} 1"),
        format!("asynq_server_start_time_seconds{{{id}}} 1795000000"),
        r#"asynq_active_workers{queue="default",task_type="email:welcome"} 1"#.to_owned(),
        r#"asynq_queue_servers{queue="default"} 1"#.to_owned(),
    ] {
        // A float gauge prints `1.0`, an integer one `1`.
        let found = from_metrics.lines().any(|l| l == line || l.strip_suffix(".0") == Some(line.as_str()));
        assert!(found, "{line} in:\n{from_metrics}");
    }
    assert_eq!(server_series(&from_metrics), server_series(&from_web), "one Redis, the same series");
}
