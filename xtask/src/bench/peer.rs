//! The peers: other asynq implementations, built and run against the same private Redis in
//! the same run, so that ratios compare like with like.
//!
//! - `--peer`: the `asynq` 0.1.8 crate (`../shared/peers/rust-asynq-0.1.8`);
//! - `--go`: Go asynq v0.26 (`xtask/go-peer`, built with the Go toolchain on `PATH`).
//!
//! Each enqueues N tasks one at a time, then drains them at concurrency 10, and prints one
//! `RESULT key=value ...` line. Its two phases become two rows, and the whole lifecycle a third.
//! Redis and the peer's CPU are measured around each process: the `asynq` 0.1.8 peer runs both
//! phases in one, the Go peer each phase in its own.
//!
//! The Go peer also does the work of some of our scenarios where Go asynq can do the same
//! ([`Twin`]): 64 producers sharing one client, draining at concurrency 100 on one queue, beside
//! 999 empty ones and with up to 1 000 000 pending, failing for good into an empty archive and one
//! at its cap, producers and a server streaming together, the bulk operator actions, the pickup by
//! an idle server, idle servers on 3 and 1 000 queues (one to fifty of them), and an idle group
//! aggregator and operators' reads on a queue of 100 000 groups. Each is prepared as ours is, by
//! `asynq-bench fill` or `fill-groups` (unmeasured; Go reads what we write), measured to its end or
//! over the same idle window as ours, and becomes a row `go-<our scenario>`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

use super::pin::Pinning;
use super::report::{Ratio, Row, Run};
use super::scenarios::{
    ARCHIVE_CAP, BULK_ACTION_ARGS, BULK_ACTIONS, DEEP_BACKLOG_DRAINS, DEEP_BACKLOG_SLICE, DEEP_BACKLOGS,
    ENQUEUE_CONCURRENT, FAIL_INTO_EMPTY_ARCHIVE, FAIL_INTO_FULL_ARCHIVE, FAILURES_AT_CAP, FAILURES_INTO_EMPTY,
    GROUP_READS, IDLE_AGGREGATOR, IDLE_SERVER_COUNTS, IDLE_SERVERS, MANY_GROUPS, MANY_QUEUES, MANY_QUEUES_DRAIN,
    MANY_QUEUES_IDLE, MANY_QUEUES_PICKUP, Runner, STREAM_PRODUCERS, STREAM_RATES, STREAMS, Sizes, stream_tasks,
    strings,
};
use super::server::RedisServer;
use super::stats::{self, Usage};
use crate::cmd;

/// The concurrency the peers' servers run with.
const CONCURRENCY: usize = 10;
/// How long Go's drain beside [`MANY_QUEUES`]` - 1` empty queues runs at most: it processes
/// tens of tasks a second, so it stops long before the run's task count.
const GO_MANY_QUEUES_SECS: u64 = 20;
/// The row of Go asynq's twin of our `scenario` (`--go`).
pub(crate) fn go(scenario: &str) -> String {
    format!("go-{scenario}")
}

/// Go's twin of [`MANY_QUEUES_DRAIN`], as [`go`] names it (a ratio needs the name as a constant).
pub(crate) const GO_MANY_QUEUES_DRAIN: &str = "go-drain-c100-beside-999-empty";
/// The clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on Linux).
const CLOCK_TICKS_PER_SEC: f64 = 100.0;

/// Which implementation a peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeerKind {
    /// The `asynq` 0.1.8 crate.
    RustAsynq,
    /// Go asynq, the reference implementation.
    GoAsynq,
}

impl PeerKind {
    /// The peer's rows, in report order: enqueue, drain, and the whole lifecycle.
    fn rows(self) -> [&'static str; 3] {
        match self {
            PeerKind::RustAsynq => ["peer-enqueue", "peer-drain-c10", "peer-enqueue-then-drain-c10"],
            PeerKind::GoAsynq => ["go-enqueue", "go-drain-c10", "go-enqueue-then-drain-c10"],
        }
    }

