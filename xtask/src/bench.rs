//! `cargo xtask bench`: measures asynq on a private Redis and writes `target/bench/report.md`
//! and `target/bench/report.json`.
//!
//! Steps:
//!
//! 1. make sure `redis-server` exists (as `cargo xtask test` does);
//! 2. build the `asynq-bench` binary in release mode (and, with `--peer`, `--go` and `--others`,
//!    the peer benchmarks of the `asynq` 0.1.8 crate, of Go asynq, and of apalis and rusty-sidekiq);
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
//!    groups), as rows `go-<scenario>`; with `--others`, apalis and rusty-sidekiq enqueue, drain
//!    and (beside our `pickup-latency-c10`) pick up in the same rounds, as rows `<queue>-<scenario>`
//!    ([`others`]);
//! 7. with `sharded-drain` selected, start a Redis Cluster per point of the masters axis
//!    (`--masters`) and run each point in every round after the other scenarios ([`sharded`]);
//! 8. stop Redis (also on errors), write the report and print its table.
//!
//! With `--bin-dir`, step 2 takes `asynq-bench` from that directory instead of building it, so
//! that the bench runs where there is no Rust toolchain (the bundle of `cargo xtask bench-bundle`),
//! and `--go` and `--others` take their peers' binaries from it too.

mod awake;
mod cluster;
mod limit_target;
mod micro;
mod others;
mod peer;
mod pin;
mod report;
mod resp;
mod scenarios;
mod schedule_target;
mod server;
mod sharded;
mod stats;
mod steps_target;
mod targets;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::{cmd, redis, step};
use awake::Awake;
pub(crate) use others::Others;
pub(crate) use peer::{Peer, PeerKind};
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
    /// Also run apalis and rusty-sidekiq.
    others: bool,
    /// Tasks per throughput scenario, instead of the default.
    tasks: Option<u64>,
    /// Rounds of the throughput scenarios and peers, instead of the default.
    runs: Option<usize>,
    /// Run only the scenarios named by one of these, or whose names continue one of them after
    /// a dash (`drain` selects `drain-c10` and `drain-c100`; `micro` the micro-benchmarks);
    /// all when empty.
    only: Vec<String>,
    /// The masters axis of `sharded-drain`, instead of [`sharded::DEFAULT_MASTERS`].
    masters: Option<Vec<usize>>,
    /// `sharded-drain` processes per master, instead of 1.
    workers_per_master: Option<usize>,
    /// Where to take `asynq-bench` from instead of building it.
    bin_dir: Option<PathBuf>,
    /// Where to write the report instead of `target/bench`.
    out: Option<PathBuf>,
}

