//! `cargo xtask bench`: measures asynq on a private Redis and writes `target/bench/report.md`
//! and `target/bench/report.json`.
//!
//! Steps:
//!
//! 1. make sure `redis-server` exists (as `cargo xtask test` does);
//! 2. build the `asynq-bench` binary in release mode (and, with `--peer` and `--go`, the peer
//!    benchmarks of the `asynq` 0.1.8 crate and of Go asynq);
//! 3. run the criterion micro-benchmarks (`bench/benches/micro.rs`);
//! 4. start a `redis-server` of our own on a free loopback port, without persistence (with
//!    `--awake`, first ask Linux to keep idle CPUs awake for the run: [`awake`]);
//! 5. run each end-to-end scenario ([`scenarios`]) as `asynq-bench` processes on a flushed
//!    Redis, measuring Redis's CPU and commands around them ([`stats`]); throughput scenarios
//!    run three times (once with `--quick`) and the report keeps medians ([`report`]);
//! 6. with `--peer` or `--go`, run each peer as often ([`peer`]), in the same rounds: round
//!    after round of all scenarios and peers, so that ratios compare runs made side by side;
//!    with `--go`, Go asynq also does the work of those selected scenarios it can do (many
//!    queues, deep backlogs, failures, streaming, bulk actions, pickup, idle servers, 64 producers, 100 000
//!    groups), as rows `go-<scenario>`;
//! 7. stop Redis (also on errors), write the report and print its table.

mod awake;
mod limit_target;
mod micro;
mod peer;
mod pin;
mod report;
mod resp;
mod scenarios;
mod schedule_target;
mod server;
mod stats;
mod steps_target;
mod targets;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::{cmd, redis, step};
use awake::Awake;
use peer::{Peer, PeerKind};
use pin::Pinning;
use report::{Machine, Report, Row};
use scenarios::{Runner, Sizes};
use server::RedisServer;

/// The name `--only` gives the micro-benchmarks.
const MICRO: &str = "micro";

/// What `cargo xtask bench` was asked to do.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Options {
    /// Small sizes and one run each: a smoke test.
    quick: bool,
    /// Redis on CPU 0, the benchmark on CPU 1.
    pin: bool,
    /// Idle CPUs kept polling rather than halting.
    awake: bool,
    /// Also run the `asynq` 0.1.8 peer.
    peer: bool,
    /// Also run Go asynq.
    go: bool,
    /// Tasks per throughput scenario, instead of the default.
    tasks: Option<u64>,
    /// Rounds of the throughput scenarios and peers, instead of the default.
    runs: Option<usize>,
    /// Run only the scenarios named by one of these, or whose names continue one of them after
    /// a dash (`drain` selects `drain-c10` and `drain-c100`; `micro` the micro-benchmarks);
    /// all when empty.
    only: Vec<String>,
}

impl Options {
    fn selects(&self, name: &str) -> bool {
        self.only.is_empty()
            || self.only.iter().any(|wanted| {
                name.strip_prefix(wanted.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
            })
    }

    fn runs(&self) -> usize {
        self.runs.unwrap_or(if self.quick { 1 } else { 3 })
    }

    fn sizes(&self) -> Sizes {
        let default_tasks = if self.quick { 2_000 } else { 100_000 };
        Sizes {
            tasks: self.tasks.unwrap_or(default_tasks),
            latency_samples: if self.quick { 200 } else { 2_000 },
            latency_max_secs: if self.quick { 5 } else { 20 },
            idle_window: Duration::from_secs(if self.quick { 3 } else { 10 }),
        }
    }

    /// How the run was set up, for the report.
    fn describe(&self, sizes: &Sizes, pinning: Pinning, awake: &Awake) -> String {
        format!(
            "{} tasks per throughput scenario, {} run(s) each (medians); latency: up to {} samples or {} s; \
             idle: a {} s window; Redis and benchmark {}; idle CPUs {}",
            sizes.tasks,
            self.runs(),
            sizes.latency_samples,
            sizes.latency_max_secs,
            sizes.idle_window.as_secs(),
            if pinning.is_enabled() { "pinned to CPUs 0 and 1" } else { "not pinned" },
            if awake.is_enabled() { "kept awake (`--awake`: CPU latency QoS 0 µs)" } else { "free to halt" },
        )
    }
}

/// Parses the arguments after `bench`.
pub(crate) fn parse_args(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value =
            || inline.clone().or_else(|| args.next().cloned()).with_context(|| format!("{flag} needs a value"));
        match flag {
            "--quick" => options.quick = true,
            "--pin" => options.pin = true,
            "--awake" => options.awake = true,
            "--peer" => options.peer = true,
            "--go" => options.go = true,
            "--tasks" => options.tasks = Some(positive(flag, &value()?)?),
            "--runs" => options.runs = Some(positive(flag, &value()?)?),
            "--only" => options.only.extend(value()?.split(',').map(str::to_owned)),
            _ => bail!("unexpected argument `{arg}` for `bench`; see `cargo xtask help`"),
        }
    }
    Ok(options)
}

/// The value of `flag`, a number above zero.
fn positive<N: std::str::FromStr + Default + PartialOrd>(flag: &str, value: &str) -> anyhow::Result<N> {
    value
        .parse()
        .ok()
        .filter(|n| *n > N::default())
        .with_context(|| format!("{flag} needs a positive number, got {value:?}"))
}