    /// Our throughputs next to the peer's.
    fn ratios(self) -> Vec<Ratio> {
        let [enqueue, drain, _] = self.rows();
        let name = match self {
            PeerKind::RustAsynq => "the `asynq` 0.1.8 crate",
            PeerKind::GoAsynq => "Go asynq",
        };
        let mut ratios = vec![
            Ratio { label: format!("enqueue one at a time, ours / {name}'s"), ours: "enqueue", peer: enqueue },
            Ratio { label: format!("processing at concurrency 10, ours / {name}'s"), ours: "drain-c10", peer: drain },
        ];
        if self == PeerKind::GoAsynq {
            ratios.extend([
                Ratio {
                    label: format!("processing at concurrency 100, ours / {name}'s"),
                    ours: "drain-c100",
                    peer: "go-drain-c100",
                },
                Ratio {
                    label: format!("processing at concurrency 100 beside 999 empty queues, ours / {name}'s"),
                    ours: MANY_QUEUES_DRAIN,
                    peer: GO_MANY_QUEUES_DRAIN,
                },
            ]);
        }
        ratios
    }
}

/// The peer binary `name` in `dir` (`--bin-dir`, a bench bundle), which `flag` runs.
///
/// Errors: no such file.
pub(crate) fn prebuilt_binary(dir: &Path, name: &str, flag: &str) -> anyhow::Result<PathBuf> {
    let binary = dir.join(name);
    if !binary.is_file() {
        bail!("{flag} with --bin-dir needs {name} in {}, which is missing", dir.display());
    }
    Ok(binary)
}

/// A built peer benchmark.
#[derive(Debug)]
pub(crate) struct Peer {
    kind: PeerKind,
    binary: PathBuf,
}

impl Peer {
    /// The Go peer's binary, as [`Peer::build`] names it and a bench bundle carries it.
    pub(crate) const GO_BINARY: &str = "go-asynq-peer";

    /// The Go peer built already, as `dir/`[`Peer::GO_BINARY`] (`--bin-dir`, a bench bundle).
    ///
    /// Errors: no such file.
    pub(crate) fn prebuilt_go(dir: &Path) -> anyhow::Result<Self> {
        Ok(Self { kind: PeerKind::GoAsynq, binary: prebuilt_binary(dir, Self::GO_BINARY, "--go")? })
    }

    /// Its binary.
    pub(crate) fn binary(&self) -> &Path {
        &self.binary
    }

    /// Builds the peer in release mode under `target_dir` (its sources stay untouched, except
    /// for the `go.sum` Go may write beside the Go peer's `go.mod`).
    pub(crate) fn build(kind: PeerKind, target_dir: PathBuf) -> anyhow::Result<Self> {
        match kind {
            PeerKind::RustAsynq => build_rust_peer(target_dir),
            PeerKind::GoAsynq => build_go_peer(target_dir),
        }
        .map(|binary| Self { kind, binary })
    }

    /// Our throughputs next to this peer's.
    pub(crate) fn ratios(&self) -> Vec<Ratio> {
        self.kind.ratios()
    }

