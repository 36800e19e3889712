//! The chaos suite's quick profile, run in CI: every scenario at once (each has its own
//! redis-server and processes, and most of their time is waiting out a 30 s lease), with the
//! debug `asynq-chaos` binary as the worker and producer processes. Prints each ledger line
//! (visible with `--no-capture`) and asserts that nothing was lost, no task was charged a
//! failure for an attempt no handler started, no active task was left without a lease, no uniqueness lock outlived its task, no recorded durable step ran again, no signal was lost, and every other check held.
//!
//! It takes about two minutes: a task whose worker was killed, or whose dequeue reply was lost
//! to the fault, is recovered only once its lease (30 s) has expired and the recoverer's grace
//! period (30 s more) has passed, and `kill-workers-during-workflow` waits that out twice.

use asynq_chaos::{Profile, Report, Scenario};
use std::path::Path;

#[test]
fn quick_profile() {
    let bin = Path::new(env!("CARGO_BIN_EXE_asynq-chaos"));
    let runs: Vec<(Scenario, std::thread::JoinHandle<anyhow::Result<Report>>)> = Scenario::ALL
        .into_iter()
        .map(|scenario| (scenario, std::thread::spawn(move || scenario.run(Profile::Quick, bin))))
        .collect();
    let mut failed = Vec::new();
    for (scenario, run) in runs {
        match run.join() {
            Ok(Ok(report)) => {
                println!("{}", report.details());
                let counts_ok = report.lost == 0
                    && report.failed_unrun == 0
                    && report.orphaned_active == 0
                    && report.stale_locks == 0;
                if !counts_ok || !report.passed() || !report.failures.is_empty() || report.acknowledged == 0 {
                    failed.push(report.details());
                }
            }
            Ok(Err(e)) => failed.push(format!("scenario={}: could not run: {e:#}", scenario.name())),
            Err(_) => failed.push(format!("scenario={}: panicked", scenario.name())),
        }
    }
    assert!(failed.is_empty(), "chaos scenarios failed:\n{}", failed.join("\n"));
}