/// Runs the benchmark as `options` say.
pub(crate) fn run(options: &Options) -> anyhow::Result<()> {
    let sizes = options.sizes();
    let scenarios: Vec<_> = scenarios::all(&sizes).into_iter().filter(|s| options.selects(s.name)).collect();
    let target = target_dir();
    let redis_server = redis::ensure()?;

    cmd::run(&mut cmd::cargo_command(["build", "--release", "-p", "asynq-bench", "--bin", "asynq-bench"]))?;
    let mut peers = Vec::new();
    if options.peer {
        peers.push(Peer::build(PeerKind::RustAsynq, target.join("bench/peer"))?);
    }
    if options.go {
        peers.push(Peer::build(PeerKind::GoAsynq, target.join("bench/go-peer"))?);
    }
    let micro = if options.selects(MICRO) {
        step("running the micro-benchmarks");
        micro::run(options.quick, &target.join("bench/criterion"))?
    } else {
        Vec::new()
    };

    let pinning = Pinning::new(options.pin);
    let awake = Awake::new(options.awake);
    let mut redis = RedisServer::start(&redis_server, pinning)?;
    step(format_args!("benchmarking against {}", redis.url()));
    let mut rows = Vec::new();
    let runs = options.runs();
    // Round after round of every scenario and peer, so that a change in the machine's load
    // shifts ours and the peers' alike, and the ratios stay side by side.
    for index in 1..=runs {
        let mut runner = Runner::new(&mut redis, target.join("release/asynq-bench"), pinning, sizes);
        for scenario in scenarios.iter().filter(|scenario| scenario.throughput || index == 1) {
            let row = Row::from_run(scenario.name, &runner.run(scenario)?);
            let of = if scenario.throughput { runs } else { 1 };
            step(format_args!("{} run {index}/{of}: {}", scenario.name, headline(&row)));
            rows.push(row);
        }
        for peer in &peers {
            let mut peer_rows = peer.run(runner.redis(), pinning, sizes.tasks)?;
            let runs_now = |name: &str| scenarios.iter().any(|s| s.name == name && (s.throughput || index == 1));
            peer_rows.extend(peer.run_twins(&mut runner, pinning, &sizes, runs_now)?);
            let summary: Vec<String> =
                peer_rows.iter().map(|row| format!("{} {}", row.scenario, headline(row))).collect();
            step(format_args!("{} run {index}/{runs}: {}", peer.name(), summary.join("; ")));
            rows.extend(peer_rows);
        }
    }
    drop(redis);

    let report = Report {
        machine: Machine::detect(&redis_server),
        settings: options.describe(&sizes, pinning, &awake),
        cpus_awake: awake.is_enabled(),
        rows: report::medians(rows),
        ratios: peers.iter().flat_map(Peer::ratios).collect(),
        micro,
    };
    let dir = target.join("bench");
    report.write(&dir)?;
    println!("\n{}", report.summary());
    step(format_args!("wrote {} and {}", dir.join("report.md").display(), dir.join("report.json").display()));
    Ok(())
}

/// The number a run is about, for progress lines.
fn headline(row: &Row) -> String {
    if let (Some(p50), Some(p99)) = (row.pickup_p50_ms, row.pickup_p99_ms) {
        format!("pickup p50 {p50:.2} ms, p99 {p99:.2} ms ({} samples)", row.tasks)
    } else if let Some(tasks_per_s) = row.tasks_per_s {
        format!("{tasks_per_s:.0} tasks/s")
    } else if let Some(per_s) = row.redis_cmds_per_s {
        format!("{per_s:.1} Redis commands/s")
    } else {
        "done".to_owned()
    }
}

/// Cargo's target directory: `CARGO_TARGET_DIR` (relative to the workspace root) or `target`.
fn target_dir() -> PathBuf {
    let root = crate::workspace_root();
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| root.join("target"), |dir| root.join(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Options> {
        parse_args(&args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn parses_flags_and_values() {
        assert_eq!(parse(&[]).unwrap(), Options::default());
        let options =
            parse(&["--quick", "--pin", "--awake", "--peer", "--go", "--tasks", "5000", "--only=drain,micro"]).unwrap();
        assert!(options.quick && options.pin && options.awake && options.peer && options.go);
        assert_eq!(options.tasks, Some(5_000));
        assert_eq!(options.only, ["drain", "micro"]);
        assert_eq!(parse(&["--tasks=7"]).unwrap().tasks, Some(7));
        assert!(parse(&["--tasks"]).is_err());
        assert!(parse(&["--tasks", "0"]).is_err());
        assert!(parse(&["--tasks", "many"]).is_err());
        assert_eq!(parse(&["--runs", "9"]).unwrap().runs(), 9);
        assert!(parse(&["--runs", "0"]).is_err());
        assert!(parse(&["--fast"]).is_err());
    }

    #[test]
    fn quick_runs_are_small_and_single() {
        let quick = parse(&["--quick"]).unwrap();
        assert_eq!((quick.runs(), quick.sizes().tasks), (1, 2_000));
        let full = parse(&["--tasks", "50000"]).unwrap();
        assert_eq!((full.runs(), full.sizes().tasks), (3, 50_000));
    }

    #[test]
    fn only_selects_names_and_their_dash_separated_continuations() {
        let options = parse(&["--only", "drain,micro"]).unwrap();
        assert!(options.selects("drain-c10") && options.selects("drain-2-processes-c10") && options.selects(MICRO));
        assert!(!options.selects("enqueue") && !options.selects("drainage"));
        let exact = parse(&["--only", "drain-c10"]).unwrap();
        assert!(exact.selects("drain-c10") && !exact.selects("drain-c100"));
        assert!(Options::default().selects("anything"));
    }
}
