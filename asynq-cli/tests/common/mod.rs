//! Shared by the CLI tests: a redis-server holding Go-written fixtures and tasks our client
//! enqueued, a server heartbeat and a scheduler's entries, and a runner for the `asynq` binary.

#![allow(dead_code, unreachable_pub)]

use asynq_client::{Client, SchedulerEnqueueEvent, SchedulerEntry, Task, TaskOptions};
use asynq_core::broker::{SchedulerState, ServerState};
use asynq_core::time::from_unix_secs;
use asynq_core::{ServerInfo, ServerStatus, SystemClock, TaskId, WorkerInfo};
use asynq_redis::RedisBroker;
use asynq_tests::{RedisServer, load_fixture, read_fixture};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

/// What a run of the binary printed, and how it exited.
#[derive(Debug)]
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Stdout parsed as JSON; panics with both streams if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{self:#?}"))
    }

    /// Asserts exit code 0 and returns self.
    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "expected success:\n{self:#?}");
        self
    }

    /// Asserts that stdout contains every one of `needles`.
    pub fn shows(&self, needles: &[&str]) -> &Self {
        for needle in needles {
            assert!(self.stdout.contains(needle), "stdout lacks {needle:?}:\n{}", self.stdout);
        }
        self
    }

    /// The stdout line containing `needle`.
    pub fn line(&self, needle: &str) -> &str {
        self.stdout
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}:\n{}", self.stdout))
    }
}

/// Runs `asynq <args>` with no config file, no colour and no `ASYNQ_*` variables.
pub fn asynq(args: &[&str]) -> Run {
    asynq_with_stdout(args, Stdio::piped())
}

/// Runs `asynq <args>` as [`asynq`] does, with `stdout` as its standard output (the returned
/// stdout is then empty unless `stdout` is [`Stdio::piped`]). A run killed by a signal has
/// code -1.
pub fn asynq_with_stdout(args: &[&str], stdout: impl Into<Stdio>) -> Run {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let mut command = Command::new(env!("CARGO_BIN_EXE_asynq"));
    command.args(args).env("HOME", home.path()).env("NO_COLOR", "1");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ASYNQ_") {
            command.env_remove(name);
        }
    }
    command.stdin(Stdio::null()).stdout(stdout).stderr(Stdio::piped());
    let output = command.spawn().and_then(|child| child.wait_with_output()).expect("the asynq binary runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `asynq -u <server> <args>`.
pub fn asynq_at(server: &RedisServer, args: &[&str]) -> Run {
    let mut full = vec!["-u", server_addr(server)];
    full.extend_from_slice(args);
    asynq(&full)
}

fn server_addr(server: &RedisServer) -> &'static str {
    Box::leak(server.addr().into_boxed_str())
}

/// Runs `future` on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime").block_on(future)
}

/// A broker on `server`.
pub async fn broker(server: &RedisServer) -> RedisBroker {
    RedisBroker::connect(&server.url()).await.expect("the test Redis accepts connections")
}

/// The IDs of the tasks [`seed`] enqueues into queue `critical`.
pub struct Seeded {
    /// Two pending `email:send` tasks.
    pub pending: [TaskId; 2],
    /// A scheduled `report:build` task, due in an hour.
    pub scheduled: TaskId,
    /// A pending task whose payload is not text.
    pub binary: TaskId,
}

/// A server with both Go fixtures loaded (queues `interop` and `interop-processed`) and, in
/// queue `critical`, tasks our client enqueued; plus a live server heartbeat (`worker-1`, pid
/// 4242) and a scheduler with entry `entry-1` that enqueued two tasks.
pub fn seeded_server() -> (RedisServer, Seeded) {
    let server = RedisServer::start();
    load_fixture(&server, &read_fixture("v0.26.0-enqueued.json"));
    load_fixture(&server, &read_fixture("v0.26.0-processed.json"));
    let seeded = block_on(seed(&server));
    (server, seeded)
}

async fn seed(server: &RedisServer) -> Seeded {
    let broker = broker(server).await;
    let client = Client::new(broker.clone());
    let critical = || TaskOptions::new().queue("critical");
    let enqueue = |task: Task, options: TaskOptions| {
        let client = client.clone();
        async move { client.enqueue(&task, options).await.expect("enqueue").id }
    };
    let pending = [
        enqueue(Task::new("email:send", r#"{"to":"a@example.com"}"#), critical()).await,
        enqueue(Task::new("email:send", r#"{"to":"b@example.com"}"#), critical()).await,
    ];
    let in_an_hour = critical().process_in(Duration::from_secs(3600)).task_id("report-q3");
    let scheduled = enqueue(Task::new("report:build", "q3"), in_an_hour).await;
    let binary = enqueue(Task::new("image:resize", vec![0xffu8, 0x00, 0x01]), critical().task_id("bin-1")).await;

    let now = asynq_core::Clock::now(&SystemClock);
    let info = ServerInfo {
        host: "worker-1".into(),
        pid: 4242,
        server_id: "srv-1".into(),
        concurrency: 10,
        queues: BTreeMap::from([("critical".to_owned(), 6), ("default".to_owned(), 3)]),
        strict_priority: false,
        status: ServerStatus::Active,
        started: now,
        active_workers: 1,
    };
    let worker = WorkerInfo {
        host: "worker-1".into(),
        pid: 4242,
        server_id: "srv-1".into(),
        task_id: "running-1".into(),
        task_type: "email:send".into(),
        task_payload: "{}".into(),
        queue: "critical".into(),
        started: now,
        deadline: now + Duration::from_secs(1800),
    };
    broker.write_server_state(&info, &[worker], Duration::from_secs(3600)).await.expect("heartbeat");

    let entry = SchedulerEntry {
        id: "entry-1".into(),
        spec: "@every 30s".into(),
        task_type: "report:daily".into(),
        task_payload: "daily".into(),
        options: vec![r#"Queue("critical")"#.into()],
        next: Some(now + Duration::from_secs(30)),
        prev: Some(from_unix_secs(1_795_317_896)),
    };
    broker.write_scheduler_entries("scheduler-1", &[entry], Duration::from_secs(3600)).await.expect("entries");
    for (id, at) in [("cron-task-1", 1_795_317_866), ("cron-task-2", 1_795_317_896)] {
        let event = SchedulerEnqueueEvent { task_id: id.into(), enqueued_at: from_unix_secs(at) };
        broker.record_scheduler_enqueue("entry-1", &event).await.expect("history");
    }
    Seeded { pending, scheduled, binary }
}
