//! The end-to-end scenarios and how one run of each goes: a flushed Redis, then one or more
//! `asynq-bench` processes, with Redis measured around them.
//!
//! A scenario that processes tasks first fills the queue with a separate, unmeasured
//! `asynq-bench fill` process, so that Redis's figures cover the processing only.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::Deserialize;

use super::pin::Pinning;
use super::report::Run;
use super::server::RedisServer;
use super::stats;
use super::steps_target::{STEPS_DRAIN, STEPS_PER_TASK, STEPS_PLAIN_TWIN};

/// How long an idle server runs before its Redis traffic is measured.
const IDLE_WARMUP: Duration = Duration::from_secs(2);

/// How big the scenarios are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Tasks per throughput scenario.
    pub(crate) tasks: u64,
    /// Most latency samples.
    pub(crate) latency_samples: u64,
    /// Most seconds spent sampling latency.
    pub(crate) latency_max_secs: u64,
    /// How long the idle server's Redis traffic is measured.
    pub(crate) idle_window: Duration,
}

/// One scenario of the report.
#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    /// Its name in the report.
    pub(crate) name: &'static str,
    /// Whether it measures throughput, and so runs several times.
    pub(crate) throughput: bool,
    plan: Plan,
}

/// What a scenario runs.
#[derive(Debug, Clone)]
enum Plan {
    /// One `asynq-bench` process with these arguments, on an empty Redis.
    Process(Vec<String>),
    /// `asynq-bench fill` (not measured), then `processes` `asynq-bench drain` processes at once,
    /// each serving `empty_queues` empty queues beside the filled one; with `events`, the queue
    /// keeps an event log of [`EVENT_CAP`] events.
    /// With `pending`, the fill is that many tasks and the drain takes the first
    /// [`DEEP_BACKLOG_SLICE`] of them (all, if fewer), instead of the run's task count.
    Drain { processes: usize, concurrency: usize, empty_queues: usize, events: bool, pending: Option<u64> },
    /// `asynq-bench idle` on three queues, or on `queues` queues, with Redis measured over a
    /// window in the middle of its run; with `servers`, that many servers on three queues.
    Idle { concurrency: usize, queues: Option<usize>, tenants: Option<usize>, servers: Option<usize> },
    /// `asynq-bench fill-failing` with `archived` tasks archived first (not measured), then
    /// `asynq-bench fail-for-good` of `tasks` tasks at concurrency 100.
    FailForGood { archived: u64, tasks: u64 },
    /// `asynq-bench fill-groups` of `groups` groups (not measured), then with `reads` false
    /// `asynq-bench idle-aggregator` measured over the idle window as [`Plan::Idle`] is, or with
    /// `reads` true `asynq-bench group-reads` measured whole.
    Groups { groups: u64, reads: bool },
    /// `asynq-bench fill-scheduled` of the run's task count (not measured: 100 000 by default,
    /// `--tasks 1000000` for the issue's million), then `asynq-bench scheduled-storm` at
    /// concurrency 10.
    ScheduledStorm,
    /// `asynq-bench fill` of the run's task count (`fill-scheduled` for `run`; not measured),
    /// then `asynq-bench bulk --action <action>` on all of them.
    Bulk { action: &'static str },
    /// `asynq-bench fill` (not measured) of the run's task count, then `asynq-bench steps-drain`
    /// of them with `steps` steps each; with `plain`, of `steps` times as many, then `drain`.
    Steps { steps: usize, plain: bool },
}

/// The backlog sizes of the deep-backlog drains, each a scenario of its own.
pub(crate) const DEEP_BACKLOGS: [u64; 3] = [10_000, 100_000, 1_000_000];
/// `drain-c100` of the first [`DEEP_BACKLOG_SLICE`] tasks of a backlog of [`DEEP_BACKLOGS`]`[i]`.
pub(crate) const DEEP_BACKLOG_DRAINS: [&str; 3] =
    ["drain-c100-pending-10000", "drain-c100-pending-100000", "drain-c100-pending-1000000"];
/// How many tasks a deep-backlog drain takes: the 1 000 000 case does not drain them all.
pub(crate) const DEEP_BACKLOG_SLICE: u64 = 50_000;

/// Go's archive cap ([`asynq_core::ARCHIVE_MAX_SIZE`]): tasks archived before
/// [`FAIL_INTO_FULL_ARCHIVE`].
pub(crate) const ARCHIVE_CAP: u64 = 10_000;
/// Failures timed into an archive at its cap.
pub(crate) const FAILURES_AT_CAP: u64 = 20_000;
/// Failures timed into an empty archive: fewer than its cap, so that none trims it.
pub(crate) const FAILURES_INTO_EMPTY: u64 = 9_000;
/// Tasks failing for good into an empty archive.
pub(crate) const FAIL_INTO_EMPTY_ARCHIVE: &str = "fail-for-good-into-empty-archive";
/// Tasks failing for good into an archive at its cap.
pub(crate) const FAIL_INTO_FULL_ARCHIVE: &str = "fail-for-good-into-full-archive";

/// The server counts of the idle-servers scenarios, each a scenario of its own.
pub(crate) const IDLE_SERVER_COUNTS: [usize; 3] = [1, 10, 50];
/// Idle servers at concurrency 2 on three queues, [`IDLE_SERVER_COUNTS`]`[i]` of them.
pub(crate) const IDLE_SERVERS: [&str; 3] = ["idle-1-server-c2", "idle-10-servers-c2", "idle-50-servers-c2"];

/// How many groups the group scenarios spread their tasks over, one task each.
pub(crate) const MANY_GROUPS: u64 = 100_000;
/// An idle server with a group aggregator on a queue of [`MANY_GROUPS`] groups, none ready.
pub(crate) const IDLE_AGGREGATOR: &str = "idle-aggregator-100000-groups";
/// The operator reads (queue info, a metrics scrape's reads, the group list) of a queue of
/// [`MANY_GROUPS`] groups.
pub(crate) const GROUP_READS: &str = "stats-100000-groups";

/// Bulk operator actions on all of the run's tasks (100 000 by default; `--tasks 1000000` for
/// the issue's million): `asynq task archiveall`, `deleteall` and `runall` and `asynq queue rm
/// --force`, each a scenario of its own.
pub(crate) const BULK_ACTIONS: [&str; 4] =
    ["bulk-archive-all", "bulk-delete-all", "bulk-run-all", "bulk-queue-rm-force"];
/// The `asynq-bench bulk --action` of each of [`BULK_ACTIONS`].
pub(crate) const BULK_ACTION_ARGS: [&str; 4] = ["archive", "delete", "run", "remove"];

/// Scheduled tasks all falling due at once, forwarded while fresh work is sampled.
pub(crate) const SCHEDULED_STORM: &str = "scheduled-storm";

/// How many queues the many-queues scenarios serve: one busy, the rest empty.
pub(crate) const MANY_QUEUES: usize = 1_000;
/// 64 producers enqueueing one task at a time through one shared client.
pub(crate) const ENQUEUE_CONCURRENT: &str = "enqueue-concurrent-64";
/// The `enqueue` scenario's twin: one producer on a current-thread runtime, waiting busy for
/// each reply for up to 200 µs (`Client::with_spin_wait`), as Go's runtime does.
pub(crate) const ENQUEUE_SPIN_WAIT: &str = "enqueue-spin-wait";
/// Draining one busy queue beside [`MANY_QUEUES`]` - 1` empty ones, all of one weight.
pub(crate) const MANY_QUEUES_DRAIN: &str = "drain-c100-beside-999-empty";
/// Pickup latency on one queue beside [`MANY_QUEUES`]` - 1` empty ones.
pub(crate) const MANY_QUEUES_PICKUP: &str = "pickup-latency-c10-beside-999-empty";
/// The pickup by an idle server that records the start in a round trip of its own after the
/// fetch (`Config::start_with_fetch` off).
pub(crate) const PICKUP_START_APART: &str = "pickup-latency-c10-start-record-apart";
/// An idle server on [`MANY_QUEUES`] queues.
pub(crate) const MANY_QUEUES_IDLE: &str = "idle-1000-queues";

/// How many empty tenant queues the dynamic-queue scenarios register.
pub(crate) const TENANT_QUEUES: usize = 10_000;
/// An idle server serving the pattern `tenant:*` that matches [`TENANT_QUEUES`] queues.
pub(crate) const TENANTS_IDLE: &str = "idle-10000-tenant-queues";
/// Pickup latency on one tenant queue beside [`TENANT_QUEUES`] empty ones, all served through
/// the pattern.
pub(crate) const TENANTS_PICKUP: &str = "pickup-latency-c10-beside-10000-tenants";
/// Pickup latency on a quiet tenant while a busy tenant's backlog keeps every worker busy.
pub(crate) const QUIET_BESIDE_BUSY: &str = "pickup-latency-quiet-tenant-beside-busy";
/// The busy tenant's backlog in [`QUIET_BESIDE_BUSY`]: 1 ms tasks, more than the sampling lasts.
const BUSY_BACKLOG: &str = "300000";

/// How many events the event-log scenarios keep (the default cap).
pub(crate) const EVENT_CAP: &str = "10000";
/// `enqueue-batch-100` into a queue that keeps an event log.
pub(crate) const ENQUEUE_WITH_EVENTS: &str = "enqueue-batch-100-events";
/// `drain-c100` of a queue that keeps an event log.
pub(crate) const DRAIN_WITH_EVENTS: &str = "drain-c100-events";

/// The streaming scenarios: producers and a server running together at an offered load of
/// [`STREAM_RATES`]`[i]` tasks/s (the last as fast as the producers go).
pub(crate) const STREAMS: [&str; 3] = ["stream-5000", "stream-20000", "stream-max"];
/// The offered loads of [`STREAMS`]; `None` is as fast as possible.
pub(crate) const STREAM_RATES: [Option<u64>; 3] = [Some(5_000), Some(20_000), None];
/// How many producers share the streaming scenarios' client: enough to offer 20 000 tasks/s on
/// this machine, where one awaited enqueue takes about 0.1–0.3 ms.
pub(crate) const STREAM_PRODUCERS: &str = "16";
/// How long a paced streaming scenario offers its load, at most: its tasks are its rate times
/// this (the run's task count at most).
const STREAM_SECS: u64 = 5;

/// How many members the fan-in scenarios fan out to.
pub(crate) const FAN_IN_MEMBERS: &str = "10000";
/// A chord of [`FAN_IN_MEMBERS`] members and a callback reading their results, stored and run.
pub(crate) const WORKFLOW_FAN_IN: &str = "workflow-fan-in-10000";
/// The same tasks as [`WORKFLOW_FAN_IN`], enqueued plainly in batches, nothing waiting.
pub(crate) const PLAIN_FAN_IN: &str = "plain-fan-in-10000";

/// An idle server, and tasks scheduled to fall due over a few seconds: how late each starts.
pub(crate) const SCHEDULED_ON_TIME: &str = "scheduled-on-time";

/// Two servers under a shared concurrency limit, waiting for slots.
pub(crate) const SHARED_LIMIT_WAIT: &str = "shared-limit-wait";
/// Its tasks, its limit and each task's work: the ideal is `ceil(tasks / limit) × work`.
pub(crate) const SHARED_LIMIT_TASKS: u64 = 12;
/// See [`SHARED_LIMIT_TASKS`].
pub(crate) const SHARED_LIMIT: u64 = 2;
/// See [`SHARED_LIMIT_TASKS`].
pub(crate) const SHARED_LIMIT_WORK: Duration = Duration::from_millis(300);

fn drain(name: &'static str, processes: usize, concurrency: usize, empty_queues: usize) -> Scenario {
    Scenario {
        name,
        throughput: true,
        plan: Plan::Drain { processes, concurrency, empty_queues, events: false, pending: None },
    }
}

/// How many tasks a streaming scenario at the offered `rate` (tasks/s; `None`: as fast as
/// possible) enqueues: its rate for [`STREAM_SECS`], the run's task count at most.
pub(crate) fn stream_tasks(sizes: &Sizes, rate: Option<u64>) -> u64 {
    rate.map_or(sizes.tasks, |rate| sizes.tasks.min(rate * STREAM_SECS))
}

/// Every scenario, in report order.
pub(crate) fn all(sizes: &Sizes) -> Vec<Scenario> {
    let tasks = sizes.tasks.to_string();
    let process = |name, throughput, args: &[&str]| Scenario { name, throughput, plan: Plan::Process(strings(args)) };
    let (samples, max_secs) = (sizes.latency_samples.to_string(), sizes.latency_max_secs.to_string());
    let pickup = |name, layout: &[&str]| {
        let args = ["pickup-latency", "--samples", &samples, "--max-secs", &max_secs, "--concurrency", "10"];
        process(name, false, &[&args[..], layout].concat())
    };
    let (many_empty, tenants) = ((MANY_QUEUES - 1).to_string(), TENANT_QUEUES.to_string());
    let mut scenarios = vec![
        process("baseline-redis-ping", true, &["redis-ping", "--commands", &tasks]),
        process("baseline-redis-ping-pipelined-100", true, &["redis-ping", "--commands", &tasks, "--pipeline", "100"]),
        process("baseline-redis-call-from-lua", true, &["redis-calls-from-lua", "--calls", &tasks]),
        process("enqueue", true, &["enqueue", "--tasks", &tasks]),
        process(ENQUEUE_SPIN_WAIT, true, &["enqueue", "--tasks", &tasks, "--current-thread", "--spin-wait-us", "200"]),
        process("enqueue-batch-100", true, &["enqueue-batch", "--tasks", &tasks, "--batch-size", "100"]),
        process(
            "enqueue-batch-100-scheduled",
            true,
            &["enqueue-batch", "--tasks", &tasks, "--batch-size", "100", "--scheduled"],
        ),
        process(ENQUEUE_CONCURRENT, true, &["enqueue-concurrent", "--tasks", &tasks, "--producers", "64"]),
        drain("drain-c10", 1, 10, 0),
        drain("drain-c100", 1, 100, 0),
        drain("drain-2-processes-c10", 2, 10, 0),
        drain(MANY_QUEUES_DRAIN, 1, 100, MANY_QUEUES - 1),
        process(
            ENQUEUE_WITH_EVENTS,
            true,
            &["enqueue-batch", "--tasks", &tasks, "--batch-size", "100", "--events", EVENT_CAP],
        ),
        Scenario {
            name: DRAIN_WITH_EVENTS,
            throughput: true,
            plan: Plan::Drain { processes: 1, concurrency: 100, empty_queues: 0, events: true, pending: None },
        },
        process(WORKFLOW_FAN_IN, true, &["fan-in", "--members", FAN_IN_MEMBERS, "--concurrency", "100"]),
        process(PLAIN_FAN_IN, true, &["fan-in", "--members", FAN_IN_MEMBERS, "--concurrency", "100", "--plain"]),
        process("enqueue-and-process-c10", true, &["enqueue-and-process", "--tasks", &tasks, "--concurrency", "10"]),
        process(SCHEDULED_ON_TIME, false, &["scheduled-on-time", "--tasks", "200", "--spread-secs", "8"]),
        process(
            SHARED_LIMIT_WAIT,
            true,
            &[
                "shared-limit-wait",
                "--tasks",
                &SHARED_LIMIT_TASKS.to_string(),
                "--servers",
                "2",
                "--limit",
                &SHARED_LIMIT.to_string(),
                "--work-ms",
                &SHARED_LIMIT_WORK.as_millis().to_string(),
                "--concurrency",
                "10",
            ],
        ),
    ];
    scenarios.extend(STREAMS.iter().zip(STREAM_RATES).map(|(name, rate)| {
        let tasks = stream_tasks(sizes, rate).to_string();
        let mut args = strings(&["stream", "--tasks", &tasks, "--producers", STREAM_PRODUCERS, "--concurrency", "10"]);
        if let Some(rate) = rate {
            args.extend(strings(&["--rate", &rate.to_string()]));
        }
        Scenario { name, throughput: true, plan: Plan::Process(args) }
    }));
    scenarios.extend([
        pickup("pickup-latency-c10", &[]),
        pickup(PICKUP_START_APART, &["--start-record-apart"]),
        pickup(MANY_QUEUES_PICKUP, &["--empty-queues", &many_empty]),
        pickup(TENANTS_PICKUP, &["--tenants", &tenants]),
        pickup(QUIET_BESIDE_BUSY, &["--tenants", "1", "--busy-backlog", BUSY_BACKLOG]),
        Scenario {
            name: "idle-3-queues",
            throughput: false,
            plan: Plan::Idle { concurrency: 10, queues: None, tenants: None, servers: None },
        },
        Scenario {
            name: MANY_QUEUES_IDLE,
            throughput: false,
            plan: Plan::Idle { concurrency: 10, queues: Some(MANY_QUEUES), tenants: None, servers: None },
        },
        Scenario {
            name: TENANTS_IDLE,
            throughput: false,
            plan: Plan::Idle { concurrency: 10, queues: None, tenants: Some(TENANT_QUEUES), servers: None },
        },
    ]);
    scenarios.extend(DEEP_BACKLOG_DRAINS.iter().zip(DEEP_BACKLOGS).map(|(name, pending)| Scenario {
        name,
        throughput: true,
        plan: Plan::Drain { processes: 1, concurrency: 100, empty_queues: 0, events: false, pending: Some(pending) },
    }));
    scenarios.extend([
        Scenario {
            name: FAIL_INTO_EMPTY_ARCHIVE,
            throughput: true,
            plan: Plan::FailForGood { archived: 0, tasks: FAILURES_INTO_EMPTY },
        },
        Scenario {
            name: FAIL_INTO_FULL_ARCHIVE,
            throughput: true,
            plan: Plan::FailForGood { archived: ARCHIVE_CAP, tasks: FAILURES_AT_CAP },
        },
    ]);
    scenarios.extend(IDLE_SERVERS.iter().zip(IDLE_SERVER_COUNTS).map(|(name, servers)| Scenario {
        name,
        throughput: false,
        plan: Plan::Idle { concurrency: 2, queues: None, tenants: None, servers: Some(servers) },
    }));
    // Run every round, for the forwarding rate and because its pickup p99 varies from run to
    // run (8.6–14.8 ms on one quiet VM): its verdict takes the median.
    scenarios.push(Scenario { name: SCHEDULED_STORM, throughput: true, plan: Plan::ScheduledStorm });
    scenarios.extend(BULK_ACTIONS.iter().zip(BULK_ACTION_ARGS).map(|(name, action)| Scenario {
        name,
        throughput: true,
        plan: Plan::Bulk { action },
    }));
    scenarios.extend([(STEPS_DRAIN, false), (STEPS_PLAIN_TWIN, true)].map(|(name, plain)| Scenario {
        name,
        throughput: true,
        plan: Plan::Steps { steps: STEPS_PER_TASK, plain },
    }));
    scenarios.extend([
        Scenario { name: IDLE_AGGREGATOR, throughput: false, plan: Plan::Groups { groups: MANY_GROUPS, reads: false } },
        Scenario { name: GROUP_READS, throughput: false, plan: Plan::Groups { groups: MANY_GROUPS, reads: true } },
    ]);
    scenarios
}

/// Runs scenarios against one Redis.
#[derive(Debug)]
pub(crate) struct Runner<'a> {
    redis: &'a mut RedisServer,
    launcher: Launcher,
    sizes: Sizes,
}

