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
/// successfully within 60 s (about 6 s alone; the bound catches a run that waits forever).
async fn run_quickstart(redis: &RedisServer) -> String {
    let child = tokio::process::Command::new(quickstart())
        .env("REDIS_URL", redis.url())
        .env_remove("RUST_LOG")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .expect("the quickstart ends although others' tasks wait in its queues")
        .expect("the quickstart runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "quickstart exited with {}:\n{stdout}\n{stderr}", output.status);
    stdout
}
