//! `asynq metrics` outlives its Redis: started while nothing listens at `--uri` it serves
//! `asynq_up 0` (and no queue series) instead of exiting, says so once on stderr, and serves the
//! queues once Redis answers. Bad flags and URLs still fail at once.

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

/// A running `asynq metrics`, killed when dropped.
struct Exporter {
    child: Child,
    /// Its HOME, empty, so that no config file applies; deleted when dropped.
    _home: tempfile::TempDir,
}

impl Exporter {
    fn start(redis: &str, listen: SocketAddr) -> Self {
        let home = tempfile::tempdir().expect("a temporary HOME");
        let mut command = Command::new(env!("CARGO_BIN_EXE_asynq"));
        command.args(["-u", redis, "metrics", "--listen", &listen.to_string()]);
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

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback address nothing listens on (yet).
fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address")
}

/// The body of a 200 reply to `GET /metrics` on `addr`, or `None` while nothing listens there.
fn scrape(addr: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    Some(reply.split_once("\r\n\r\n").map_or(reply.clone(), |(_, body)| body.to_owned()))
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
    let mut exporter = Exporter::start(&redis.addr(), listen);

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
}