    /// The name of the peer's progress lines.
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            PeerKind::RustAsynq => "peer",
            PeerKind::GoAsynq => "go",
        }
    }

    /// One run of the peer with `tasks` tasks against `redis` (which the peer flushes): one row
    /// per phase and one for the whole lifecycle.
    ///
    /// The `asynq` 0.1.8 peer runs both phases in one process, so Redis and client CPU are
    /// measured for the lifecycle only. The Go peer runs each phase as a process of its own, so
    /// each phase's row carries them too, as our own scenarios' rows do.
    pub(crate) fn run(&self, redis: &mut RedisServer, pinning: Pinning, tasks: u64) -> anyhow::Result<Vec<Row>> {
        redis.reset()?;
        let (tasks_arg, concurrency_arg) = (tasks.to_string(), CONCURRENCY.to_string());
        let phase = |tasks_per_s, cost: Option<Cost>| {
            let mut run =
                Run { tasks, concurrency: Some(CONCURRENCY), tasks_per_s: Some(tasks_per_s), ..Run::default() };
            if let Some(cost) = cost {
                (run.redis, run.window_s, run.client_cpu_s) = (Some(cost.usage), cost.window_s, cost.client_cpu_s);
            }
            run
        };
        let (enqueue, drain, lifecycle) = match self.kind {
            PeerKind::RustAsynq => {
                let (result, cost) = self.invoke(redis, pinning, &["run", &tasks_arg, &concurrency_arg])?;
                let lifecycle_s = result.field("enqueue_s")? + result.field("process_s")?;
                (
                    phase(result.field("enqueue_tps")?, None),
                    phase(result.field("process_tps")?, None),
                    phase(tasks as f64 / lifecycle_s, Some(cost)),
                )
            }
            PeerKind::GoAsynq => {
                let (enqueued, enqueue_cost) = self.invoke(redis, pinning, &["enqueue", &tasks_arg])?;
                let (drained, drain_cost) = self.invoke(redis, pinning, &["drain", &tasks_arg, &concurrency_arg])?;
                let lifecycle_s = enqueued.field("enqueue_s")? + drained.field("process_s")?;
                (
                    phase(enqueued.field("enqueue_tps")?, Some(enqueue_cost.clone())),
                    phase(drained.field("process_tps")?, Some(drain_cost.clone())),
                    phase(tasks as f64 / lifecycle_s, Some(enqueue_cost + drain_cost)),
                )
            }
        };
        let [enqueue_row, drain_row, lifecycle_row] = self.kind.rows();
        Ok(vec![
            Row::from_run(enqueue_row, &Run { concurrency: None, ..enqueue }),
            Row::from_run(drain_row, &drain),
            Row::from_run(lifecycle_row, &lifecycle),
        ])
    }

    /// One run of each of the peer's [`Twin`]s whose scenario `selected` takes, at `sizes`: a
    /// row `go-<scenario>` each. Only the Go peer has twins.
    pub(crate) fn run_twins(
        &self,
        runner: &mut Runner<'_>,
        pinning: Pinning,
        sizes: &Sizes,
        selected: impl Fn(&str) -> bool,
    ) -> anyhow::Result<Vec<Row>> {
        if self.kind != PeerKind::GoAsynq {
            return Ok(Vec::new());
        }
        let mut rows = Vec::new();
        for twin in Twin::all(sizes).into_iter().filter(|twin| selected(twin.scenario)) {
            runner.redis().reset()?;
            if let Some(fill) = &twin.fill {
                runner.prepare(&fill.iter().map(String::as_str).collect::<Vec<_>>())?;
            }
            let run = if twin.idle {
                // `<command> <seconds> <args...>`, for as long as our idle processes run.
                let seconds = runner.idle_seconds().to_string();
                let mut args = twin.args.clone();
                args.insert(1, seconds);
                let mut command = self.command(runner.redis(), pinning, &args);
                command.stdout(Stdio::piped());
                let (child, usage, window_s) = runner.idle_window(|_| {
                    command.spawn().with_context(|| format!("cannot run {}", self.binary.display()))
                })?;
                let output = child.wait_with_output().context("the idle Go peer vanished")?;
                let result = self.result(&args, &output)?;
                Run {
                    concurrency: result.optional("conc").map(|c| c as usize),
                    redis: Some(usage),
                    window_s,
                    ..Run::default()
                }
            } else {
                let (result, cost) = self.invoke(runner.redis(), pinning, &twin.args)?;
                Run {
                    redis: Some(cost.usage),
                    window_s: cost.window_s,
                    client_cpu_s: cost.client_cpu_s,
                    ..result.run()
                }
            };
            rows.push(Row::from_run(&go(twin.scenario), &run));
        }
        Ok(rows)
    }

    /// The peer's process with `args`, against `redis`.
    fn command(&self, redis: &RedisServer, pinning: Pinning, args: &[impl AsRef<std::ffi::OsStr>]) -> Command {
        command(&self.binary, redis, pinning, args)
    }

    /// The `RESULT` line of a finished run with `args`, which must have succeeded.
    fn result(&self, args: &[impl AsRef<str>], output: &std::process::Output) -> anyhow::Result<ResultLine> {
        result(&self.binary, args, output)
    }

    /// Runs the peer once with `args`: its `RESULT` line, and what Redis and the process spent.
    fn invoke(
        &self,
        redis: &mut RedisServer,
        pinning: Pinning,
        args: &[impl AsRef<str>],
    ) -> anyhow::Result<(ResultLine, Cost)> {
        invoke(&self.binary, redis, pinning, args)
    }
}