impl<'a> Runner<'a> {
    /// A runner of the `asynq-bench` at `binary` against `redis`.
    pub(crate) fn new(redis: &'a mut RedisServer, binary: PathBuf, pinning: Pinning, sizes: Sizes) -> Self {
        let launcher = Launcher::new(binary, pinning, redis.url());
        Self { redis, launcher, sizes }
    }

    /// The Redis the scenarios run against.
    pub(crate) fn redis(&mut self) -> &mut RedisServer {
        self.redis
    }

    /// Runs `asynq-bench` with `args` to its end, unmeasured: how a peer's run of the same work
    /// as one of our scenarios is prepared.
    pub(crate) fn prepare(&mut self, args: &[&str]) -> anyhow::Result<()> {
        self.launcher.spawn(&[strings(args)])?.wait()?;
        Ok(())
    }

    /// One run of `scenario`, on a flushed Redis with reset statistics.
    pub(crate) fn run(&mut self, scenario: &Scenario) -> anyhow::Result<Run> {
        self.run_plan(&scenario.plan).with_context(|| format!("scenario {} failed", scenario.name))
    }

    fn run_plan(&mut self, plan: &Plan) -> anyhow::Result<Run> {
        self.redis.reset()?;
        match plan {
            Plan::Process(args) => self.measured(std::slice::from_ref(args)),
            Plan::Drain { processes, concurrency, empty_queues, events, pending } => {
                let fill_tasks = pending.unwrap_or(self.sizes.tasks).to_string();
                let tasks = pending.map_or(self.sizes.tasks, |pending| pending.min(DEEP_BACKLOG_SLICE)).to_string();
                let mut fill = strings(&["fill", "--tasks", &fill_tasks]);
                if *events {
                    fill.extend(strings(&["--events", EVENT_CAP]));
                }
                self.launcher.spawn(&[fill])?.wait()?;
                let (concurrency, empty_queues) = (concurrency.to_string(), empty_queues.to_string());
                let drain = strings(&[
                    "drain",
                    "--tasks",
                    &tasks,
                    "--concurrency",
                    &concurrency,
                    "--empty-queues",
                    &empty_queues,
                ]);
                self.measured(&vec![drain; *processes])
            }
            Plan::Idle { concurrency, queues, tenants, servers } => {
                self.idle(*concurrency, *queues, *tenants, *servers)
            }
            Plan::FailForGood { archived, tasks } => {
                let (archived, tasks) = (archived.to_string(), tasks.to_string());
                self.launcher
                    .spawn(&[strings(&["fill-failing", "--tasks", &tasks, "--archived", &archived])])?
                    .wait()?;
                self.measured(&[strings(&["fail-for-good", "--tasks", &tasks, "--concurrency", "100"])])
            }
            Plan::Groups { groups, reads } => {
                let groups = groups.to_string();
                self.launcher.spawn(&[strings(&["fill-groups", "--groups", &groups])])?.wait()?;
                if *reads {
                    self.measured(&[strings(&["group-reads", "--groups", &groups])])
                } else {
                    let seconds = (IDLE_WARMUP + self.sizes.idle_window).as_secs() + 1;
                    let args = strings(&["idle-aggregator", "--seconds", &seconds.to_string()]);
                    self.idle_process(args)
                }
            }
            Plan::ScheduledStorm => {
                let tasks = self.sizes.tasks.to_string();
                self.launcher.spawn(&[strings(&["fill-scheduled", "--tasks", &tasks])])?.wait()?;
                self.measured(&[strings(&["scheduled-storm", "--tasks", &tasks, "--concurrency", "10"])])
            }
            Plan::Steps { steps, plain } => {
                let tasks = (self.sizes.tasks * if *plain { *steps as u64 } else { 1 }).to_string();
                self.launcher.spawn(&[strings(&["fill", "--tasks", &tasks])])?.wait()?;
                let steps = steps.to_string();
                let drain = if *plain { &["drain"][..] } else { &["steps-drain", "--steps", &steps] };
                self.measured(&[strings(&[drain, &["--tasks", &tasks, "--concurrency", "100"]].concat())])
            }
            Plan::Bulk { action } => {
                let tasks = self.sizes.tasks.to_string();
                let fill = if *action == "run" { "fill-scheduled" } else { "fill" };
                self.launcher.spawn(&[strings(&[fill, "--tasks", &tasks])])?.wait()?;
                self.measured(&[strings(&["bulk", "--action", action, "--tasks", &tasks])])
            }
        }
    }

