//! `REDIS_URL=… cargo run --example quickstart` on a Redis that other work shares: tasks of
//! others wait in the quickstart's queues (scheduled for later, pending of a type it has no
//! handler for, which it runs and fails), and archived and completed tasks of an earlier run are
//! kept;
//! the quickstart follows its own tasks by ID, ends when they have settled, and reports them
//! alone. Runs the example's binary, which `cargo test` builds beside the tests.

use asynq_tests::{RedisServer, redis_broker};
use rasynq::core::{Clock, SystemClock};
use rasynq::{Client, TaskOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The quickstart's binary: `target/<profile>/examples/quickstart`, beside this test's
/// `target/<profile>/deps/`.
fn quickstart() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let profile = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps/<test>");
    let bin = profile.join("examples").join(format!("quickstart{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p asynq-examples --examples` (`cargo xtask test` does)",
        bin.display()
    );
    bin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quickstart_ends_on_a_redis_other_work_shares() {
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let client = Client::new(redis_broker(&redis.url(), clock).await);
    let hour = Duration::from_secs(3600);
    // Others' work in the quickstart's queues, none of which settles while it runs.
    for queue in ["critical", "default", "low"] {
        let task = |name: &str| rasynq::Task::new(name, format!("{{\"owner\":\"other\",\"queue\":\"{queue}\"}}"));
        client.enqueue(&task("report:nightly"), TaskOptions::new().queue(queue).process_in(hour)).await.unwrap();
        client.enqueue(&task("billing:invoice"), TaskOptions::new().queue(queue).process_in(2 * hour)).await.unwrap();
    }
    // A task of a type the quickstart has no handler for: its server runs it, and it fails.
    let unknown =
        client.enqueue(&rasynq::Task::new("other:unknown", "x"), TaskOptions::new().queue("default")).await.unwrap();

    let started = Instant::now();
    let stdout = run_quickstart(&redis).await;
    assert!(stdout.contains("260/260 settled"), "{stdout}");
    assert!(stdout.contains(THIS_RUN), "{stdout}");
    eprintln!("quickstart on a shared Redis took {:.1} s", started.elapsed().as_secs_f64());

    // Others' tasks are still there, untouched but for the one it ran and failed.
    let inspector = rasynq::Inspector::new(redis_broker(&redis.url(), Arc::new(SystemClock)).await);
    for queue in ["critical", "default", "low"] {
        let scheduled = inspector.queue_info(queue).await.unwrap().scheduled;
        assert_eq!(scheduled, 2, "queue {queue}");
    }
    let failed = inspector.task_info("default", &unknown.id).await.unwrap();
    assert!(failed.retried > 0 && failed.last_error.is_some(), "the task of others it ran failed: {failed:?}");

    // A second run on the same Redis counts its own tasks only, not the first run's kept ones.
    let again = run_quickstart(&redis).await;
    assert!(again.contains(THIS_RUN), "{again}");
}

/// What the quickstart reports of its own tasks, whatever else the queues hold.
const THIS_RUN: &str = "This run: 260 tasks enqueued: 190 deleted after success, 20 completed with results kept, \
                        20 archived, 30 aggregated";

/// Runs the quickstart on `redis` and returns what it printed; fails if it does not end
/// successfully within 60 s (about 6 s alone; the bound catches a run that waits forever), with
/// what it printed so far and what its queues' scheduled and retry sets hold.
async fn run_quickstart(redis: &RedisServer) -> String {
    use tokio::io::AsyncReadExt;
    let mut child = tokio::process::Command::new(quickstart())
        .env("REDIS_URL", redis.url())
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the quickstart runs");
    let read_all = |mut pipe: Box<dyn tokio::io::AsyncRead + Unpin + Send>| {
        let out = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = out.clone();
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
                kept.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        out
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("piped")));
    let stderr = read_all(Box::new(child.stderr.take().expect("piped")));
    let text = |out: &std::sync::Mutex<Vec<u8>>| String::from_utf8_lossy(&out.lock().unwrap()).into_owned();
    let Ok(status) = tokio::time::timeout(Duration::from_secs(60), child.wait()).await else {
        child.kill().await.ok();
        panic!(
            "the quickstart did not end within 60 s although only others' tasks should wait in its queues\n\
             --- stdout:\n{}\n--- stderr:\n{}\n--- due sets at {:?}:\n{}",
            text(&stdout),
            text(&stderr),
            SystemClock.now(),
            due_sets(redis)
        );
    };
    let status = status.expect("the quickstart runs");
    // The pipes close when it exits; give the readers their last chunk.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while Arc::strong_count(&stdout) > 1 || Arc::strong_count(&stderr) > 1 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let (stdout, stderr) = (text(&stdout), text(&stderr));
    assert!(status.success(), "quickstart exited with {status}:\n{stdout}\n{stderr}");
    stdout
}

/// The quickstart queues' scheduled and retry sets, each task with its score and its state.
fn due_sets(redis: &RedisServer) -> String {
    let state = |key: &str| redis.command(&["HGET", key, "state"]).ok().and_then(|s| s.as_str().map(str::to_owned));
    let mut out = String::new();
    for queue in ["critical", "default", "low"] {
        for set in ["scheduled", "retry"] {
            let key = format!("asynq:{{{queue}}}:{set}");
            let Ok(members) = redis.command(&["ZRANGE", &key, "0", "-1", "WITHSCORES"]) else { continue };
            let members = members.as_array().map(<[_]>::to_vec).unwrap_or_default();
            for pair in members.chunks(2) {
                let id = pair[0].as_str().unwrap_or_default().to_owned();
                let score = pair.get(1).and_then(|s| s.as_str()).unwrap_or_default().to_owned();
                out.push_str(&format!(
                    "{key} {id} score {score} state {:?}\n",
                    state(&format!("asynq:{{{queue}}}:t:{id}"))
                ));
            }
        }
        // Tasks whose hash says scheduled or retry, in a set or not.
        let tasks = redis.command(&["KEYS", &format!("asynq:{{{queue}}}:t:*")]);
        for key in tasks.ok().and_then(|keys| keys.as_array().map(<[_]>::to_vec)).unwrap_or_default() {
            let key = key.as_str().unwrap_or_default();
            let state = state(key);
            if matches!(state.as_deref(), Some("scheduled" | "retry")) {
                out.push_str(&format!("{key} state {state:?}\n"));
            }
        }
    }
    out
}