/// A peer's process, `binary` with `args`, against `redis` (`REDIS_URL`).
fn command(binary: &Path, redis: &RedisServer, pinning: Pinning, args: &[impl AsRef<std::ffi::OsStr>]) -> Command {
    let mut command = pinning.bench(binary);
    command.args(args);
    command.env("REDIS_URL", format!("{}/", redis.url()));
    command.stdin(Stdio::null()).stderr(Stdio::inherit());
    command
}

/// The `RESULT` line of a finished run of `binary` with `args`, which must have succeeded.
fn result(binary: &Path, args: &[impl AsRef<str>], output: &std::process::Output) -> anyhow::Result<ResultLine> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        bail!("{} {} failed ({}); it printed {stdout:?}", binary.display(), args.join(" "), output.status);
    }
    ResultLine::find(&stdout)
}

/// Runs a peer's `binary` once with `args` against `redis`: its `RESULT` line, and what Redis
/// and the process spent.
pub(super) fn invoke(
    binary: &Path,
    redis: &mut RedisServer,
    pinning: Pinning,
    args: &[impl AsRef<str>],
) -> anyhow::Result<(ResultLine, Cost)> {
    let os_args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let mut command = command(binary, redis, pinning, &os_args);
    let cpu_before = reaped_children_cpu_s();
    let (output, usage, window_s) =
        stats::measure(redis, || command.output().with_context(|| format!("cannot run {}", binary.display())))?;
    // The peer is the only child reaped meanwhile.
    let client_cpu_s = reaped_children_cpu_s().zip(cpu_before).map(|(after, before)| after - before);
    Ok((result(binary, args, &output)?, Cost { usage, window_s, client_cpu_s }))
}

/// Go asynq doing the work of one of our scenarios: on a flushed Redis, after `asynq-bench`
/// with `fill` when there is one (unmeasured), the Go peer runs with `args`, measured to its
/// end; or, when `idle`, with its first argument, then the seconds our idle processes run, then
/// the others, with Redis measured over the same window as theirs.
#[derive(Debug, Clone, PartialEq)]
struct Twin {
    scenario: &'static str,
    fill: Option<Vec<String>>,
    idle: bool,
    args: Vec<String>,
}