    /// Runs one process per argument list, all at once, with Redis measured around them.
    fn measured(&mut self, arg_lists: &[Vec<String>]) -> anyhow::Result<Run> {
        let (measurements, usage, window_s) = stats::measure(self.redis, || self.launcher.spawn(arg_lists)?.wait())?;
        combine(&measurements, usage, window_s)
    }

    /// An idle server: Redis is measured from [`IDLE_WARMUP`] after its start, for the idle
    /// window, so that start-up and shutdown stay out of the figures.
    fn idle(
        &mut self,
        concurrency: usize,
        queues: Option<usize>,
        tenants: Option<usize>,
        servers: Option<usize>,
    ) -> anyhow::Result<Run> {
        let seconds = self.idle_seconds();
        let mut args = strings(&["idle", "--seconds", &seconds.to_string(), "--concurrency", &concurrency.to_string()]);
        if let Some(queues) = queues {
            args.extend(strings(&["--queues", &queues.to_string()]));
        }
        if let Some(tenants) = tenants {
            args.extend(strings(&["--tenants", &tenants.to_string()]));
        }
        if let Some(servers) = servers {
            args.extend(strings(&["--servers", &servers.to_string()]));
        }
        self.idle_process(args)
    }

    /// Starts `asynq-bench` with `args`, which runs for [`Runner::idle_seconds`]; Redis is
    /// measured over the idle window.
    fn idle_process(&mut self, args: Vec<String>) -> anyhow::Result<Run> {
        let (processes, usage, window_s) = self.idle_window(|launcher| launcher.spawn(&[args]))?;
        combine(&processes.wait()?, usage, window_s)
    }

