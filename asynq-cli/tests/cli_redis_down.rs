//! `asynq metrics` and `asynq web` outlive their Redis: started while nothing listens at
//! `--uri`, the exporter serves `asynq_up 0` (and no queue series) and the dashboard answers 503
//! instead of exiting, each says so once on stderr, and both serve the queues once Redis
//! answers. Bad flags and URLs still fail at once.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod common;

use asynq_client::{Client, Task, TaskOptions};
use asynq_tests::RedisServer;
use common::{asynq, asynq_at, block_on, broker};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the exporter may take to listen, or to see Redis come back.
const WAIT: Duration = Duration::from_secs(20);

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(20);

/// A running `asynq metrics` or `asynq web`, killed when dropped.
struct Serving {
    child: Child,
    /// Its HOME, empty, so that no config file applies; deleted when dropped.
    _home: tempfile::TempDir,
}

impl Serving {
    /// Runs `asynq -u <redis> <command> --listen <listen>`.
    fn start(redis: &str, command_name: &str, listen: SocketAddr) -> Self {
        let home = tempfile::tempdir().expect("a temporary HOME");
        let mut command = Command::new(env!("CARGO_BIN_EXE_asynq"));
        command.args(["-u", redis, command_name, "--listen", &listen.to_string()]);
        command.env("HOME", home.path()).env("NO_COLOR", "1");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ASYNQ_") {
                command.env_remove(name);
            }
        }
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        Self { child: command.spawn().expect("the asynq binary runs"), _home: home }
    }

    /// Stops it and returns what it wrote on stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let mut stderr = String::new();
        self.child.stderr.take().expect("piped stderr").read_to_string(&mut stderr).expect("stderr");
        let _ = self.child.wait();
        stderr
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback address nothing listens on (yet).
fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address")
}

/// The status code and body of the reply to `GET path` on `addr`, or `None` while nothing
/// listens there.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let status = reply.get(9..12).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("no status: {reply}"));
    let body = reply.split_once("\r\n\r\n").map_or(String::new(), |(_, body)| body.to_owned());
    Some((status, body))
}

/// The body of a 200 reply to `GET /metrics` on `addr`, or `None` while nothing listens there.
fn scrape(addr: SocketAddr) -> Option<String> {
    let (status, body) = get(addr, "/metrics")?;
    assert_eq!(status, 200, "{body}");
    Some(body)
}

/// Polls `check` until it gives a value, failing after [`WAIT`] with `what`.
fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up after {WAIT:?} waiting for {what}");
        std::thread::sleep(POLL);
    }
}

#[test]
fn the_exporter_started_with_redis_down_serves_asynq_up_0_then_1_when_redis_answers() {
    let mut redis = RedisServer::start();
    redis.kill(); // Its port stays reserved, with nothing listening.
    let listen = free_addr();
    let mut exporter = Serving::start(&redis.addr(), "metrics", listen);

    let down = wait_for("the exporter to listen", || scrape(listen));
    assert!(down.lines().any(|l| l == "asynq_up 0"), "{down}");
    assert!(!down.contains("asynq_queue_size"), "no queue series without Redis:\n{down}");
    assert!(exporter.child.try_wait().expect("the exporter's status").is_none(), "the exporter exited");
    assert!(scrape(listen).expect("still listening").lines().any(|l| l == "asynq_up 0"));

    redis.restart();
    block_on(async {
        let client = Client::new(broker(&redis).await);
        client.enqueue(&Task::new("t", ""), TaskOptions::new()).await.expect("enqueue");
    });
    let up = wait_for("asynq_up 1", || scrape(listen).filter(|body| body.lines().any(|l| l == "asynq_up 1")));
    assert!(up.contains(r#"asynq_queue_size{queue="default"} 1"#), "{up}");

    let stderr = exporter.stop();
    assert_eq!(stderr.matches("cannot connect to Redis").count(), 1, "one line per failure streak:\n{stderr}");
    assert!(stderr.contains("serving asynq_up 0 until Redis answers"), "{stderr}");
    assert!(stderr.contains("connected to Redis after"), "{stderr}");
}

#[test]
fn the_dashboard_started_with_redis_down_answers_503_then_serves_when_redis_answers() {
    let mut redis = RedisServer::start();
    redis.kill();
    let listen = free_addr();
    let web = Serving::start(&redis.addr(), "web", listen);

    let (status, body) = wait_for("the dashboard to listen", || get(listen, "/api/queues"));
    assert_eq!(status, 503, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    assert_eq!(error["error"]["code"], "backend_unavailable", "{body}");
    assert!(error["error"]["message"].as_str().is_some_and(|m| m.contains("Redis is unreachable")), "{body}");

    redis.restart();
    block_on(async {
        let client = Client::new(broker(&redis).await);
        client.enqueue(&Task::new("t", ""), TaskOptions::new()).await.expect("enqueue");
    });
    let queues = wait_for("the dashboard's API", || get(listen, "/api/queues").filter(|(status, _)| *status == 200));
    assert!(queues.1.contains("default"), "{}", queues.1);
    let (status, page) = get(listen, "/").expect("the dashboard listens");
    assert_eq!(status, 200, "{page}");

    let stderr = web.stop();
    assert_eq!(stderr.matches("cannot connect to Redis").count(), 1, "one line per failure streak:\n{stderr}");
    assert!(stderr.contains("connected to Redis after"), "{stderr}");
}

#[test]
fn bad_urls_and_flags_still_fail_at_once() {
    let listen = free_addr().to_string();
    let bad_url = asynq(&["-u", "nohost:notaport", "metrics", "--listen", &listen]);
    assert_eq!(bad_url.code, 2, "{bad_url:#?}");
    let bad_flag = asynq(&["-u", "127.0.0.1:1", "metrics", "--listen", "nowhere"]);
    assert_eq!(bad_flag.code, 2, "{bad_flag:#?}");
    // A Redis that answers but refuses is no reason to wait either.
    let redis = RedisServer::start();
    let no_such_db = asynq_at(&redis, &["-n", "99999", "metrics", "--listen", &listen]);
    assert_eq!(no_such_db.code, 2, "{no_such_db:#?}");
    let web_no_such_db = asynq_at(&redis, &["-n", "99999", "web", "--listen", &listen]);
    assert_eq!(web_no_such_db.code, 2, "{web_no_such_db:#?}");
    let web_bad_url = asynq(&["-u", "nohost:notaport", "web", "--listen", &listen]);
    assert_eq!(web_bad_url.code, 2, "{web_bad_url:#?}");
    let web_bad_flag = asynq(&["-u", "127.0.0.1:1", "web", "--listen", &listen, "--refresh", "soon"]);
    assert_eq!(web_bad_flag.code, 2, "{web_bad_flag:#?}");
}
