//! Project automation, run as `cargo xtask <command>` (the alias lives in `.cargo/config.toml`).
//!
//! Commands:
//!
//! - `cargo xtask test [-- ARGS...]`: set up what the test suite needs (a `redis-server` of
//!   version 6.2 or newer, Chromium with chromedriver for the browser tests, and promtool,
//!   installed with apt on Debian when run as root), check the Prometheus alerting rules with
//!   promtool, then run every test in the workspace, doctests included. `ARGS` go to the test
//!   runner (`cargo nextest run` when installed, otherwise `cargo test`).
//! - `cargo xtask ci`: what `.ci/run` does: format check, clippy, then `cargo xtask test`.
//! - `cargo xtask bench [--quick] [--pin] [--awake] [--peer] [--go] [--others] [--tasks N]
//!   [--runs N] [--only NAMES]`: micro-benchmarks and end-to-end scenarios on a private `redis-server`;
//!   writes `target/bench/report.md` and `target/bench/report.json`. `--masters 1,2,4,8` sets the
//!   masters axis of `sharded-drain` (one sharded queue on Redis Clusters of that many masters);
//!   `--bin-dir DIR` runs the `asynq-bench` in DIR instead of building one (and the Go and other
//!   queues' peers in DIR with `--go` and `--others`), `--out DIR` writes the report there.
//! - `cargo xtask bench-bundle DIR`: the bench as a directory with its programs, `redis-server`
//!   and their shared libraries, and a `run.sh` that runs it on a machine without Rust, network
//!   or Redis (the masters axis 1, 2, 4, 8 and the enqueue scenarios), writing the figures there.
//! - `cargo xtask fuzz [--seconds N] [TARGET...]`: runs each cargo-fuzz target in `fuzz/` for N
//!   seconds (default 60) and prints executions and crashes (needs `cargo install cargo-fuzz`).
//! - `cargo xtask chaos [--quick] [--scenario NAME]`: the chaos suite (`asynq-chaos`), full
//!   profile by default: worker and producer processes against private redis-servers with faults
//!   injected, one ledger line per scenario.
//!
//! The tidy tests in `tidy.rs` check the invariants of `ARCHITECTURE.md` (`tidy_imports.rs`: no
//! import cycle between a library crate's modules); they run with the rest of the suite.

mod bench;
mod browser;
mod bundle;
mod chaos;
mod ci;
mod cmd;
mod fuzz;
mod promtool;
mod redis;
mod test;
#[cfg(test)]
mod tidy;
#[cfg(test)]
mod tidy_docs;
#[cfg(test)]
mod tidy_imports;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  test [-- ARGS...]   install/check redis-server, Chromium and promtool, check the alerting
                      rules (promtool check/test rules), then run the whole test suite;
                      ARGS are passed to the test runner (cargo nextest run, or cargo test)
  ci                  what .ci/run does: cargo fmt --check, cargo clippy -D warnings, xtask test
  bench [OPTIONS]     benchmark on a private redis-server; writes target/bench/report.{md,json}
                        --quick       small sizes, one run each (a smoke test)
                        --pin         Redis on CPU 0, the benchmark on CPU 1 (taskset)
                        --awake       keep idle CPUs polling, not halting, during the run
                                      (/dev/cpu_dma_latency at 0; needs root)
                        --peer        also run the asynq 0.1.8 crate's benchmark, with ratios
                        --go          also run Go asynq's (xtask/go-peer; needs Go on PATH),
                                      and its twins of the selected scenarios it can do
                        --others      also run apalis and rusty-sidekiq (xtask/other-peers):
                                      enqueue, drain-c10 and pickup-latency-c10, with ratios
                        --tasks N     tasks per throughput scenario (default 100000; 2000 quick)
                        --runs N      rounds of the throughput scenarios and peers, medians
                                      reported (default 3; 1 quick)
                        --only NAMES  comma-separated scenarios, a name selecting those it starts
                                      followed by a dash (micro, baseline, enqueue, drain-c10...)
                        --masters N,N the masters axis of sharded-drain: one sharded queue (2
                                      shards per master) drained on a Redis Cluster of each
                                      count, --tasks per master (default 1,2; at most 32)
                        --workers-per-master N
                                      sharded-drain processes per master (default 1)
                        --bin-dir DIR run the asynq-bench in DIR instead of building it, and
                                      the peers of --go and --others found there (no cargo:
                                      no micro-benchmarks or --peer)
                        --out DIR     write report.{md,json} to DIR instead of target/bench
  bench-bundle DIR    build the release binaries and copy them, stripped, into DIR with
                      redis-server (ASYNQ_REDIS_SERVER_BIN or PATH), the shared libraries they
                      link (ldd) and a run.sh that runs the bench there without Rust, network
                      or Redis: DIR/run.sh OUT_DIR runs the masters axis 1,2,4,8 and the
                      enqueue scenarios and writes the figures to OUT_DIR (TASKS, RUNS, MASTERS,
                      WORKERS_PER_MASTER, ONLY change them; see DIR/run.sh)
  fuzz [--seconds N] [TARGET...]
                      run each cargo-fuzz target in fuzz/ for N seconds (default 60):
                      task_message, cron_spec, go_duration, web_request; needs cargo-fuzz
  chaos [OPTIONS]     the chaos suite: real processes, real redis-servers, faults injected;
                      prints one ledger line per scenario (full profile: several minutes)
                        --quick          the CI sizes (the integration test runs these)
                        --scenario NAME  one of kill-worker, restart-redis, redis-unreachable,
                                         sigterm, many-workers, sentinel-failover,
                                         cluster-failover, redis-frozen,
                                         restart-redis-repeatedly, kill-prefetching-worker,
                                         oversized-enqueue, kill-worker-holding-slots,
                                         kill-workers-during-workflow,
                                         kill-workers-during-cross-queue-workflow,
                                         kill-workers-during-sharded-drain, durable-steps
                                         (default: all)
  help                print this message";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        "test" => test::parse_args(rest).and_then(|extra| test::run(&extra)),
        "bench" => bench::parse_args(rest).and_then(|options| bench::run(&options)),
        "bench-bundle" => bundle::parse_args(rest).and_then(|dir| bundle::run(&dir)),
        "chaos" => chaos::parse_args(rest).and_then(|options| chaos::run(&options)),
        "fuzz" => fuzz::parse_args(rest).and_then(|options| fuzz::run(&options)),
        "ci" => match rest {
            [] => ci::run(),
            _ => Err(anyhow::anyhow!("`ci` takes no arguments, got {rest:?}")),
        },
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => {
            eprintln!("xtask: unknown command `{other}`\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if let Some(failed) = err.downcast_ref::<cmd::CommandFailed>() {
                eprintln!("xtask: error: {failed}");
                // Pass the child's exit code on, so callers see what the test runner said.
                return ExitCode::from(failed.code.unwrap_or(1).clamp(1, 255) as u8);
            }
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the parent of this crate's directory.
fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().expect("xtask lives one level below the workspace root").to_path_buf()
}

/// Prints one progress line, prefixed `xtask:`.
fn step(message: impl std::fmt::Display) {
    eprintln!("xtask: {message}");
}