    /// How long an idle process runs: [`IDLE_WARMUP`], the idle window, and a second more.
    pub(crate) fn idle_seconds(&self) -> u64 {
        (IDLE_WARMUP + self.sizes.idle_window).as_secs() + 1
    }

    /// Starts what `start` starts (a process that runs for [`Runner::idle_seconds`]), and
    /// measures Redis over the idle window, from [`IDLE_WARMUP`] after the start: what `start`
    /// returned, Redis's usage and the window's length in seconds.
    pub(crate) fn idle_window<T>(
        &mut self,
        start: impl FnOnce(&Launcher) -> anyhow::Result<T>,
    ) -> anyhow::Result<(T, stats::Usage, f64)> {
        let started = start(&self.launcher)?;
        std::thread::sleep(IDLE_WARMUP);
        stats::measure(self.redis, || {
            std::thread::sleep(self.sizes.idle_window);
            Ok(started)
        })
    }
}

/// Starts `asynq-bench` processes against one Redis.
#[derive(Debug)]
pub(crate) struct Launcher {
    binary: PathBuf,
    pinning: Pinning,
    redis_url: String,
}

impl Launcher {
    /// A launcher of the `asynq-bench` at `binary` against the Redis at `redis_url`.
    pub(crate) fn new(binary: PathBuf, pinning: Pinning, redis_url: String) -> Self {
        Self { binary, pinning, redis_url }
    }