impl Twin {
    /// Every twin, at `sizes`.
    fn all(sizes: &Sizes) -> Vec<Twin> {
        let n = sizes.tasks.to_string();
        let (samples, max_secs) = (sizes.latency_samples.to_string(), sizes.latency_max_secs.to_string());
        let pickup = ["pickup-latency", &samples, &max_secs, "10"];
        let work = |scenario, fill: Option<&[&str]>, args: &[&str]| Twin {
            scenario,
            fill: fill.map(strings),
            idle: false,
            args: strings(args),
        };
        let idle = |scenario, fill: Option<&[&str]>, args: &[&str]| Twin { idle: true, ..work(scenario, fill, args) };
        let (fill, groups) = (["fill", "--tasks", &n], MANY_GROUPS.to_string());
        let fill_groups = ["fill-groups", "--groups", &groups];
        let empty = (MANY_QUEUES - 1).to_string();
        let mut twins = vec![
            work(ENQUEUE_CONCURRENT, None, &["enqueue-concurrent", &n, "64"]),
            work("drain-c100", Some(&fill), &["drain", &n, "100"]),
            work(MANY_QUEUES_DRAIN, Some(&fill), &["drain", &n, "100", &empty, &GO_MANY_QUEUES_SECS.to_string()]),
        ];
        twins.extend(DEEP_BACKLOG_DRAINS.iter().zip(DEEP_BACKLOGS).map(|(scenario, pending)| {
            let fill = ["fill", "--tasks", &pending.to_string()];
            work(scenario, Some(&fill), &["drain", &pending.min(DEEP_BACKLOG_SLICE).to_string(), "100"])
        }));
        for (scenario, archived, failures) in
            [(FAIL_INTO_EMPTY_ARCHIVE, 0, FAILURES_INTO_EMPTY), (FAIL_INTO_FULL_ARCHIVE, ARCHIVE_CAP, FAILURES_AT_CAP)]
        {
            let (archived, failures) = (archived.to_string(), failures.to_string());
            let fill = ["fill-failing", "--tasks", &failures, "--archived", &archived];
            twins.push(work(scenario, Some(&fill), &["fail", &failures, "100"]));
        }
        twins.extend(BULK_ACTIONS.iter().zip(BULK_ACTION_ARGS).map(|(scenario, action)| {
            let fill = [if action == "run" { "fill-scheduled" } else { "fill" }, "--tasks", &n];
            work(scenario, Some(&fill), &["bulk", &n, action])
        }));
        twins.extend(STREAMS.iter().zip(STREAM_RATES).map(|(scenario, rate)| {
            let (tasks, rate) = (stream_tasks(sizes, rate).to_string(), rate.unwrap_or(0).to_string());
            work(scenario, None, &["stream", &tasks, STREAM_PRODUCERS, "10", &rate])
        }));
        twins.push(work("pickup-latency-c10", None, &pickup));
        twins.push(work(MANY_QUEUES_PICKUP, None, &[&pickup[..], &[empty.as_str()]].concat()));
        twins.push(idle("idle-3-queues", None, &["idle", "10", "1"]));
        twins.push(idle(MANY_QUEUES_IDLE, None, &["idle", "10", "1", &empty]));
        twins.extend(
            IDLE_SERVERS
                .iter()
                .zip(IDLE_SERVER_COUNTS)
                .map(|(scenario, servers)| idle(scenario, None, &["idle", "2", &servers.to_string()])),
        );
        twins.push(idle(IDLE_AGGREGATOR, Some(&fill_groups), &["idle-aggregator", "10"]));
        twins.push(work(GROUP_READS, Some(&fill_groups), &["group-reads", &groups]));
        twins
    }
}

/// What Redis and a peer's processes spent over one or more runs of them.
#[derive(Debug, Clone)]
pub(super) struct Cost {
    /// What Redis did while the processes ran.
    pub(super) usage: Usage,
    /// How long the processes ran, in seconds.
    pub(super) window_s: f64,
    /// The processes' CPU time (user + system), in seconds.
    pub(super) client_cpu_s: Option<f64>,
}

impl std::ops::Add for Cost {
    type Output = Cost;

    fn add(self, other: Cost) -> Cost {
        Cost {
            usage: self.usage + other.usage,
            window_s: self.window_s + other.window_s,
            client_cpu_s: self.client_cpu_s.zip(other.client_cpu_s).map(|(a, b)| a + b),
        }
    }
}