impl Options {
    fn selects(&self, name: &str) -> bool {
        self.only.is_empty()
            || self.only.iter().any(|wanted| {
                name.strip_prefix(wanted.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
            })
    }

    fn masters(&self) -> Vec<usize> {
        self.masters.clone().unwrap_or_else(|| sharded::DEFAULT_MASTERS.to_vec())
    }

    fn workers_per_master(&self) -> usize {
        self.workers_per_master.unwrap_or(1)
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

    /// How the run was set up, for the report; `masters`: the masters axis run.
    fn describe(&self, sizes: &Sizes, pinning: Pinning, awake: &Awake, masters: &[usize]) -> String {
        let axis = if masters.is_empty() {
            String::new()
        } else {
            let masters: Vec<String> = masters.iter().map(usize::to_string).collect();
            format!(
                "; masters axis ({}): Redis Clusters of {} masters, unpinned, {} tasks per master, {} `sharded-drain` \
                 process(es) per master at concurrency {}",
                sharded::NAME,
                masters.join(", "),
                sizes.tasks,
                self.workers_per_master(),
                sharded::CONCURRENCY
            )
        };
        let settings = format!(
            "{} tasks per throughput scenario, {} run(s) each (medians); latency: up to {} samples or {} s; \
             idle: a {} s window; Redis and benchmark {}; idle CPUs {}",
            sizes.tasks,
            self.runs(),
            sizes.latency_samples,
            sizes.latency_max_secs,
            sizes.idle_window.as_secs(),
            if pinning.is_enabled() { "pinned to CPUs 0 and 1" } else { "not pinned" },
            if awake.is_enabled() { "kept awake (`--awake`: CPU latency QoS 0 µs)" } else { "free to halt" },
        );
        settings + &axis
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
            "--others" => options.others = true,
            "--tasks" => options.tasks = Some(positive(flag, &value()?)?),
            "--runs" => options.runs = Some(positive(flag, &value()?)?),
            "--only" => options.only.extend(value()?.split(',').map(str::to_owned)),
            "--masters" => options.masters = Some(sharded::parse_masters(&value()?)?),
            "--workers-per-master" => options.workers_per_master = Some(positive(flag, &value()?)?),
            "--bin-dir" => options.bin_dir = Some(PathBuf::from(value()?)),
            "--out" => options.out = Some(PathBuf::from(value()?)),
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
    let masters: Vec<usize> =
        options.masters().into_iter().filter(|masters| options.selects(&sharded::row_name(*masters))).collect();
    let target = target_dir();
    let redis_server = redis::ensure()?;

    let binary = match &options.bin_dir {
        Some(dir) => prebuilt(options, dir)?,
        None => {
            cmd::run(&mut cmd::cargo_command(["build", "--release", "-p", "asynq-bench", "--bin", "asynq-bench"]))?;
            target.join("release/asynq-bench")
        }
    };
    let mut peers = Vec::new();
    if options.peer {
        peers.push(Peer::build(PeerKind::RustAsynq, target.join("bench/peer"))?);
    }
    if options.go {
        peers.push(match &options.bin_dir {
            Some(dir) => Peer::prebuilt_go(dir)?,
            None => Peer::build(PeerKind::GoAsynq, target.join("bench/go-peer"))?,
        });
    }
    let others = match (options.others, &options.bin_dir) {
        (false, _) => None,
        (true, Some(dir)) => Some(Others::prebuilt(dir)?),
        (true, None) => Some(Others::build(target.join("bench/other-peers"))?),
    };
    let micro = if options.selects(MICRO) {
        step("running the micro-benchmarks");
        micro::run(options.quick, &target.join("bench/criterion"))?
    } else {
        Vec::new()
    };

    let pinning = Pinning::new(options.pin);
    let awake = Awake::new(options.awake);
    let mut redis = if scenarios.is_empty() && peers.is_empty() && others.is_none() {
        None
    } else {
        Some(RedisServer::start(&redis_server, pinning)?)
    };
    if let Some(redis) = &redis {
        step(format_args!("benchmarking against {}", redis.url()));
    }
    let mut axis = if masters.is_empty() {
        None
    } else {
        step(format_args!("starting Redis Clusters of {masters:?} masters for {}", sharded::NAME));
        let workers = options.workers_per_master();
        Some(sharded::Axis::start(&redis_server, binary.clone(), &masters, sizes.tasks, workers)?)
    };
    let mut rows = Vec::new();
    let runs = options.runs();
    // Round after round of every scenario and peer, so that a change in the machine's load
    // shifts ours and the peers' alike, and the ratios stay side by side.
    for index in 1..=runs {
        if let Some(redis) = &mut redis {
            let mut runner = Runner::new(redis, binary.clone(), pinning, sizes);
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
            if let Some(others) = &others {
                // Their pickups run beside ours, which runs in the first round only.
                let pickup = index == 1 && scenarios.iter().any(|scenario| others::is_pickup(scenario.name));
                let other_rows = others.run(runner.redis(), pinning, &sizes, pickup)?;
                let summary: Vec<String> =
                    other_rows.iter().map(|row| format!("{} {}", row.scenario, headline(row))).collect();
                step(format_args!("others run {index}/{runs}: {}", summary.join("; ")));
                rows.extend(other_rows);
            }
        }
        if let Some(axis) = &mut axis {
            for row in axis.run_round()? {
                step(format_args!("{} run {index}/{runs}: {}", row.scenario, headline(&row)));
                rows.push(row);
            }
        }
    }
    drop(redis);
    drop(axis);

    let report = Report {
        machine: Machine::detect(&redis_server),
        settings: options.describe(&sizes, pinning, &awake, &masters),
        cpus_awake: awake.is_enabled(),
        rows: report::medians(rows),
        ratios: peers.iter().flat_map(Peer::ratios).chain(others.iter().flat_map(|_| others::ratios())).collect(),
        micro,
    };
    let dir = options.out.clone().unwrap_or_else(|| target.join("bench"));
    report.write(&dir)?;
    println!("\n{}", report.summary());
    step(format_args!("wrote {} and {}", dir.join("report.md").display(), dir.join("report.json").display()));
    Ok(())
}

/// The `asynq-bench` in `dir` (`--bin-dir`), where nothing is built: the Go peer and the other
/// queues' peers are taken from `dir` too (as a bench bundle carries them), while the `asynq`
/// 0.1.8 peer and the micro-benchmarks, which need cargo, cannot run.
fn prebuilt(options: &Options, dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    if options.peer {
        bail!("--peer builds its peer, which --bin-dir cannot: leave it out");
    }
    if options.selects(MICRO) {
        bail!("the micro-benchmarks need cargo, which --bin-dir runs without: name the scenarios with --only");
    }
    let binary = dir.join("asynq-bench");
    if !binary.is_file() {
        bail!("--bin-dir {}: there is no asynq-bench in it", dir.display());
    }
    Ok(binary)
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
pub(crate) fn target_dir() -> PathBuf {
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
        let options = parse(&[
            "--quick",
            "--pin",
            "--awake",
            "--peer",
            "--go",
            "--others",
            "--tasks",
            "5000",
            "--only=drain,micro",
        ])
        .unwrap();
        assert!(options.quick && options.pin && options.awake && options.peer && options.go && options.others);
        assert_eq!(options.tasks, Some(5_000));
        assert_eq!(options.only, ["drain", "micro"]);
        assert_eq!(parse(&["--tasks=7"]).unwrap().tasks, Some(7));
        assert!(parse(&["--tasks"]).is_err());
        assert!(parse(&["--tasks", "0"]).is_err());
        assert!(parse(&["--tasks", "many"]).is_err());
        assert_eq!(parse(&["--runs", "9"]).unwrap().runs(), 9);
        assert!(parse(&["--runs", "0"]).is_err());
        assert!(parse(&["--fast"]).is_err());
        let bundle =
            parse(&["--bin-dir", "/b", "--out=/o", "--masters", "4,1,2", "--workers-per-master", "2"]).unwrap();
        assert_eq!((bundle.bin_dir.as_deref(), bundle.out.as_deref()), (Some("/b".as_ref()), Some("/o".as_ref())));
        assert_eq!((bundle.masters(), bundle.workers_per_master()), (vec![1, 2, 4], 2));
        assert_eq!((Options::default().masters(), Options::default().workers_per_master()), (vec![1, 2], 1));
        assert!(parse(&["--masters", "0"]).is_err());
        assert!(parse(&["--workers-per-master", "0"]).is_err());
    }

    #[test]
    fn a_prebuilt_bench_runs_named_scenarios_and_the_peers_beside_it() {
        let dir = std::env::temp_dir().join(format!("xtask-prebuilt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let named = parse(&["--only", "sharded-drain"]).unwrap();
        assert!(prebuilt(&named, &dir).unwrap_err().to_string().contains("no asynq-bench"));
        std::fs::write(dir.join("asynq-bench"), "").unwrap();
        assert_eq!(prebuilt(&named, &dir).unwrap(), dir.join("asynq-bench"));
        assert!(prebuilt(&Options::default(), &dir).is_err(), "the micro-benchmarks need cargo");
        assert!(prebuilt(&parse(&["--only", "enqueue", "--peer"]).unwrap(), &dir).is_err(), "--peer needs cargo");
        // The Go and other queues' peers are taken from the same directory, as a bundle carries them.
        assert!(prebuilt(&parse(&["--only", "enqueue", "--go", "--others"]).unwrap(), &dir).is_ok());
        assert!(Peer::prebuilt_go(&dir).unwrap_err().to_string().contains(Peer::GO_BINARY));
        assert!(Others::prebuilt(&dir).unwrap_err().to_string().contains(Others::BINARY));
        std::fs::write(dir.join(Peer::GO_BINARY), "").unwrap();
        std::fs::write(dir.join(Others::BINARY), "").unwrap();
        assert_eq!(Peer::prebuilt_go(&dir).unwrap().binary(), dir.join(Peer::GO_BINARY));
        assert_eq!(Others::prebuilt(&dir).unwrap().binary(), dir.join(Others::BINARY));
        std::fs::remove_dir_all(&dir).unwrap();
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