    /// Starts one process per argument list, all at once.
    pub(crate) fn spawn(&self, arg_lists: &[Vec<String>]) -> anyhow::Result<Processes> {
        let mut processes = Processes(Vec::new());
        for args in arg_lists {
            let mut command = self.pinning.bench(&self.binary);
            command.arg("--redis-url").arg(&self.redis_url).args(args);
            command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
            let child = command.spawn().with_context(|| format!("cannot run {}", self.binary.display()))?;
            processes.0.push((args.join(" "), child));
        }
        Ok(processes)
    }
}

/// `args` as owned strings, as a process's arguments are kept.
pub(crate) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| (*arg).to_owned()).collect()
}

/// `asynq-bench` processes that are killed if dropped before [`Processes::wait`] collects them,
/// so that an error elsewhere leaves none behind.
pub(crate) struct Processes(Vec<(String, Child)>);

impl Processes {
    /// Waits for every process and reads its measurement.
    pub(crate) fn wait(mut self) -> anyhow::Result<Vec<Measurement>> {
        let mut measurements = Vec::new();
        for (args, child) in std::mem::take(&mut self.0) {
            let output = child.wait_with_output().with_context(|| format!("`asynq-bench {args}` vanished"))?;
            if !output.status.success() {
                bail!("`asynq-bench {args}` failed ({}); its errors are above", output.status);
            }
            let stdout = String::from_utf8_lossy(&output.stdout);
            let line = stdout.lines().last().unwrap_or_default();
            let measurement = serde_json::from_str(line)
                .with_context(|| format!("`asynq-bench {args}` printed no measurement, but {stdout:?}"))?;
            measurements.push(measurement);
        }
        Ok(measurements)
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What `asynq-bench` prints: the fields of `asynq_bench::Measurement` the report uses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Measurement {
    pub(crate) tasks: u64,
    concurrency: Option<usize>,
    tasks_per_s: Option<f64>,
    pickup_p50_ms: Option<f64>,
    pickup_p99_ms: Option<f64>,
    #[serde(default)]
    offered_per_s: Option<f64>,
    #[serde(default)]
    servers_ls_ms: Option<f64>,
    #[serde(default)]
    reads_ms: std::collections::BTreeMap<String, f64>,
    #[serde(default)]
    max_running: Option<u64>,
    /// The tasks the process's handler ran (the sharded drain's).
    #[serde(default)]
    pub(crate) handled: Option<u64>,
    cpu_s: Option<f64>,
    peak_rss_mb: Option<f64>,
    started_unix_us: u64,
    finished_unix_us: u64,
}

/// One run from the measurements of its processes. Processes that ran side by side count as
/// one: throughput over the span from the first start to the last finish, CPU summed, the
/// largest peak memory.
pub(crate) fn combine(measurements: &[Measurement], redis: stats::Usage, window_s: f64) -> anyhow::Result<Run> {
    let [first, rest @ ..] = measurements else { bail!("no process was run") };
    let tasks_per_s = if rest.is_empty() {
        first.tasks_per_s
    } else {
        let start = measurements.iter().map(|m| m.started_unix_us).min().unwrap_or_default();
        let end = measurements.iter().map(|m| m.finished_unix_us).max().unwrap_or_default();
        first.tasks_per_s.and(Some(first.tasks as f64 / ((end.saturating_sub(start)) as f64 / 1e6)))
    };
    let cpu: Vec<f64> = measurements.iter().filter_map(|m| m.cpu_s).collect();
    Ok(Run {
        tasks: first.tasks,
        concurrency: first.concurrency,
        tasks_per_s,
        pickup_p50_ms: first.pickup_p50_ms,
        pickup_p99_ms: first.pickup_p99_ms,
        offered_per_s: first.offered_per_s,
        servers_ls_ms: first.servers_ls_ms,
        reads_ms: first.reads_ms.clone(),
        max_running: measurements.iter().filter_map(|m| m.max_running).max(),
        client_cpu_s: (!cpu.is_empty()).then(|| cpu.iter().sum()),
        peak_rss_mb: measurements.iter().filter_map(|m| m.peak_rss_mb).reduce(f64::max),
        redis: Some(redis),
        window_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measurement(started_unix_us: u64, finished_unix_us: u64, cpu_s: f64, peak_rss_mb: f64) -> Measurement {
        Measurement {
            tasks: 1_000,
            concurrency: Some(10),
            tasks_per_s: Some(1_000.0 / ((finished_unix_us - started_unix_us) as f64 / 1e6)),
            pickup_p50_ms: None,
            pickup_p99_ms: None,
            offered_per_s: None,
            servers_ls_ms: None,
            reads_ms: std::collections::BTreeMap::new(),
            max_running: None,
            handled: None,
            cpu_s: Some(cpu_s),
            peak_rss_mb: Some(peak_rss_mb),
            started_unix_us,
            finished_unix_us,
        }
    }

    #[test]
    fn side_by_side_processes_count_as_one_run() {
        let one = combine(&[measurement(0, 500_000, 0.25, 10.0)], stats::Usage::default(), 1.0).unwrap();
        assert_eq!(one.tasks_per_s, Some(2_000.0));
        let two = [measurement(100_000, 400_000, 0.25, 10.0), measurement(0, 500_000, 0.5, 12.0)];
        let run = combine(&two, stats::Usage::default(), 1.0).unwrap();
        assert_eq!((run.tasks, run.tasks_per_s), (1_000, Some(2_000.0)));
        assert_eq!((run.client_cpu_s, run.peak_rss_mb), (Some(0.75), Some(12.0)));
        assert!(combine(&[], stats::Usage::default(), 1.0).is_err());
    }

    #[test]
    fn reads_what_asynq_bench_prints() {
        let line = r#"{"scenario":"drain","tasks":20000,"concurrency":10,"elapsed_s":1.09,"tasks_per_s":18276.9,
            "pickup_p50_ms":null,"pickup_p99_ms":null,"cpu_s":0.64,"peak_rss_mb":7.1,
            "started_unix_us":1795322394044025,"finished_unix_us":1795322395138300}"#;
        let measurement: Measurement = serde_json::from_str(line).unwrap();
        assert_eq!((measurement.tasks, measurement.concurrency, measurement.cpu_s), (20_000, Some(10), Some(0.64)));
    }

    #[test]
    fn scenario_names_are_unique() {
        let sizes = Sizes { tasks: 10, latency_samples: 1, latency_max_secs: 1, idle_window: Duration::from_secs(1) };
        let mut names: Vec<&str> = all(&sizes).iter().map(|scenario| scenario.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all(&sizes).len());
    }
}