/// Builds `../shared/peers/rust-asynq-0.1.8` (whose own directory is read-only).
fn build_rust_peer(target_dir: PathBuf) -> anyhow::Result<PathBuf> {
    let manifest = crate::workspace_root().join("../shared/peers/rust-asynq-0.1.8/Cargo.toml");
    if !manifest.is_file() {
        bail!("--peer needs the peer benchmark at {}, which is missing", manifest.display());
    }
    let mut build = cmd::cargo_command(["build", "--release", "--locked", "--manifest-path"]);
    build.arg(&manifest).arg("--target-dir").arg(&target_dir);
    cmd::run(&mut build)?;
    Ok(target_dir.join("release/rust-asynq-peer"))
}

/// Builds `xtask/go-peer` with the `go` on `PATH`. Go fetches Go asynq and its dependencies as
/// it always does: the module proxy, a workspace named by `GOWORK` that replaces them with local
/// copies, or a `vendor` directory beside `go.mod` when `GOFLAGS` says `-mod=vendor`. Unless a
/// workspace or `GOFLAGS` decides, `-mod=mod` lets it record their checksums in `go.sum`.
fn build_go_peer(target_dir: PathBuf) -> anyhow::Result<PathBuf> {
    let source = crate::workspace_root().join("xtask/go-peer");
    let binary = target_dir.join(Peer::GO_BINARY);
    let version = Command::new("go").arg("version").output();
    if !version.is_ok_and(|output| output.status.success()) {
        bail!(
            "--go needs the Go toolchain (1.24 or newer) on PATH, and access to Go modules: the module \
             proxy, or GOWORK naming a go.work that replaces them with local copies"
        );
    }
    let mut build = Command::new("go");
    build.arg("build");
    if !in_go_workspace() && !goflags_set_mod() {
        build.arg("-mod=mod");
    }
    build.arg("-o").arg(&binary).arg(".").current_dir(&source);
    cmd::run(&mut build).context("building the Go asynq peer failed; see Go's message above")?;
    Ok(binary)
}

/// Whether `GOWORK` names a workspace, in which Go refuses `-mod=mod`.
fn in_go_workspace() -> bool {
    std::env::var_os("GOWORK").is_some_and(|work| !work.is_empty() && work != "off" && Path::new(&work).is_file())
}

/// Whether `GOFLAGS` already says how Go reads modules (`-mod=vendor`, say), which a `-mod` of
/// ours would override.
fn goflags_set_mod() -> bool {
    std::env::var("GOFLAGS").is_ok_and(|flags| flags.split_whitespace().any(|flag| flag.starts_with("-mod=")))
}

/// The `RESULT key=value ...` line a peer prints: `n=`, and per phase `enqueue_s=`,
/// `enqueue_tps=` or `process_s=`, `process_tps=`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ResultLine(String);

impl ResultLine {
    /// Finds the line in the peer's output.
    pub(super) fn find(stdout: &str) -> anyhow::Result<Self> {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix("RESULT "))
            .map(|line| Self(line.to_owned()))
            .with_context(|| format!("the peer printed no RESULT line: {stdout:?}"))
    }

    /// What a twin's line says of its run, whatever the command: its rate, the tasks it covered
    /// (the samples of a pickup), its concurrency, its pickup percentiles and its timed reads.
    pub(super) fn run(&self) -> Run {
        let rate = ["process_tps", "bulk_tps", "enqueue_tps"].into_iter().find_map(|name| self.optional(name));
        let done = ["processed", "affected", "n"].into_iter().find_map(|name| self.optional(name));
        Run {
            tasks: self.optional("samples").or(rate.and(done)).unwrap_or(0.0) as u64,
            concurrency: self.optional("conc").map(|conc| conc as usize),
            tasks_per_s: rate,
            offered_per_s: self.optional("offered"),
            pickup_p50_ms: self.optional("p50"),
            pickup_p99_ms: self.optional("p99"),
            reads_ms: self.reads_ms(),
            ..Run::default()
        }
    }

    /// The number after `name=`, if the line has one.
    fn optional(&self, name: &str) -> Option<f64> {
        self.0.split_whitespace().find_map(|pair| pair.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    }

    /// The operator reads a run timed: each `<read>_ms=` as `<read>`, in milliseconds.
    fn reads_ms(&self) -> std::collections::BTreeMap<String, f64> {
        self.0
            .split_whitespace()
            .filter_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                Some((name.strip_suffix("_ms")?.to_owned(), value.parse().ok()?))
            })
            .collect()
    }

    /// The number after `name=`.
    fn field(&self, name: &str) -> anyhow::Result<f64> {
        self.0
            .split_whitespace()
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .and_then(|value| value.parse().ok())
            .with_context(|| format!("no number {name}= in the peer's line `RESULT {}`", self.0))
    }
}

/// CPU time (user + system) of this process's children that have been waited for, from
/// `/proc/self/stat` (`cutime` and `cstime`, fields 16 and 17).
fn reaped_children_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(13); // field 3 is the first after `)`
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / CLOCK_TICKS_PER_SEC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_result_line() {
        let stdout = "starting\nRESULT n=100000 conc=10 inflight=1 enqueue_s=7.692 enqueue_tps=13000 \
                      process_s=14.286 process_tps=7000 handler_calls=100000\n";
        let result = ResultLine::find(stdout).unwrap();
        assert_eq!(result.field("n").unwrap(), 100_000.0);
        assert_eq!(result.field("enqueue_s").unwrap(), 7.692);
        assert_eq!(result.field("process_tps").unwrap(), 7_000.0);
        assert!(ResultLine::find("nothing\n").is_err());
        let enqueue_only = ResultLine::find("RESULT n=10 enqueue_s=1 enqueue_tps=10\n").unwrap();
        assert!(enqueue_only.field("process_s").is_err());
        assert!(enqueue_only.field("enqueue").is_err());
    }

    #[test]
    fn go_twins_are_prepared_as_our_scenarios_are_and_named_after_them() {
        let sizes = Sizes {
            tasks: 5_000,
            latency_samples: 300,
            latency_max_secs: 7,
            idle_window: std::time::Duration::from_secs(1),
        };
        let twins = Twin::all(&sizes);
        let scenarios: Vec<&str> = twins.iter().map(|twin| twin.scenario).collect();
        let ours: Vec<&str> = super::super::scenarios::all(&sizes).iter().map(|scenario| scenario.name).collect();
        assert!(
            scenarios.iter().all(|twin| ours.contains(twin)),
            "each twin is of one of our scenarios: {scenarios:?}"
        );
        assert_eq!(twins.len(), 24);
        assert_eq!(GO_MANY_QUEUES_DRAIN, go(MANY_QUEUES_DRAIN));
        let twin = |scenario: &str| twins.iter().find(|twin| twin.scenario == scenario).unwrap();
        let shape = |twin: &Twin| (twin.fill.as_ref().map(|fill| fill.join(" ")), twin.idle, twin.args.join(" "));
        let filled = |fill: &str| Some(fill.to_owned());
        assert_eq!(shape(twin(ENQUEUE_CONCURRENT)), (None, false, "enqueue-concurrent 5000 64".to_owned()));
        assert_eq!(
            shape(twin(MANY_QUEUES_DRAIN)),
            (filled("fill --tasks 5000"), false, "drain 5000 100 999 20".to_owned())
        );
        assert_eq!(
            shape(twin("bulk-run-all")),
            (filled("fill-scheduled --tasks 5000"), false, "bulk 5000 run".to_owned())
        );
        assert_eq!(shape(twin(IDLE_SERVERS[2])), (None, true, "idle 2 50".to_owned()));
        assert_eq!(shape(twin(STREAMS[1])), (None, false, "stream 5000 16 10 20000".to_owned()), "5 000 at most");
        assert_eq!(shape(twin(STREAMS[2])), (None, false, "stream 5000 16 10 0".to_owned()), "as fast as it can");
        assert_eq!(
            shape(twin(DEEP_BACKLOG_DRAINS[2])),
            (filled("fill --tasks 1000000"), false, "drain 50000 100".to_owned())
        );
        assert_eq!(
            shape(twin(DEEP_BACKLOG_DRAINS[0])),
            (filled("fill --tasks 10000"), false, "drain 10000 100".to_owned())
        );
        assert_eq!(
            shape(twin(FAIL_INTO_FULL_ARCHIVE)),
            (filled("fill-failing --tasks 20000 --archived 10000"), false, "fail 20000 100".to_owned())
        );
        assert_eq!(shape(twin(MANY_QUEUES_IDLE)), (None, true, "idle 10 1 999".to_owned()));
        assert_eq!(shape(twin(MANY_QUEUES_PICKUP)), (None, false, "pickup-latency 300 7 10 999".to_owned()));
        let groups = filled("fill-groups --groups 100000");
        assert_eq!(shape(twin(IDLE_AGGREGATOR)), (groups.clone(), true, "idle-aggregator 10".to_owned()));
        assert_eq!(shape(twin(GROUP_READS)), (groups, false, "group-reads 100000".to_owned()));
    }

    #[test]
    fn a_twins_line_says_what_its_run_was() {
        let line = |text: &str| ResultLine::find(&format!("RESULT {text}\n")).unwrap().run();
        let reads = line("n=3 queue_info_ms=77.9 groups_ms=47.5");
        assert_eq!((reads.tasks, reads.tasks_per_s, reads.concurrency), (0, None, None));
        let timed: Vec<(String, f64)> = reads.reads_ms.into_iter().collect();
        assert_eq!(timed, [("groups".to_owned(), 47.5), ("queue_info".to_owned(), 77.9)]);
        let drain = line("n=100 conc=100 processed=489 process_s=20.0 process_tps=24 handler_calls=489");
        assert_eq!((drain.tasks, drain.tasks_per_s, drain.concurrency), (489, Some(24.0), Some(100)));
        let bulk = line("n=100 bulk_s=0.5 bulk_tps=200 affected=100");
        assert_eq!((bulk.tasks, bulk.tasks_per_s, bulk.concurrency), (100, Some(200.0), None));
        let stream = line("n=100 conc=10 processed=100 process_s=0.5 process_tps=200 offered=5000 p50=420.8 p99=863.3");
        assert_eq!((stream.tasks, stream.offered_per_s, stream.pickup_p99_ms), (100, Some(5000.0), Some(863.3)));
        let pickup = line("n=2000 conc=10 samples=6 p50=897.5 p99=1369.4");
        assert_eq!((pickup.tasks, pickup.pickup_p50_ms, pickup.pickup_p99_ms), (6, Some(897.5), Some(1369.4)));
        assert!(pickup.tasks_per_s.is_none() && pickup.reads_ms.is_empty());
    }

    #[test]
    fn ratios_name_our_scenarios_and_the_peers_rows() {
        let sizes = super::super::scenarios::Sizes {
            tasks: 1,
            latency_samples: 1,
            latency_max_secs: 1,
            idle_window: std::time::Duration::from_secs(1),
        };
        let ours: Vec<&str> = super::super::scenarios::all(&sizes).iter().map(|scenario| scenario.name).collect();
        for kind in [PeerKind::RustAsynq, PeerKind::GoAsynq] {
            for ratio in kind.ratios() {
                assert!(ours.contains(&ratio.ours), "{} is not a scenario", ratio.ours);
                let twins: Vec<String> = Twin::all(&sizes).iter().map(|twin| go(twin.scenario)).collect();
                let twin_row = kind == PeerKind::GoAsynq && twins.iter().any(|twin| twin == ratio.peer);
                assert!(kind.rows().contains(&ratio.peer) || twin_row, "{} is no row of {kind:?}", ratio.peer);
            }
        }
    }

    #[test]
    fn children_cpu_time_is_readable_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(reaped_children_cpu_s().is_some());
        }
    }
}
