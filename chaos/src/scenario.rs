//! The orchestrator: each scenario starts a private redis-server, Sentinel set or Cluster (the
//! `asynq-tests` harness), runs worker and producer processes of this crate's binary against it,
//! injects its fault,
//! waits (polling, with a bound) until the queue is drained, and counts.
//!
//! Everything a scenario learns comes from outside the processes: the producers'
//! "acknowledged" ledgers, the workers' ledgers (see [`crate::worker`]) and Redis itself. The
//! result is a [`Report`] whose first line is the ledger:
//!
//! ```text
//! scenario=kill-worker acknowledged=1200 ran=1200 lost=0 failed_unrun=0 duplicates=0 orphaned_active=0 stale_locks=0
//! ```
//!
//! - `lost`: acknowledged IDs no worker ever finished (a task archived after a recorded start,
//!   as a `max_retry(0)` task whose worker was killed mid-attempt is, failed for good and is
//!   counted in the notes, not here);
//! - `failed_unrun`: task IDs charged a failure (retried or archived) for an attempt no handler
//!   started: a task that finally ran at retry count `r` must have a recorded start at each
//!   retry count below `r`, and an archived task at least one;
//! - `duplicates`: IDs finished more than once (at-least-once delivery allows it for tasks in
//!   flight at the fault);
//! - `orphaned_active`: IDs in `asynq:{q}:active` without an entry in `asynq:{q}:lease`;
//! - `stale_locks`: `asynq:{q}:unique:*` keys whose task no longer exists;
//! - `replication_lost` (failover scenarios only): acknowledged IDs no worker finished that were
//!   acknowledged between the start of the failover and the old master's demotion, the window in
//!   which Redis's asynchronous replication may drop writes; `lost` counts the others.
//!
//! Anything else a scenario checks (a process that hung, panicked or died, a call that did not
//! fail within its timeout, a task that started after SIGTSTP) is a [`Report::failures`] entry.
//! Waiting is always polling every [`POLL`] with a bound; the only fixed pauses are faults
//! held for a set time ("Redis down for 5 s") and the observation window after SIGTSTP.

use crate::produce::Summary;
use crate::worker::LedgerLine;
use anyhow::{Context as _, bail};
use asynq_redis::keys::Namespace;
use asynq_tests::{RedisCluster, RedisSentinel, RedisServer, RespConnection, RespValue};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How often conditions are polled.
pub const POLL: Duration = Duration::from_millis(50);

/// The queue every scenario uses.
pub const QUEUE: &str = "chaos";

/// The second queue of `kill-workers-during-cross-queue-workflow`, whose keys hash to a slot of
/// another Cluster master than [`QUEUE`]'s (the scenario checks it on the Cluster it starts).
pub const SECOND_QUEUE: &str = "chaos-b";

/// How often [`Stage::kill_while_relaying`] looks for a relay under way: far more often than
/// [`POLL`], since a relay takes about a millisecond.
const RELAY_POLL: Duration = Duration::from_micros(500);

/// How much later into a relay each kill of the fan-out in
/// `kill-workers-during-cross-queue-workflow` comes than the one before.
const RELAY_STAGGER: Duration = Duration::from_micros(250);

/// How long [`Stage::kill_while_relaying`] waits for a relay under way before killing anyway.
const RELAY_WAIT: Duration = Duration::from_secs(20);

/// How many events each queue's log keeps in `kill-workers-during-cross-queue-workflow`: more
/// than it is written, so that every event is still there to be counted.
const EVENT_CAP: u32 = 1_000_000;

/// How big the scenarios are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Small counts and short faults, for CI (the integration test `tests/quick.rs`).
    Quick,
    /// The counts and faults of the reliability issue, run by `cargo xtask chaos`.
    Full,
}

impl Profile {
    /// Reads `quick` or `full`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "quick" => Some(Self::Quick),
            "full" => Some(Self::Full),
            _ => None,
        }
    }

    /// `quick` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Quick => "quick",
            Self::Full => "full",
        }
    }

    fn pick<T>(self, quick: T, full: T) -> T {
        match self {
            Self::Quick => quick,
            Self::Full => full,
        }
    }
}

/// One chaos scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `kill -9` a worker with many tasks in flight; another worker finishes them once their
    /// leases expire.
    KillWorker,
    /// Kill redis-server (AOF, `appendfsync always`) mid-run and restart it on the same port.
    RestartRedis,
    /// Redis answers nothing for a while (`CLIENT PAUSE ... ALL`).
    RedisUnreachable,
    /// SIGTSTP stops fetching while running tasks finish; SIGTERM during long handlers
    /// requeues them after the shutdown timeout.
    Sigterm,
    /// Several worker processes on one queue.
    ManyWorkers,
    /// A Sentinel failover while producers and workers run through `redis-sentinel://`.
    SentinelFailover,
    /// `kill -9` of the Cluster master serving the queue while producers and workers run
    /// through `redis-cluster://`; its replica takes over.
    ClusterFailover,
    /// Redis frozen (SIGSTOP) past the response timeout under load, tasks with `max_retry(0)`.
    RedisFrozen,
    /// Redis killed (`kill -9`, AOF `always`) and restarted again and again under load, tasks
    /// with `max_retry(0)`.
    RestartRedisRepeatedly,
    /// `kill -9` of a worker with a full prefetch buffer, tasks with `max_retry(0)`.
    KillPrefetchingWorker,
    /// A 600 MiB enqueue through the broker a running server uses, tasks with `max_retry(0)`.
    OversizedEnqueue,
    /// `kill -9` of a worker holding slots of a limit shared by every worker: the others never
    /// run more than the limit at once, and the dead worker's slots come back with its leases.
    KillWorkerHoldingSlots,
    /// `kill -9` of workers during a workflow's fan-out and during its chain.
    KillWorkersDuringWorkflow,
    /// `kill -9` of workers while they relay a workflow whose every task waits for a task of
    /// another queue, on another Cluster master, during its fan-out and during its chain.
    KillWorkersDuringCrossQueueWorkflow,
}

impl Scenario {
    /// Every scenario, in the order `run --scenario all` runs them.
    pub const ALL: [Scenario; 14] = [
        Self::KillWorker,
        Self::RestartRedis,
        Self::RedisUnreachable,
        Self::Sigterm,
        Self::ManyWorkers,
        Self::SentinelFailover,
        Self::ClusterFailover,
        Self::RedisFrozen,
        Self::RestartRedisRepeatedly,
        Self::KillPrefetchingWorker,
        Self::OversizedEnqueue,
        Self::KillWorkerHoldingSlots,
        Self::KillWorkersDuringWorkflow,
        Self::KillWorkersDuringCrossQueueWorkflow,
    ];

    /// The scenario's name, as the ledger prints it.
    pub fn name(self) -> &'static str {
        match self {
            Self::KillWorker => "kill-worker",
            Self::RestartRedis => "restart-redis",
            Self::RedisUnreachable => "redis-unreachable",
            Self::Sigterm => "sigterm",
            Self::ManyWorkers => "many-workers",
            Self::SentinelFailover => "sentinel-failover",
            Self::ClusterFailover => "cluster-failover",
            Self::RedisFrozen => "redis-frozen",
            Self::RestartRedisRepeatedly => "restart-redis-repeatedly",
            Self::KillPrefetchingWorker => "kill-prefetching-worker",
            Self::OversizedEnqueue => "oversized-enqueue",
            Self::KillWorkerHoldingSlots => "kill-worker-holding-slots",
            Self::KillWorkersDuringWorkflow => "kill-workers-during-workflow",
            Self::KillWorkersDuringCrossQueueWorkflow => "kill-workers-during-cross-queue-workflow",
        }
    }

    /// The scenario called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Runs the scenario with the `asynq-chaos` binary at `bin` for the worker and producer
    /// processes. `Err` means the scenario could not be carried out (a process would not
    /// start, a precondition never held); what it found is in the [`Report`].
    pub fn run(self, profile: Profile, bin: &Path) -> anyhow::Result<Report> {
        let started = Instant::now();
        let mut report = match self {
            Self::KillWorker => kill_worker(profile, bin),
            Self::RestartRedis => restart_redis(profile, bin),
            Self::RedisUnreachable => redis_unreachable(profile, bin),
            Self::Sigterm => sigterm(profile, bin),
            Self::ManyWorkers => many_workers(profile, bin),
            Self::SentinelFailover => sentinel_failover(profile, bin),
            Self::ClusterFailover => cluster_failover(profile, bin),
            Self::RedisFrozen => redis_frozen(profile, bin),
            Self::RestartRedisRepeatedly => restart_redis_repeatedly(profile, bin),
            Self::KillPrefetchingWorker => kill_prefetching_worker(profile, bin),
            Self::OversizedEnqueue => oversized_enqueue(profile, bin),
            Self::KillWorkerHoldingSlots => kill_worker_holding_slots(profile, bin),
            Self::KillWorkersDuringWorkflow => kill_workers_during_workflow(profile, bin),
            Self::KillWorkersDuringCrossQueueWorkflow => kill_workers_during_cross_queue_workflow(profile, bin),
        }
        .with_context(|| format!("scenario {}", self.name()))?;
        report.notes.push(format!("took {:.1} s", started.elapsed().as_secs_f64()));
        Ok(report)
    }
}

/// What a scenario found: the ledger counts, notes, and failed checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The scenario's name.
    pub scenario: &'static str,
    /// Task IDs whose enqueue returned `Ok`.
    pub acknowledged: usize,
    /// Distinct acknowledged task IDs some worker finished.
    pub ran: usize,
    /// Acknowledged task IDs no worker finished (nor archived after a recorded start).
    pub lost: usize,
    /// Task IDs charged a failure for an attempt no handler started.
    pub failed_unrun: usize,
    /// Task IDs finished more than once.
    pub duplicates: usize,
    /// Task IDs in the active list without a lease.
    pub orphaned_active: usize,
    /// Uniqueness locks whose task no longer exists.
    pub stale_locks: usize,
    /// In a failover scenario, the acknowledged task IDs no worker finished that were
    /// acknowledged inside the failover's window (not counted in `lost`).
    pub replication_lost: Option<usize>,
    /// What happened on the way (timings, errors seen, the fault injected).
    pub notes: Vec<String>,
    /// Checks beyond the counts that failed; empty when all held.
    pub failures: Vec<String>,
}

impl Report {
    /// The counts that come from the ledgers alone: `acknowledged` IDs against `runs` (how
    /// many times each task ID was finished, acknowledged or not).
    fn tally(scenario: &'static str, acknowledged: &[String], runs: &HashMap<String, usize>) -> Self {
        let lost = acknowledged.iter().filter(|id| !runs.contains_key(*id)).count();
        Self {
            scenario,
            acknowledged: acknowledged.len(),
            ran: acknowledged.len() - lost,
            lost,
            duplicates: runs.values().filter(|n| **n > 1).count(),
            ..Self::default()
        }
    }

    /// Whether nothing was lost, orphaned or left locked, and every other check held.
    pub fn passed(&self) -> bool {
        self.lost == 0
            && self.failed_unrun == 0
            && self.orphaned_active == 0
            && self.stale_locks == 0
            && self.failures.is_empty()
    }

    /// The ledger line, the notes (indented) and the failures (indented, `FAILED:`).
    pub fn details(&self) -> String {
        let mut text = self.to_string();
        for note in &self.notes {
            text.push_str(&format!("\n  {}: {note}", self.scenario));
        }
        for failure in &self.failures {
            text.push_str(&format!("\n  {}: FAILED: {failure}", self.scenario));
        }
        text
    }
}

/// The ledger line.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scenario={} acknowledged={} ran={} lost={} failed_unrun={} duplicates={} orphaned_active={} stale_locks={}",
            self.scenario,
            self.acknowledged,
            self.ran,
            self.lost,
            self.failed_unrun,
            self.duplicates,
            self.orphaned_active,
            self.stale_locks
        )?;
        if let Some(replication_lost) = self.replication_lost {
            write!(f, " replication_lost={replication_lost}")?;
        }
        Ok(())
    }
}

/// A worker process's settings (see the `worker` subcommand).
#[derive(Debug, Clone)]
struct WorkerSpec {
    concurrency: usize,
    max_sleep: Option<Duration>,
    shutdown_timeout: Duration,
    recoverer_interval: Duration,
    delayed_task_check_interval: Duration,
    retry_delay: Duration,
    response_timeout: Duration,
    oversized_enqueue_after: Option<Duration>,
    shared_limit: Option<u32>,
}

impl Default for WorkerSpec {
    fn default() -> Self {
        Self {
            concurrency: 10,
            max_sleep: None,
            shutdown_timeout: Duration::from_secs(8),
            recoverer_interval: Duration::from_secs(5),
            delayed_task_check_interval: Duration::from_secs(1),
            retry_delay: Duration::from_secs(1),
            response_timeout: Duration::from_secs(5),
            oversized_enqueue_after: None,
            shared_limit: None,
        }
    }
}

/// A producer process's settings (see the `produce` subcommand).
#[derive(Debug, Clone)]
struct ProducerSpec {
    count: u64,
    first_seq: u64,
    sleep: Duration,
    unique_every: u64,
    rate: Option<u32>,
    response_timeout: Duration,
    max_retry: Option<u32>,
    /// Store one workflow (see `produce --workflow-chain`).
    workflow_chain: Option<u64>,
    /// The workflow's second queue (see `produce --alternate-queue`).
    alternate_queue: Option<&'static str>,
}

impl Default for ProducerSpec {
    fn default() -> Self {
        Self {
            count: 100,
            first_seq: 0,
            sleep: Duration::ZERO,
            unique_every: 10,
            rate: None,
            response_timeout: Duration::from_secs(5),
            max_retry: None,
            workflow_chain: None,
            alternate_queue: None,
        }
    }
}

/// A process a scenario started.
#[derive(Debug)]
struct Proc {
    label: String,
    child: Child,
    /// Its stdout.
    out: PathBuf,
    /// Its stderr.
    log: PathBuf,
    /// Whether it should still be running: a death while expected is a failure.
    expected_alive: bool,
    /// Whether it ends by itself (a producer, once its tasks are enqueued): a successful
    /// exit is then no death.
    ends_by_itself: bool,
}

/// A handle on a process of a [`Stage`].
#[derive(Debug, Clone, Copy)]
struct ProcId(usize);

/// Per task, the events of its queue's log that say it was put in or taken from pending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct EventCounts {
    /// Stored pending, or released: the scripts log it in the step that pushes the task onto
    /// the pending list, and only then.
    enqueued: usize,
    /// Taken from pending by a worker.
    started: usize,
    /// Put back to pending (`requeued`) or scheduled for a retry, which the forwarder moves to
    /// pending (`retried`).
    put_back: usize,
}

/// One queue's outbox and tasks at one moment (see [`Stage::relay_state`]).
#[derive(Debug, Clone, Copy)]
struct RelayState {
    outbox: i64,
    pending: i64,
    active: i64,
}

/// The outbox entries a killed worker left, by how far their relay got (see
/// [`Stage::relay_progress`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct RelayProgress {
    /// No dependent heard of the settled task yet.
    before_pass: usize,
    /// Some dependents heard of it (those of some queues).
    mid_pass: usize,
    /// Every dependent heard of it; the children list and the entry are left.
    after_pass: usize,
    /// The children list is deleted too; the entry is left.
    after_children_deleted: usize,
}

impl RelayProgress {
    fn add(&mut self, other: RelayProgress) {
        self.before_pass += other.before_pass;
        self.mid_pass += other.mid_pass;
        self.after_pass += other.after_pass;
        self.after_children_deleted += other.after_children_deleted;
    }
}

impl fmt::Display for RelayProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} before their pass, {} in the middle of it, {} after it, {} after the children list's deletion",
            self.before_pass, self.mid_pass, self.after_pass, self.after_children_deleted
        )
    }
}

/// When [`Stage::kill_while_relaying`] kills: once an outbox holds an entry, and...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillWhen {
    /// ...at once.
    Relaying,
    /// ...no task is pending or active: the victim holds no task, only the relay is cut off.
    RelayingIdle,
}

/// What [`Stage::kill_while_relaying`] saw.
#[derive(Debug, Clone, Copy)]
struct RelayKill {
    /// Whether a relay was under way when the victim was killed.
    caught: bool,
    /// The outbox entries the victim left, which no other process touched yet.
    left: RelayProgress,
}

/// Counts of the queue's containers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct QueueCounts {
    pending: i64,
    active: i64,
    scheduled: i64,
    retry: i64,
    archived: i64,
    /// Workflow tasks waiting for others.
    waiting: i64,
}

impl QueueCounts {
    fn unfinished(&self) -> i64 {
        self.pending + self.active + self.scheduled + self.retry + self.waiting
    }
}

/// The Redis a scenario runs against.
enum Backend {
    /// One redis-server.
    Single(RedisServer),
    /// A master, its replica and a sentinel; producers and workers find the master through it.
    Sentinel(Box<RedisSentinel>),
    /// A Cluster of masters with a replica each.
    Cluster(Box<RedisCluster>),
}

impl Backend {
    /// The URL producers and workers connect with.
    fn url(&self) -> String {
        match self {
            Backend::Single(redis) => redis.url(),
            Backend::Sentinel(set) => format!("redis-sentinel://{}?master={}", set.sentinel_addr(), set.master_name()),
            Backend::Cluster(cluster) => format!("redis-cluster://{}", cluster.all_addrs().join(",")),
        }
    }

    /// The server holding `key` now: the master, behind Sentinel; the master serving the key's
    /// slot, in a Cluster.
    fn node_for(&self, key: &str) -> anyhow::Result<&RedisServer> {
        match self {
            Backend::Single(redis) => Ok(redis),
            Backend::Sentinel(set) => Ok(set.master()),
            Backend::Cluster(cluster) => {
                cluster.master_now(RedisCluster::key_slot(key)).map_err(|e| anyhow::anyhow!(e))
            }
        }
    }

    /// The server holding the keys of `queue` now (all in its `{queue}` slot).
    fn data(&self, queue: &str) -> anyhow::Result<&RedisServer> {
        self.node_for(&format!("{{{queue}}}"))
    }
}

/// A scenario's world: its Redis, its directory of ledgers and logs, its processes.
/// Dropping it kills every process it started that still runs.
struct Stage {
    scenario: &'static str,
    bin: PathBuf,
    /// The queues the workers serve ([`QUEUE`] unless the scenario says otherwise); producers
    /// enqueue to the first.
    queues: Vec<&'static str>,
    /// Dropped after the processes (see `Drop`), so none outlives it.
    redis: Backend,
    /// In a failover scenario: the producer's label and the positions in its acknowledged
    /// ledger of the enqueues acknowledged while the failover was under way.
    replication_window: Option<(String, Range<usize>)>,
    dir: tempfile::TempDir,
    procs: Vec<Proc>,
    notes: Vec<String>,
    failures: Vec<String>,
}

impl Drop for Stage {
    fn drop(&mut self) {
        for proc in &mut self.procs {
            // Fails only when it already exited.
            let _ = proc.child.kill();
            let _ = proc.child.wait();
        }
    }
}

impl Stage {
    /// A stage on one redis-server started with `redis_args`.
    fn new(scenario: Scenario, bin: &Path, redis_args: &[&str]) -> anyhow::Result<Self> {
        Self::on(scenario, bin, Backend::Single(RedisServer::start_with(redis_args)))
    }

    /// A stage whose Redis is a master, a replica and a sentinel.
    fn with_sentinel(scenario: Scenario, bin: &Path) -> anyhow::Result<Self> {
        Self::on(scenario, bin, Backend::Sentinel(Box::new(RedisSentinel::start("asynq-chaos"))))
    }

    /// A stage whose Redis is a Cluster of three masters with a replica each.
    fn with_cluster(scenario: Scenario, bin: &Path) -> anyhow::Result<Self> {
        Self::on(scenario, bin, Backend::Cluster(Box::new(RedisCluster::start_with_replicas(3))))
    }

    /// A stage whose Redis is a Cluster of three masters, whose workers serve `queues`, each of
    /// which must be served by another master than the others, as the Cluster reports it.
    fn with_cluster_queues(scenario: Scenario, bin: &Path, queues: &[&'static str]) -> anyhow::Result<Self> {
        let mut stage = Self::on(scenario, bin, Backend::Cluster(Box::new(RedisCluster::start(3))))?;
        stage.queues = queues.to_vec();
        let mut masters = Vec::new();
        for queue in queues {
            let master = stage.redis.data(queue)?.addr();
            if masters.contains(&master) {
                bail!("the queues {queues:?} must be served by different masters, but {master} serves two of them");
            }
            stage.notes.push(format!("queue {queue}: slot {} on master {master}", queue_slot(queue)));
            masters.push(master);
        }
        Ok(stage)
    }

    fn on(scenario: Scenario, bin: &Path, redis: Backend) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new().prefix(&format!("asynq-chaos-{}-", scenario.name())).tempdir()?;
        Ok(Self {
            scenario: scenario.name(),
            bin: bin.to_owned(),
            queues: vec![QUEUE],
            redis,
            replication_window: None,
            dir,
            procs: Vec::new(),
            notes: Vec::new(),
            failures: Vec::new(),
        })
    }

    /// The one redis-server of a single-server stage.
    fn single(&mut self) -> &mut RedisServer {
        match &mut self.redis {
            Backend::Single(redis) => redis,
            _ => panic!("{} does not run on one server", self.scenario),
        }
    }

    /// The Sentinel set of a Sentinel stage.
    fn sentinel(&mut self) -> &mut RedisSentinel {
        match &mut self.redis {
            Backend::Sentinel(set) => set,
            _ => panic!("{} does not run behind Sentinel", self.scenario),
        }
    }

    /// The Cluster of a Cluster stage.
    fn cluster(&mut self) -> &mut RedisCluster {
        match &mut self.redis {
            Backend::Cluster(cluster) => cluster,
            _ => panic!("{} does not run on a Cluster", self.scenario),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn spawn(&mut self, label: &str, args: Vec<String>, ends_by_itself: bool) -> anyhow::Result<ProcId> {
        let out = self.path(&format!("{label}.out"));
        let log = self.path(&format!("{label}.log"));
        let child = Command::new(&self.bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(File::create(&out)?)
            .stderr(File::create(&log)?)
            .spawn()
            .with_context(|| format!("could not start {} {}", self.bin.display(), args.join(" ")))?;
        self.procs.push(Proc { label: label.to_owned(), child, out, log, expected_alive: true, ends_by_itself });
        Ok(ProcId(self.procs.len() - 1))
    }

    /// Starts a worker whose ledger is `<label>.ledger`.
    fn worker(&mut self, label: &str, spec: &WorkerSpec) -> anyhow::Result<ProcId> {
        let mut args = vec![
            "worker".to_owned(),
            format!("--redis-url={}", self.redis.url()),
            format!("--ledger={}", self.path(&format!("{label}.ledger")).display()),
            format!("--concurrency={}", spec.concurrency),
            format!("--shutdown-timeout-ms={}", spec.shutdown_timeout.as_millis()),
            format!("--recoverer-interval-ms={}", spec.recoverer_interval.as_millis()),
            format!("--delayed-task-check-interval-ms={}", spec.delayed_task_check_interval.as_millis()),
            format!("--retry-delay-ms={}", spec.retry_delay.as_millis()),
            format!("--response-timeout-ms={}", spec.response_timeout.as_millis()),
        ];
        args.extend(self.queues.iter().map(|queue| format!("--queue={queue}")));
        if let Some(max) = spec.max_sleep {
            args.push(format!("--max-sleep-ms={}", max.as_millis()));
        }
        if let Some(after) = spec.oversized_enqueue_after {
            args.push(format!("--oversized-enqueue-after-ms={}", after.as_millis()));
        }
        if let Some(limit) = spec.shared_limit {
            args.push(format!("--shared-limit={limit}"));
        }
        self.spawn(label, args, false)
    }

    /// Starts a producer whose acknowledged ledger is `<label>.acked`.
    /// Two workers of concurrency 10, and a producer of `count` tasks at `rate` a second;
    /// returns the producer once a third of the tasks are acknowledged.
    fn steady_load(&mut self, count: u64, rate: u32) -> anyhow::Result<ProcId> {
        let spec = WorkerSpec { concurrency: 10, ..WorkerSpec::default() };
        self.worker("worker-1", &spec)?;
        self.worker("worker-2", &spec)?;
        let producer = self.producer(
            "producer",
            &ProducerSpec { count, sleep: Duration::from_millis(5), rate: Some(rate), ..ProducerSpec::default() },
        )?;
        self.poll("a third of the tasks to be acknowledged", Duration::from_secs(120), |stage| {
            Ok(stage.acknowledged()?.len() as u64 >= count / 3)
        })?;
        Ok(producer)
    }

    fn producer(&mut self, label: &str, spec: &ProducerSpec) -> anyhow::Result<ProcId> {
        let mut args = vec![
            "produce".to_owned(),
            format!("--redis-url={}", self.redis.url()),
            format!("--queue={}", self.queues[0]),
            format!("--acked={}", self.path(&format!("{label}.acked")).display()),
            format!("--count={}", spec.count),
            format!("--first-seq={}", spec.first_seq),
            format!("--sleep-ms={}", spec.sleep.as_millis()),
            format!("--unique-every={}", spec.unique_every),
            format!("--response-timeout-ms={}", spec.response_timeout.as_millis()),
        ];
        if let Some(rate) = spec.rate {
            args.push(format!("--rate={rate}"));
        }
        if let Some(max_retry) = spec.max_retry {
            args.push(format!("--max-retry={max_retry}"));
        }
        if let Some(chain) = spec.workflow_chain {
            args.push(format!("--workflow-chain={chain}"));
        }
        if let Some(queue) = spec.alternate_queue {
            args.push(format!("--alternate-queue={queue}"));
        }
        self.spawn(label, args, true)
    }

    fn proc(&mut self, id: ProcId) -> &mut Proc {
        &mut self.procs[id.0]
    }

    fn pid(&mut self, id: ProcId) -> u32 {
        self.proc(id).child.id()
    }

    /// Sends `signal` (`TERM`, `TSTP`, ...) with kill(1).
    fn signal(&mut self, id: ProcId, signal: &str) -> anyhow::Result<()> {
        let pid = self.pid(id);
        let status =
            Command::new("kill").args(["-s", signal, &pid.to_string()]).status().context("could not run kill")?;
        if !status.success() {
            bail!("kill -s {signal} {pid} ({}) failed: {status}", self.proc(id).label);
        }
        Ok(())
    }

    /// `kill -9`, and waits for it to go.
    fn kill9(&mut self, id: ProcId) {
        let proc = self.proc(id);
        proc.expected_alive = false;
        let _ = proc.child.kill();
        let _ = proc.child.wait();
    }

    /// Polls until the process exits, for up to `limit`; `None` if it still runs.
    fn wait_exit(&mut self, id: ProcId, limit: Duration) -> anyhow::Result<Option<ExitStatus>> {
        self.proc(id).expected_alive = false;
        let give_up = Instant::now() + limit;
        loop {
            if let Some(status) = self.proc(id).child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= give_up {
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for a producer to finish, which must succeed; returns its summary.
    fn finish_producer(&mut self, id: ProcId, limit: Duration) -> anyhow::Result<Summary> {
        let status = self.wait_exit(id, limit)?;
        let proc = self.proc(id);
        let out = std::fs::read_to_string(&proc.out).unwrap_or_default();
        let summary = out.lines().rev().find_map(Summary::parse);
        let log = tail(&proc.log);
        match (status, summary) {
            (Some(status), Some(summary)) if status.success() => Ok(summary),
            (None, _) => bail!("producer {} still runs after {limit:?}; its log ends:\n{log}", proc.label),
            (Some(status), _) => bail!("producer {} failed ({status}); its log ends:\n{log}", proc.label),
        }
    }

    /// SIGTERM to `id`, which must exit successfully within `limit`; returns how long it took.
    fn terminate(&mut self, id: ProcId, limit: Duration) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.signal(id, "TERM")?;
        let label = self.proc(id).label.clone();
        match self.wait_exit(id, limit)? {
            Some(status) if status.success() => {}
            Some(status) => self.failures.push(format!("{label} exited with {status} after SIGTERM")),
            None => {
                self.failures.push(format!("{label} hung: still running {limit:?} after SIGTERM"));
                self.kill9(id);
            }
        }
        Ok(started.elapsed())
    }

    /// Polls `done` until it holds, for up to `limit`.
    fn poll(
        &mut self,
        what: &str,
        limit: Duration,
        mut done: impl FnMut(&mut Self) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let give_up = Instant::now() + limit;
        loop {
            if done(self)? {
                return Ok(());
            }
            for proc in self.procs.iter_mut().filter(|proc| proc.expected_alive) {
                let alive_or_done = match proc.child.try_wait() {
                    Ok(None) => true,
                    Ok(Some(status)) => proc.ends_by_itself && status.success(),
                    Err(_) => false,
                };
                if !alive_or_done {
                    bail!("{} died while waiting for {what}; its log ends:\n{}", proc.label, tail(&proc.log));
                }
            }
            if Instant::now() >= give_up {
                bail!("timed out after {limit:?} waiting for {what}");
            }
            std::thread::sleep(POLL);
        }
    }

    /// Runs a command on the server holding the first queue's keys (every key's server, but on
    /// a Cluster).
    fn command(&self, args: &[&str]) -> anyhow::Result<RespValue> {
        self.command_on(self.queues[0], args)
    }

    /// Runs a command on the server holding the keys of `queue`.
    fn command_on(&self, queue: &str, args: &[&str]) -> anyhow::Result<RespValue> {
        self.redis.data(queue)?.command(args).map_err(|e| anyhow::anyhow!("redis {args:?}: {e}"))
    }

    fn int_on(&self, queue: &str, args: &[&str]) -> anyhow::Result<i64> {
        let reply = self.command_on(queue, args)?;
        reply.as_int().with_context(|| format!("redis {args:?} replied {reply:?}"))
    }

    fn key(queue: &str, suffix: &str) -> String {
        format!("{}{suffix}", Namespace::DEFAULT.queue(queue).prefix())
    }

    /// The counts of every queue, summed. Each queue's are of one moment; the queues are read
    /// one after the other, which misses nothing a drain check needs: a task never moves from
    /// one queue's containers to another's (a workflow task that waits is counted where it
    /// waits until it is released there).
    fn queue_counts(&self) -> anyhow::Result<QueueCounts> {
        let mut total = QueueCounts::default();
        for queue in &self.queues {
            let counts = self.queue_counts_of(queue)?;
            total.pending += counts.pending;
            total.active += counts.active;
            total.scheduled += counts.scheduled;
            total.retry += counts.retry;
            total.archived += counts.archived;
            total.waiting += counts.waiting;
        }
        Ok(total)
    }

    fn queue_counts_of(&self, queue: &str) -> anyhow::Result<QueueCounts> {
        // One script, so the five sizes are of one moment: read one by one, a batch the
        // forwarder moves from retry to pending between two reads would be counted in neither.
        const SIZES: &str = "return {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), \
            redis.call('ZCARD', KEYS[3]), redis.call('ZCARD', KEYS[4]), redis.call('ZCARD', KEYS[5]), \
            redis.call('ZCARD', KEYS[6])}";
        let keys =
            ["pending", "active", "scheduled", "retry", "archived", "wf:waiting"].map(|key| Self::key(queue, key));
        let mut args = vec!["EVAL", SIZES, "6"];
        args.extend(keys.iter().map(String::as_str));
        let reply = self.command_on(queue, &args)?;
        let sizes: Vec<i64> = reply.as_array().unwrap_or_default().iter().filter_map(RespValue::as_int).collect();
        let [pending, active, scheduled, retry, archived, waiting] = sizes[..] else {
            anyhow::bail!("queue sizes: unexpected reply {reply:?}");
        };
        Ok(QueueCounts { pending, active, scheduled, retry, archived, waiting })
    }

    /// The task IDs every producer acknowledged.
    fn acknowledged(&self) -> anyhow::Result<Vec<String>> {
        let mut ids = Vec::new();
        for text in self.read_all("acked")? {
            ids.extend(text.lines().filter(|line| !line.is_empty()).map(str::to_owned));
        }
        Ok(ids)
    }

    /// One worker's ledger lines.
    fn ledger(&self, label: &str) -> String {
        std::fs::read_to_string(self.path(&format!("{label}.ledger"))).unwrap_or_default()
    }

    /// How many handlers one worker started.
    fn starts(&self, label: &str) -> usize {
        self.ledger(label).lines().filter(|line| matches!(LedgerLine::parse(line), Some(LedgerLine::Start(..)))).count()
    }

    /// How many handlers one worker finished.
    fn finished(&self, label: &str) -> usize {
        self.ledger(label).lines().filter(|line| matches!(LedgerLine::parse(line), Some(LedgerLine::Ran(_)))).count()
    }

    /// How many distinct tasks the workers finished, over every ledger.
    fn finished_tasks(&self) -> anyhow::Result<usize> {
        Ok(count_runs(&self.read_all("ledger")?).len())
    }

    /// Keeps an event log of about `cap` events for every queue, as `EventLog::set_event_cap`
    /// does; done before any process starts, so that every process writes it from the start.
    fn keep_event_logs(&self, cap: u32) -> anyhow::Result<()> {
        let settings = Namespace::DEFAULT.event_caps();
        let node = self.redis.node_for(&settings)?;
        for queue in &self.queues {
            let set = node.command(&["HSET", &settings, queue, &cap.to_string()]);
            set.map_err(|e| anyhow::anyhow!("HSET {settings} {queue} {cap}: {e}"))?;
        }
        Ok(())
    }

    /// Per task, how many events of each kind the queues' event logs hold (see
    /// [`Stage::keep_event_logs`]).
    fn event_counts(&self) -> anyhow::Result<HashMap<String, EventCounts>> {
        let mut counts: HashMap<String, EventCounts> = HashMap::new();
        for queue in &self.queues {
            let stream = Namespace::DEFAULT.queue(queue).events();
            let events = self.command_on(queue, &["XRANGE", &stream, "-", "+"])?;
            let events = events.as_array().with_context(|| format!("XRANGE {stream} replied {events:?}"))?;
            if events.len() >= EVENT_CAP as usize {
                bail!("{queue}'s event log reached its cap of {EVENT_CAP}: events may have been trimmed");
            }
            for event in events {
                let fields = event.as_array().and_then(|entry| entry.get(1)).map(RespValue::to_map).unwrap_or_default();
                let (Some(kind), Some(task)) = (fields.get("kind"), fields.get("task")) else {
                    bail!("an event of {stream} without a kind or a task: {event:?}");
                };
                let entry = counts.entry(task.clone()).or_default();
                match kind.as_str() {
                    "enqueued" => entry.enqueued += 1,
                    "started" => entry.started += 1,
                    "requeued" | "retried" => entry.put_back += 1,
                    _ => {}
                }
            }
        }
        Ok(counts)
    }

    /// Per queue, its outbox's length and how many tasks are pending or active there, each
    /// queue's of one moment, read through `connections` (one per queue, in [`Stage::queues`]
    /// order).
    fn relay_state(&self, connections: &mut [RespConnection]) -> anyhow::Result<Vec<RelayState>> {
        const STATE: &str =
            "return {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3])}";
        let mut states = Vec::with_capacity(self.queues.len());
        for (queue, connection) in self.queues.iter().zip(connections) {
            let keys = Namespace::DEFAULT.queue(queue);
            let reply = connection
                .command(&["EVAL", STATE, "3", &keys.workflow_outbox(), &keys.pending(), &keys.active()])
                .map_err(|e| anyhow::anyhow!("the relay state of {queue}: {e}"))?;
            let lengths: Vec<i64> = reply.as_array().unwrap_or_default().iter().filter_map(RespValue::as_int).collect();
            let [outbox, pending, active] = lengths[..] else {
                bail!("the relay state of {queue}: unexpected reply {reply:?}");
            };
            states.push(RelayState { outbox, pending, active });
        }
        Ok(states)
    }

    /// `kill -9` of `victim`, the only worker running, `delay` after an outbox first holds an
    /// entry, and the queues are as `when` says: a relay is then under way, the victim's own
    /// after it settled a task, and a longer delay cuts it off further on. Looks every
    /// [`RELAY_POLL`], for up to [`RELAY_WAIT`], then kills anyway. Returns what it saw: whether
    /// it caught a relay under way, and where the dead worker left each relay.
    fn kill_while_relaying(&mut self, victim: ProcId, when: KillWhen, delay: Duration) -> anyhow::Result<RelayKill> {
        let mut connections = Vec::with_capacity(self.queues.len());
        for queue in &self.queues {
            connections.push(self.redis.data(queue)?.connect().map_err(|e| anyhow::anyhow!("connect: {e}"))?);
        }
        let give_up = Instant::now() + RELAY_WAIT;
        let caught = loop {
            let states = self.relay_state(&mut connections)?;
            let busy = states.iter().any(|state| state.outbox > 0);
            let ready = match when {
                KillWhen::Relaying => true,
                KillWhen::RelayingIdle => states.iter().all(|state| state.pending + state.active == 0),
            };
            if busy && ready {
                break true;
            }
            if Instant::now() >= give_up {
                break false;
            }
            if let Some(status) = self.proc(victim).child.try_wait()? {
                let proc = self.proc(victim);
                bail!("{} died ({status}) before it could be killed; its log ends:\n{}", proc.label, tail(&proc.log));
            }
            std::thread::sleep(RELAY_POLL);
        };
        std::thread::sleep(delay); // Where the relay is cut off.
        self.kill9(victim);
        Ok(RelayKill { caught, left: self.relay_progress()? })
    }

    /// How far the relay of each entry left in an outbox got, read from what each of its steps
    /// writes (see `asynq-redis`'s `scripts/workflow.lua`): the pass marks each dependent with
    /// the parent it heard of (`wf_p:<length of the parent's queue>:<queue>:<ID>` in the
    /// dependent's hash), then the parent's children list is deleted, then the entry.
    fn relay_progress(&self) -> anyhow::Result<RelayProgress> {
        let mut progress = RelayProgress::default();
        for queue in &self.queues {
            let keys = Namespace::DEFAULT.queue(queue);
            let entries = self.command_on(queue, &["LRANGE", &keys.workflow_outbox(), "0", "-1"])?;
            for entry in entries.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str) {
                let (_, parent) = entry.split_once(':').with_context(|| format!("an outbox entry {entry:?}"))?;
                let children = self.command_on(queue, &["LRANGE", &keys.workflow_children(parent), "0", "-1"])?;
                let children: Vec<&str> =
                    children.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str).collect();
                if children.is_empty() {
                    progress.after_children_deleted += 1;
                    continue;
                }
                let mark = format!("wf_p:{}:{queue}:{parent}", queue.len());
                let mut told = 0;
                for pair in children.chunks_exact(2) {
                    let task = Namespace::DEFAULT.queue(pair[0]).task(pair[1]);
                    told += self.int_on(pair[0], &["HEXISTS", &task, &mark])?;
                }
                match told {
                    0 => progress.before_pass += 1,
                    n if n as usize == children.len() / 2 => progress.after_pass += 1,
                    _ => progress.mid_pass += 1,
                }
            }
        }
        Ok(progress)
    }

    /// The non-empty lines of one file of the stage.
    fn read_lines(&self, name: &str) -> anyhow::Result<Vec<String>> {
        let path = self.path(name);
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(text.lines().filter(|line| !line.is_empty()).map(str::to_owned).collect())
    }

    fn read_all(&self, extension: &str) -> anyhow::Result<Vec<String>> {
        let mut texts = Vec::new();
        for entry in std::fs::read_dir(self.dir.path())? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == extension) {
                texts.push(std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?);
            }
        }
        Ok(texts)
    }

    /// IDs in the active lists that have no lease.
    fn orphaned_active(&self) -> anyhow::Result<usize> {
        let mut orphaned = 0;
        for queue in &self.queues {
            let active = self.command_on(queue, &["LRANGE", &Self::key(queue, "active"), "0", "-1"])?;
            for id in active.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str) {
                if self.command_on(queue, &["ZSCORE", &Self::key(queue, "lease"), id])? == RespValue::Nil {
                    orphaned += 1;
                }
            }
        }
        Ok(orphaned)
    }

    /// Uniqueness locks whose task hash is gone.
    fn stale_locks(&self) -> anyhow::Result<usize> {
        let mut stale = 0;
        for queue in &self.queues {
            let locks = self.command_on(queue, &["KEYS", &Self::key(queue, "unique:*")])?;
            for lock in locks.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str) {
                let owner = self.command_on(queue, &["GET", lock])?;
                let exists = match owner.as_str() {
                    Some(id) => self.int_on(queue, &["EXISTS", &Self::key(queue, &format!("t:{id}"))])? == 1,
                    None => false,
                };
                if !exists {
                    stale += 1;
                }
            }
        }
        Ok(stale)
    }

    /// Waits (up to `limit`) until the queue holds nothing unfinished, stops the workers still
    /// running with SIGTERM, and counts. Producers must have finished.
    fn finish(mut self, limit: Duration) -> anyhow::Result<Report> {
        let started = Instant::now();
        let at_start = self.queue_counts()?;
        if at_start.unfinished() > 0 {
            self.notes.push(format!(
                "unfinished when the producers and the fault were done: pending={} active={} scheduled={} retry={}",
                at_start.pending, at_start.active, at_start.scheduled, at_start.retry
            ));
        }
        let drained = self.poll("the queue to drain", limit, |stage| Ok(stage.queue_counts()?.unfinished() == 0));
        match drained {
            Ok(()) => self.notes.push(format!("the queue drained {:.1} s later", started.elapsed().as_secs_f64())),
            Err(e) => self.failures.push(format!("{e:#}; left: {:?}", self.queue_counts().ok())),
        }
        let acknowledged = self.acknowledged()?;
        let ledgers = self.read_all("ledger")?;
        let runs = count_runs(&ledgers);
        let broken: Vec<String> = ledgers
            .iter()
            .flat_map(|text| text.lines())
            .filter_map(|line| match LedgerLine::parse(line) {
                Some(LedgerLine::Broken(id, what)) => Some(format!("{id} ({what})")),
                _ => None,
            })
            .collect();
        if !broken.is_empty() {
            self.failures.push(format!(
                "{} workflow tasks ran without every parent's result, the first: {}",
                broken.len(),
                broken[0]
            ));
        }
        let mut archived: Vec<String> = Vec::new();
        for queue in &self.queues {
            let listed = self.command_on(queue, &["ZRANGE", &Self::key(queue, "archived"), "0", "-1"])?;
            archived
                .extend(listed.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str).map(str::to_owned));
        }
        let starts = count_starts(&ledgers);
        let counts = self.queue_counts()?;
        if counts.archived > 0 {
            self.notes.push(format!("{} tasks archived", counts.archived));
        }
        // Recovered tasks (lease expired) count as failures, like handler errors.
        let mut failed = 0;
        for queue in &self.queues {
            let count = self.command_on(queue, &["GET", &Self::key(queue, "failed")])?;
            failed += count.as_str().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        }
        if failed > 0 {
            self.notes.push(format!("{failed} attempts failed (lease expired and recovered, or handler error)"));
        }
        if let Some(first) = acknowledged.iter().find(|id| !runs.contains_key(*id)) {
            self.notes.push(format!("first lost task: {first}"));
        }
        let mut report = Report {
            orphaned_active: self.orphaned_active()?,
            stale_locks: self.stale_locks()?,
            failed_unrun: failed_unrun(&starts, &runs, &archived),
            ..Report::tally(self.scenario, &acknowledged, &runs)
        };
        let failed_after_start = acknowledged
            .iter()
            .filter(|id| !runs.contains_key(*id) && archived.contains(id) && starts.contains_key(*id))
            .count();
        if failed_after_start > 0 {
            report.lost -= failed_after_start;
            self.notes.push(format!(
                "{failed_after_start} tasks archived after their handler started (charged for an attempt that ran): failed, not lost"
            ));
        }
        if let Some((producer, window)) = self.replication_window.clone() {
            let in_window: Vec<String> = self.read_lines(&format!("{producer}.acked"))?[window.clone()].to_vec();
            let replication_lost = in_window.iter().filter(|id| !runs.contains_key(*id)).count();
            self.notes.push(format!(
                "{replication_lost} of the {} enqueues acknowledged during the failover were lost to it",
                window.len()
            ));
            report.lost -= replication_lost;
            report.replication_lost = Some(replication_lost);
        }
        let ran_unacknowledged = runs.len().saturating_sub(report.ran);
        if ran_unacknowledged > 0 {
            self.notes.push(format!("{ran_unacknowledged} tasks ran whose enqueue was not acknowledged"));
        }
        // The workers still running must have survived the fault and must stop on SIGTERM.
        let running: Vec<usize> = (0..self.procs.len()).filter(|i| self.procs[*i].expected_alive).collect();
        for index in running {
            let proc = &mut self.procs[index];
            if let Ok(Some(status)) = proc.child.try_wait() {
                let failure = format!("{} died during the scenario ({status}); log:\n{}", proc.label, tail(&proc.log));
                self.failures.push(failure);
                continue;
            }
            self.terminate(ProcId(index), Duration::from_secs(30))?;
        }
        for proc in &self.procs {
            let log = std::fs::read_to_string(&proc.log).unwrap_or_default();
            if log.contains("panicked") {
                self.failures.push(format!("{} panicked; log:\n{}", proc.label, tail(&proc.log)));
            }
        }
        report.notes = std::mem::take(&mut self.notes);
        report.failures = std::mem::take(&mut self.failures);
        if !report.passed() {
            let kept = self.dir.path().to_owned();
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir()?);
            let _ = dir.keep();
            report.failures.push(format!("ledgers and logs kept in {}", kept.display()));
        }
        Ok(report)
    }
}

/// The retry counts each task ID's handlers started at, over the text of every worker ledger.
fn count_starts(ledgers: &[String]) -> HashMap<String, BTreeSet<u32>> {
    let mut starts: HashMap<String, BTreeSet<u32>> = HashMap::new();
    for line in ledgers.iter().flat_map(|text| text.lines()) {
        if let Some(LedgerLine::Start(id, retry)) = LedgerLine::parse(line) {
            starts.entry(id.to_owned()).or_default().insert(retry);
        }
    }
    starts
}

/// How many tasks were charged a failure for an attempt no handler started: a task that ran
/// (last at retry count `r`, the highest it started at) was charged `r` failures, one after a
/// started attempt at each retry count below `r`; an archived task was charged at least once.
fn failed_unrun(starts: &HashMap<String, BTreeSet<u32>>, runs: &HashMap<String, usize>, archived: &[String]) -> usize {
    let no_starts = BTreeSet::new();
    let ran_unstarted_attempts = runs.keys().filter(|id| {
        let started = starts.get(*id).unwrap_or(&no_starts);
        let last = started.last().copied().unwrap_or(0);
        (0..last).any(|retry| !started.contains(&retry))
    });
    let archived_unstarted = archived.iter().filter(|id| !runs.contains_key(*id) && !starts.contains_key(*id));
    ran_unstarted_attempts.count() + archived_unstarted.count()
}

/// How many times each task ID was finished, over the text of every worker ledger.
fn count_runs(ledgers: &[String]) -> HashMap<String, usize> {
    let mut runs = HashMap::new();
    for line in ledgers.iter().flat_map(|text| text.lines()) {
        if let Some(LedgerLine::Ran(id)) = LedgerLine::parse(line) {
            *runs.entry(id.to_owned()).or_insert(0) += 1;
        }
    }
    runs
}

/// The last lines of a log file, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// `kill -9` a worker with many tasks in flight; another worker finishes everything once the
/// leases expire and its recoverer finds them.
fn kill_worker(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let in_flight = profile.pick(100, 1_000);
    let extra = in_flight / 5;
    let mut stage = Stage::new(Scenario::KillWorker, bin, &[])?;
    let producer = stage.producer(
        "producer",
        &ProducerSpec { count: (in_flight + extra) as u64, sleep: Duration::from_secs(600), ..ProducerSpec::default() },
    )?;
    stage.finish_producer(producer, Duration::from_secs(120))?;
    let doomed = stage.worker("doomed", &WorkerSpec { concurrency: in_flight, ..WorkerSpec::default() })?;
    stage.poll("the doomed worker to start every handler", Duration::from_secs(120), |stage| {
        Ok(stage.starts("doomed") >= in_flight)
    })?;
    stage.kill9(doomed);
    let active = stage.queue_counts()?.active;
    stage.notes.push(format!("kill -9 of a worker running {active} tasks"));
    rescue_and_finish(stage, profile)
}

/// The workers of the workflow scenarios: a few slots, and a recoverer quick enough in the quick
/// profile that killed workers' tasks come back within the run.
fn workflow_worker(profile: Profile) -> WorkerSpec {
    WorkerSpec {
        concurrency: 10,
        recoverer_interval: profile.pick(Duration::from_secs(1), Duration::from_secs(60)),
        ..WorkerSpec::default()
    }
}

/// The producer of the workflow scenarios: one workflow of `members` side by side, a task
/// waiting for them, then a chain of `chain` (alternating with `alternate_queue`, if given).
fn workflow_producer(members: u64, chain: u64, alternate_queue: Option<&'static str>) -> ProducerSpec {
    ProducerSpec {
        count: members,
        sleep: Duration::from_millis(20),
        unique_every: 0,
        workflow_chain: Some(chain),
        alternate_queue,
        ..ProducerSpec::default()
    }
}

/// A workflow of a wide fan-out (each member a short task), a fan-in task waiting for every
/// member, then a long chain: one worker is killed (`kill -9`) during the fan-out, another
/// during the chain, and a third finishes. Every task runs, none twice, and each workflow task
/// runs only once every task it waits for has succeeded, with their results (a `broken` ledger
/// line otherwise).
fn kill_workers_during_workflow(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let members = profile.pick(1_000, 10_000);
    let chain = profile.pick(30, 200);
    let mut stage = Stage::new(Scenario::KillWorkersDuringWorkflow, bin, &[])?;
    let spec = workflow_worker(profile);
    let first = stage.worker("fan-out", &spec)?;
    let producer = stage.producer("producer", &workflow_producer(members, chain, None))?;
    stage.finish_producer(producer, Duration::from_secs(120))?;
    stage.poll("a third of the fan-out to run", Duration::from_secs(120), |stage| {
        Ok(stage.finished("fan-out") >= members as usize / 3)
    })?;
    stage.kill9(first);
    let second = stage.worker("chain", &spec)?;
    let fanned_in = members as usize + 1;
    stage.poll("the chain to be under way", Duration::from_secs(180), |stage| {
        Ok(stage.finished("fan-out") + stage.finished("chain") >= fanned_in + chain as usize / 3)
    })?;
    stage.kill9(second);
    stage.notes.push(format!(
        "a fan-out of {members} tasks into one, then a chain of {chain}: kill -9 of a worker a third into the \
         fan-out, and of another a third into the chain"
    ));
    rescue_and_finish(stage, profile)
}

/// A workflow whose every task but the first waits for a task of another queue, on another
/// Cluster master, so that every release crosses hash slots through the settling queue's outbox
/// (see `asynq_redis`'s workflow docs): a first task in [`SECOND_QUEUE`], a fan-out of short
/// tasks in [`QUEUE`] waiting for it (released by one relay, a pass per 500), the task waiting
/// for them all in [`SECOND_QUEUE`], then a chain whose steps alternate between the two. One
/// worker at a time serves both queues; it is killed (`kill -9`) the moment an outbox holds an
/// entry, that is while its relay of a task it settled is under way, and a successor starts at
/// once, whose relayer finishes what the dead one left: a few times during the fan-out, each a
/// little further into the relay than the one before (the victim also holds members, run again
/// once their leases expire), and a few times during the chain, each time once nothing is
/// pending or active (the victim holds no task: only the relay is cut off, so the chain waits for
/// the successor's relayer alone). A note tells how far the relays the kills cut off had got
/// (see [`Stage::relay_progress`]).
///
/// Beyond the ledger counts (every task ran, none with a missing or failed parent: the `broken`
/// lines), each task must have been released exactly once. A release is the push of the task
/// onto its queue's pending list, and both queues keep an event log from the start, written by
/// the releasing script in the same step as the push: each task must have exactly one
/// `enqueued` event (a root when it was stored, a dependent when its last parent's outcome
/// reached it). That the releasing script logs what it does is checked apart from its own word:
/// a second copy in a pending list would be taken a second time, so no task may be taken
/// (`started`) more often than once plus the times it was put back (`requeued`, `retried`). And
/// in the workers' ledgers, every task started more than once must have been started by a
/// worker that was killed (a kill is the only thing here that repeats an attempt: its leases
/// expire and the tasks run again), so no surviving worker may have started a task twice. At the
/// end, nothing may be left to relay: no outbox entry, no open parent.
fn kill_workers_during_cross_queue_workflow(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let members = profile.pick(1_000, 10_000);
    let chain = profile.pick(60, 200);
    let (fan_out_kills, chain_kills): (u32, usize) = profile.pick((5, 3), (8, 5));

    let scenario = Scenario::KillWorkersDuringCrossQueueWorkflow;
    let mut stage = Stage::with_cluster_queues(scenario, bin, &[QUEUE, SECOND_QUEUE])?;
    stage.keep_event_logs(EVENT_CAP)?;
    let spec = workflow_worker(profile);
    let mut workers = vec!["worker-1".to_owned()];
    let mut worker = stage.worker(&workers[0], &spec)?;
    let producer = stage.producer("producer", &workflow_producer(members, chain, Some(SECOND_QUEUE)))?;
    stage.finish_producer(producer, Duration::from_secs(120))?;
    let mut killed = Vec::new();
    stage.notes.push(format!(
        "a first task in {SECOND_QUEUE}, a fan-out of {members} tasks in {QUEUE} waiting for it, one task in \
         {SECOND_QUEUE} waiting for them, then a chain of {chain} alternating between the queues"
    ));
    // Each phase: the tasks run before it, its size, when its kills come, and how long after
    // each kill finds a relay under way. During the fan-out a relay goes through the entries of
    // a batch of settled members one after the other, and each kill comes a little further into
    // it than the one before, so that the kills cut relays off at different steps. During the
    // chain the victim is killed at once, before it can take the step its relay releases.
    let phases = [
        ("the fan-out", 1, members, KillWhen::Relaying, (0..fan_out_kills).map(|k| RELAY_STAGGER * k).collect()),
        ("the chain", members + 2, chain, KillWhen::RelayingIdle, vec![Duration::ZERO; chain_kills]),
    ];
    for (phase, before, size, when, delays) in phases {
        let kills = delays.len() as u64;
        let (mut caught, mut left) = (0, RelayProgress::default());
        for (k, delay) in (1..).zip(delays) {
            let target = (before + size * k / (kills + 1)) as usize;
            // The chain starts once the members the killed workers held ran again: their leases
            // expire (30 s), then the recoverer waits 30 s more.
            stage.poll(&format!("{target} tasks to run ({phase})"), Duration::from_secs(240), |stage| {
                Ok(stage.finished_tasks()? >= target)
            })?;
            let kill = stage.kill_while_relaying(worker, when, delay)?;
            caught += usize::from(kill.caught);
            left.add(kill.left);
            killed.extend(workers.last().cloned());
            workers.push(format!("worker-{}", workers.len() + 1));
            worker = stage.worker(workers.last().expect("just started"), &spec)?;
        }
        stage.notes.push(format!(
            "{phase}: kill -9 of {kills} workers, {caught} during a relay, leaving outbox entries {left}"
        ));
    }
    let drained = stage.poll(
        "the workflow to finish",
        profile.pick(Duration::from_secs(120), Duration::from_secs(300)),
        |stage| Ok(stage.queue_counts()?.unfinished() == 0),
    );
    if let Err(e) = drained {
        stage.failures.push(format!("{e:#}"));
    }
    check_releases(&mut stage, &workers, &killed)?;
    stage.finish(Duration::from_secs(10))
}

/// The checks of [`kill_workers_during_cross_queue_workflow`] beyond the ledger counts, once
/// the workflow finished (or could not): each task released once, none taken more often than
/// put in pending, none started twice but after a kill, nothing left to relay. `workers` are
/// the worker labels, `killed` those killed.
fn check_releases(stage: &mut Stage, workers: &[String], killed: &[String]) -> anyhow::Result<()> {
    // A relay cut off after its pass leaves an entry whose dependents already ran; the next
    // relayer pass (every second) removes it.
    let relayed = stage.poll("the outboxes to empty", Duration::from_secs(10), |stage| {
        let mut left = 0;
        for queue in stage.queues.clone() {
            let keys = Namespace::DEFAULT.queue(queue);
            left += stage.int_on(queue, &["LLEN", &keys.workflow_outbox()])?;
            left += stage.int_on(queue, &["HLEN", &keys.workflow_open()])?;
        }
        Ok(left == 0)
    });
    if let Err(e) = relayed {
        stage.failures.push(format!("left to relay: {e:#}"));
    }
    let acknowledged = stage.acknowledged()?;
    let events = stage.event_counts()?;
    let none = EventCounts::default();
    let counts = |id: &String| events.get(id).copied().unwrap_or(none);
    type Fault = fn(EventCounts) -> bool;
    let checks: [(&str, Fault); 3] = [
        ("released more than once", |counts| counts.enqueued > 1),
        ("never released", |counts| counts.enqueued == 0),
        ("taken from pending more often than put there", |counts| counts.started > 1 + counts.put_back),
    ];
    for (what, failed) in checks {
        let ids: Vec<&String> = acknowledged.iter().filter(|id| failed(counts(id))).collect();
        if let Some(first) = ids.first() {
            stage.failures.push(format!("{} tasks {what}, the first: {first}", ids.len()));
        }
    }
    // Started by workers that were never killed: a second start would repeat an attempt no kill
    // cut off.
    let mut survivors_starts: HashMap<String, usize> = HashMap::new();
    for label in workers.iter().filter(|label| !killed.contains(label)) {
        for line in stage.ledger(label).lines() {
            if let Some(LedgerLine::Start(id, _)) = LedgerLine::parse(line) {
                *survivors_starts.entry(id.to_owned()).or_insert(0) += 1;
            }
        }
    }
    let rerun: BTreeSet<&String> = survivors_starts.iter().filter(|(_, n)| **n > 1).map(|(id, _)| id).collect();
    if let Some(first) = rerun.first() {
        stage
            .failures
            .push(format!("{} tasks started more than once by workers never killed, the first: {first}", rerun.len()));
    }
    let released_once = acknowledged.iter().filter(|id| counts(id).enqueued == 1).count();
    let put_back: usize = acknowledged.iter().map(|id| counts(id).put_back).sum();
    stage.notes.push(format!(
        "event logs: {released_once} of {} tasks released exactly once; {put_back} times a task was put back to \
         pending (a killed worker's)",
        acknowledged.len()
    ));
    Ok(())
}

/// Workers of concurrency 5 under a shared limit of 3: one is killed (`kill -9`) while its
/// handlers hold slots, three others drain the queue. Sampling the live workers' ledgers while
/// they do, no more than 3 handlers ever run at once; the dead worker's slots and tasks come back
/// once their leases expire.
fn kill_worker_holding_slots(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    const LIMIT: usize = 3;
    let count = profile.pick(60, 600);
    let mut stage = Stage::new(Scenario::KillWorkerHoldingSlots, bin, &[])?;
    let producer = stage.producer(
        "producer",
        &ProducerSpec { count, sleep: Duration::from_millis(200), unique_every: 0, ..ProducerSpec::default() },
    )?;
    stage.finish_producer(producer, Duration::from_secs(120))?;
    let spec = WorkerSpec {
        concurrency: 5,
        shared_limit: Some(LIMIT as u32),
        recoverer_interval: profile.pick(Duration::from_secs(1), Duration::from_secs(60)),
        delayed_task_check_interval: Duration::from_millis(200),
        ..WorkerSpec::default()
    };
    let doomed = stage.worker("doomed", &spec)?;
    stage.poll("the doomed worker to run a handler", Duration::from_secs(60), |stage| {
        Ok(stage.starts("doomed") > stage.finished("doomed"))
    })?;
    stage.kill9(doomed);
    let held = stage.command(&["ZCARD", "asynq:slots:type:chaos:sleep"])?.as_int().unwrap_or_default();
    stage.notes.push(format!("kill -9 of a worker holding {held} of {LIMIT} shared slots"));
    let survivors = ["worker-1", "worker-2", "worker-3"];
    for label in survivors {
        stage.worker(label, &spec)?;
    }
    let mut peak = 0;
    let drained = stage.poll(
        "the queue to drain under the shared limit",
        profile.pick(Duration::from_secs(120), Duration::from_secs(600)),
        |stage| {
            let running: usize =
                survivors.iter().map(|label| stage.starts(label).saturating_sub(stage.finished(label))).sum();
            peak = peak.max(running);
            Ok(stage.queue_counts()?.unfinished() == 0)
        },
    );
    if let Err(e) = drained {
        stage.failures.push(format!("{e:#}"));
    }
    stage.notes.push(format!("at most {peak} handlers ran at once across the live workers (limit {LIMIT})"));
    if peak > LIMIT {
        stage.failures.push(format!("{peak} handlers ran at once under a shared limit of {LIMIT}"));
    }
    stage.finish(Duration::from_secs(60))
}

/// Starts a rescuer (concurrency 50, handlers that do not sleep) for the tasks of a killed
/// worker, then waits for the queue to drain and counts: the lease (30 s, extended every 5 s)
/// lapses, the recoverer waits 30 s more before taking a task back, a retry is due after 1 s.
fn rescue_and_finish(mut stage: Stage, profile: Profile) -> anyhow::Result<Report> {
    let spec = WorkerSpec {
        concurrency: 50,
        max_sleep: Some(Duration::ZERO),
        recoverer_interval: profile.pick(Duration::from_secs(1), Duration::from_secs(60)),
        delayed_task_check_interval: profile.pick(Duration::from_secs(1), Duration::from_secs(5)),
        ..WorkerSpec::default()
    };
    stage.worker("rescuer", &spec)?;
    stage.finish(profile.pick(Duration::from_secs(100), Duration::from_secs(300)))
}

/// Kill redis-server (AOF, `appendfsync always`) while producers and workers run, restart it
/// on the same port: both reconnect, and every acknowledged task runs.
fn restart_redis(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let count = profile.pick(2_000, 20_000);
    let rate = profile.pick(400, 1_000);
    let down = profile.pick(Duration::from_secs(1), Duration::from_secs(5));
    let mut stage = Stage::new(Scenario::RestartRedis, bin, &["--appendonly", "yes", "--appendfsync", "always"])?;
    let producer = stage.steady_load(count, rate)?;
    let acked = stage.acknowledged()?.len();
    stage.single().kill();
    std::thread::sleep(down); // The fault: Redis is down.
    stage.single().restart();
    stage.notes.push(format!("redis-server killed after {acked} acknowledged enqueues, restarted after {down:?}"));
    let summary = stage.finish_producer(producer, Duration::from_secs(300))?;
    stage.notes.push(format!("producer: {summary}"));
    stage.finish(profile.pick(Duration::from_secs(90), Duration::from_secs(300)))
}

/// Redis answers nothing for a while: calls fail within the response timeout with a clear
/// error, nothing hangs or dies, and everything finishes once Redis is back.
fn redis_unreachable(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let pause = profile.pick(Duration::from_secs(5), Duration::from_secs(30));
    let count = profile.pick(1_000, 6_000);
    let response_timeout = Duration::from_secs(1);
    let mut stage = Stage::new(Scenario::RedisUnreachable, bin, &[])?;
    let spec = WorkerSpec { concurrency: 10, response_timeout, ..WorkerSpec::default() };
    stage.worker("worker-1", &spec)?;
    stage.worker("worker-2", &spec)?;
    let producer = stage.producer(
        "producer",
        &ProducerSpec {
            count,
            sleep: Duration::from_millis(5),
            rate: Some(100),
            response_timeout,
            ..ProducerSpec::default()
        },
    )?;
    stage.poll("a fifth of the tasks to be acknowledged", Duration::from_secs(120), |stage| {
        Ok(stage.acknowledged()?.len() as u64 >= count / 5)
    })?;
    let paused = stage.command(&["CLIENT", "PAUSE", &pause.as_millis().to_string(), "ALL"])?;
    if !paused.is_ok() {
        bail!("CLIENT PAUSE replied {paused:?}");
    }
    std::thread::sleep(pause); // The fault: Redis answers nothing.
    stage.notes.push(format!("Redis paused (CLIENT PAUSE ALL) for {pause:?}, response timeout {response_timeout:?}"));
    let summary = stage.finish_producer(producer, Duration::from_secs(300))?;
    stage.notes.push(format!(
        "producer: {} failed calls, slowest {} ms, first error: {}",
        summary.failed_calls, summary.slowest_failure_ms, summary.first_error
    ));
    if summary.failed_calls == 0 {
        stage.failures.push("no enqueue failed while Redis was paused".to_owned());
    }
    // A failed call may take the timeout twice: once to send, once to reconnect.
    let bound = response_timeout * 2 + Duration::from_secs(1);
    if Duration::from_millis(summary.slowest_failure_ms) > bound {
        stage.failures.push(format!("a failed enqueue took {} ms, more than {bound:?}", summary.slowest_failure_ms));
    }
    stage.finish(profile.pick(Duration::from_secs(90), Duration::from_secs(300)))
}

/// SIGTSTP while every worker slot is busy: the running tasks finish and no new one starts;
/// then SIGTERM during long handlers: they are requeued after the shutdown timeout and the
/// next worker runs them.
fn sigterm(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let concurrency = profile.pick(5, 50);
    let short = profile.pick(Duration::from_millis(1_500), Duration::from_secs(3));
    let observe = profile.pick(Duration::from_millis(1_500), Duration::from_secs(5));
    let shutdown_timeout = profile.pick(Duration::from_secs(1), Duration::from_secs(3));
    let mut stage = Stage::new(Scenario::Sigterm, bin, &[])?;
    let producer = stage.producer(
        "producer",
        &ProducerSpec {
            count: 3 * concurrency as u64,
            sleep: Duration::from_secs(600),
            unique_every: 3,
            ..ProducerSpec::default()
        },
    )?;
    stage.finish_producer(producer, Duration::from_secs(60))?;

    // SIGTSTP: the handlers of the stopped worker are capped at `short`.
    let spec = WorkerSpec { concurrency, max_sleep: Some(short), shutdown_timeout, ..WorkerSpec::default() };
    let stopped = stage.worker("stopped", &spec)?;
    stage.poll("every slot of the first worker to be busy", Duration::from_secs(60), |stage| {
        Ok(stage.starts("stopped") >= concurrency)
    })?;
    stage.signal(stopped, "TSTP")?;
    stage.poll("the SIGTSTP mark", Duration::from_secs(10), |stage| {
        Ok(stage.ledger("stopped").lines().any(|line| LedgerLine::parse(line) == Some(LedgerLine::Tstp)))
    })?;
    stage.poll("the running tasks to finish after SIGTSTP", short + Duration::from_secs(30), |stage| {
        Ok(stage.finished("stopped") >= concurrency)
    })?;
    std::thread::sleep(observe); // Watch the stopped worker: it must start nothing.
    let ledger = stage.ledger("stopped");
    let after_tstp = ledger
        .lines()
        .skip_while(|line| LedgerLine::parse(line) != Some(LedgerLine::Tstp))
        .filter(|line| matches!(LedgerLine::parse(line), Some(LedgerLine::Start(..))))
        .count();
    if after_tstp > 0 {
        stage.failures.push(format!("{after_tstp} tasks started after SIGTSTP"));
    }
    let took = stage.terminate(stopped, Duration::from_secs(30))?;
    stage.notes.push(format!(
        "SIGTSTP with {concurrency} tasks running: they finished, {after_tstp} started in the next {observe:?}; \
         SIGTERM exited in {:.1} s",
        took.as_secs_f64()
    ));

    // SIGTERM during long handlers: requeued after the shutdown timeout.
    let spec = WorkerSpec { concurrency, shutdown_timeout, ..WorkerSpec::default() };
    let interrupted = stage.worker("interrupted", &spec)?;
    stage.poll("every slot of the second worker to be busy", Duration::from_secs(60), |stage| {
        Ok(stage.starts("interrupted") >= concurrency)
    })?;
    let took = stage.terminate(interrupted, shutdown_timeout + Duration::from_secs(30))?;
    let counts = stage.queue_counts()?;
    stage.notes.push(format!(
        "SIGTERM with {concurrency} long tasks running, shutdown timeout {shutdown_timeout:?}: exited in {:.1} s, \
         then active={} pending={}",
        took.as_secs_f64(),
        counts.active,
        counts.pending
    ));
    if counts.active != 0 || counts.pending != 2 * concurrency as i64 {
        stage.failures.push(format!(
            "after SIGTERM the interrupted tasks were not requeued: active={} pending={} (expected 0 and {})",
            counts.active,
            counts.pending,
            2 * concurrency
        ));
    }
    stage.worker("finisher", &WorkerSpec { concurrency, max_sleep: Some(Duration::ZERO), ..WorkerSpec::default() })?;
    stage.finish(Duration::from_secs(60))
}

/// Several worker processes on one queue, fed by two producers at once.
fn many_workers(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let workers = profile.pick(3, 8);
    let count: u64 = profile.pick(2_000, 100_000);
    let mut stage = Stage::new(Scenario::ManyWorkers, bin, &[])?;
    for n in 1..=workers {
        stage.worker(&format!("worker-{n}"), &WorkerSpec { concurrency: 10, ..WorkerSpec::default() })?;
    }
    let started = Instant::now();
    let half = count / 2;
    let producers = [
        stage.producer("producer-1", &ProducerSpec { count: half, unique_every: 50, ..ProducerSpec::default() })?,
        stage.producer(
            "producer-2",
            &ProducerSpec { count: count - half, first_seq: half, unique_every: 50, ..ProducerSpec::default() },
        )?,
    ];
    for producer in producers {
        stage.finish_producer(producer, Duration::from_secs(600))?;
    }
    let report = stage.finish(profile.pick(Duration::from_secs(60), Duration::from_secs(600)))?;
    let mut report = report;
    report
        .notes
        .push(format!("{workers} workers x 10 slots, {count} tasks in {:.1} s", started.elapsed().as_secs_f64()));
    Ok(report)
}

/// A Sentinel failover while producers and workers run: the broker follows the new master, and
/// every acknowledged task runs but those the failover's replication window lost, counted apart.
fn sentinel_failover(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let stage = Stage::with_sentinel(Scenario::SentinelFailover, bin)?;
    failover_under_load(profile, stage, |stage| {
        // The sentinel promotes the replica while the old master still takes writes; those it
        // takes until it is made a replica are lost to the resync.
        stage.sentinel().failover();
        stage.sentinel().rejoin_replica();
        Ok(("SENTINEL FAILOVER".to_owned(), "the old master was a replica again"))
    })
}

/// The hash slot of `queue`'s keys.
fn queue_slot(queue: &str) -> u16 {
    RedisCluster::key_slot(format!("{{{queue}}}"))
}

/// `kill -9` of the Cluster master serving the queue while producers and workers run: its
/// replica takes over, the broker follows the new slot map, and every acknowledged task runs
/// but those the failover's replication window lost, counted apart.
fn cluster_failover(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let stage = Stage::with_cluster(Scenario::ClusterFailover, bin)?;
    failover_under_load(profile, stage, |stage| {
        let victim = stage.redis.data(QUEUE)?.addr();
        let index = stage.cluster().nodes().iter().position(|node| node.addr() == victim);
        let index = index.context("the queue's master is one of the first masters")?;
        stage.cluster().nodes_mut()[index].kill();
        stage.poll("the replica to take over the queue's slot", Duration::from_secs(60), |stage| {
            Ok(stage.redis.data(QUEUE).is_ok_and(|node| node.addr() != victim))
        })?;
        Ok((format!("kill -9 of master {victim}"), "its replica took over"))
    })
}

/// Two workers and a producer at a steady rate on `stage`; once a third of the tasks are
/// acknowledged, `fault` fails the master over and says what it did and what ended it. The
/// acknowledgements from a second before the fault until it returns are its replication
/// window.
fn failover_under_load(
    profile: Profile,
    mut stage: Stage,
    fault: impl FnOnce(&mut Stage) -> anyhow::Result<(String, &'static str)>,
) -> anyhow::Result<Report> {
    let count = profile.pick(2_000, 20_000);
    let rate = profile.pick(400, 1_000);
    let producer = stage.steady_load(count, rate)?;
    // Replication trails the master by milliseconds: the window opens a second's worth of
    // acknowledgements before the fault.
    let before = stage.read_lines("producer.acked")?.len();
    let window_start = before.saturating_sub(rate as usize);
    let started = Instant::now();
    let (what, ended) = fault(&mut stage)?;
    let after = stage.read_lines("producer.acked")?.len();
    stage.notes.push(format!(
        "{what} after {before} acknowledged enqueues; {ended} {:.1} s later",
        started.elapsed().as_secs_f64()
    ));
    stage.replication_window = Some(("producer".to_owned(), window_start..after));
    let summary = stage.finish_producer(producer, Duration::from_secs(300))?;
    stage.notes.push(format!("producer: {summary}"));
    stage.finish(profile.pick(Duration::from_secs(90), Duration::from_secs(300)))
}

/// Two workers (response timeout 1 s; the first as `first` adjusts it) and a paced producer of
/// `count` tasks that may not fail even once (`max_retry(0)`); returns the producer once a
/// fifth of the tasks are acknowledged.
fn unforgiving_load(
    stage: &mut Stage,
    count: u64,
    rate: u32,
    first: impl FnOnce(WorkerSpec) -> WorkerSpec,
) -> anyhow::Result<ProcId> {
    let response_timeout = Duration::from_secs(1);
    let spec = WorkerSpec { concurrency: 10, response_timeout, ..WorkerSpec::default() };
    stage.worker("worker-1", &first(spec.clone()))?;
    stage.worker("worker-2", &spec)?;
    let producer = stage.producer(
        "producer",
        &ProducerSpec {
            count,
            sleep: Duration::from_millis(5),
            rate: Some(rate),
            response_timeout,
            max_retry: Some(0),
            ..ProducerSpec::default()
        },
    )?;
    stage.poll("a fifth of the tasks to be acknowledged", Duration::from_secs(120), |stage| {
        Ok(stage.acknowledged()?.len() as u64 >= count / 5)
    })?;
    Ok(producer)
}

/// Waits for the producer of [`unforgiving_load`], notes its summary, then waits for the queue
/// to drain and counts.
fn finish_unforgiving_load(mut stage: Stage, producer: ProcId, profile: Profile) -> anyhow::Result<Report> {
    let summary = stage.finish_producer(producer, Duration::from_secs(300))?;
    stage.notes.push(format!("producer: {summary}"));
    stage.finish(profile.pick(Duration::from_secs(150), Duration::from_secs(300)))
}

/// Redis frozen with SIGSTOP past every client's response timeout while tasks flow: dequeue
/// replies are lost with tasks already leased, yet no `max_retry(0)` task is charged a failure
/// it did not run, and every one runs once Redis is back.
fn redis_frozen(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let freeze = profile.pick(Duration::from_secs(4), Duration::from_secs(20));
    let count = profile.pick(1_500, 10_000);
    let mut stage = Stage::new(Scenario::RedisFrozen, bin, &[])?;
    let producer = unforgiving_load(&mut stage, count, profile.pick(300, 500), |spec| spec)?;
    let pid = stage.single().pid().context("redis-server is not running")?.to_string();
    let send = |signal: &str| -> anyhow::Result<()> {
        let status = Command::new("kill").args(["-s", signal, &pid]).status().context("could not run kill")?;
        if !status.success() {
            bail!("kill -s {signal} {pid} (redis-server) failed: {status}");
        }
        Ok(())
    };
    send("STOP")?;
    std::thread::sleep(freeze); // The fault: Redis is frozen.
    send("CONT")?;
    stage.notes.push(format!("redis-server frozen (SIGSTOP) for {freeze:?} under load; response timeout 1 s"));
    finish_unforgiving_load(stage, producer, profile)
}

/// redis-server killed (`kill -9`, AOF `always`) and restarted on the same port again and
/// again while tasks that may not fail once (`max_retry(0)`) flow: nothing acknowledged is
/// lost, and no task is charged a failure it did not run.
fn restart_redis_repeatedly(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let kills = profile.pick(2, 6);
    let (down, between) = profile
        .pick((Duration::from_secs(1), Duration::from_secs(2)), (Duration::from_secs(2), Duration::from_secs(5)));
    let count = profile.pick(2_000, 15_000);
    let args = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut stage = Stage::new(Scenario::RestartRedisRepeatedly, bin, &args)?;
    let producer = unforgiving_load(&mut stage, count, profile.pick(300, 500), |spec| spec)?;
    for _ in 0..kills {
        stage.single().kill();
        std::thread::sleep(down); // The fault: Redis is down.
        stage.single().restart();
        std::thread::sleep(between); // Load flows until the next kill.
    }
    stage.notes.push(format!("redis-server killed {kills} times, down {down:?} each, {between:?} apart"));
    finish_unforgiving_load(stage, producer, profile)
}

/// `kill -9` of a worker busy with short tasks, so that it holds a full buffer of tasks taken
/// ahead (the default prefetch) beside those it runs; all may not fail once (`max_retry(0)`).
/// The ones it only took ahead, and the ones it was running (a first stall is forgiven, see
/// `asynq_core::FREE_STALLS`), run on the rescuer charged nothing.
fn kill_prefetching_worker(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let count = profile.pick(3_000, 20_000);
    let concurrency = 10;
    let mut stage = Stage::new(Scenario::KillPrefetchingWorker, bin, &[])?;
    let producer = stage.producer(
        "producer",
        &ProducerSpec { count, sleep: Duration::from_millis(2), max_retry: Some(0), ..ProducerSpec::default() },
    )?;
    stage.finish_producer(producer, Duration::from_secs(120))?;
    let doomed = stage.worker("doomed", &WorkerSpec { concurrency, ..WorkerSpec::default() })?;
    stage.poll("the doomed worker to take tasks ahead", Duration::from_secs(60), |stage| {
        Ok(stage.finished("doomed") >= 200 && stage.queue_counts()?.active > concurrency as i64)
    })?;
    stage.kill9(doomed);
    let active = stage.queue_counts()?.active;
    stage.notes.push(format!("kill -9 of a worker of concurrency {concurrency} holding {active} active tasks"));
    rescue_and_finish(stage, profile)
}

/// A 600 MiB enqueue through the very broker (and connection) a running worker's server uses,
/// while tasks that may not fail once (`max_retry(0)`) flow: the broker refuses it with
/// `Error::TooLarge` before sending anything, and the server goes on as if nothing happened.
fn oversized_enqueue(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let count = profile.pick(1_500, 10_000);
    let mut stage = Stage::new(Scenario::OversizedEnqueue, bin, &[])?;
    let after = Duration::from_secs(2);
    let producer = unforgiving_load(&mut stage, count, profile.pick(300, 500), |spec| WorkerSpec {
        oversized_enqueue_after: Some(after),
        ..spec
    })?;
    let out = stage.path("worker-1.out");
    stage.poll("the oversized enqueue to end", Duration::from_secs(120), |_| {
        Ok(std::fs::read_to_string(&out).is_ok_and(|text| text.contains("oversized=")))
    })?;
    let text = std::fs::read_to_string(&out)?;
    let line = text.lines().find(|line| line.starts_with("oversized=")).unwrap_or_default().to_owned();
    if line.starts_with("oversized=refused") {
        stage.notes.push(format!("a 600 MiB enqueue on worker-1's broker: {line}"));
    } else {
        stage.failures.push(format!("the 600 MiB enqueue was not refused as too large: {line}"));
    }
    let summary = stage.finish_producer(producer, Duration::from_secs(300))?;
    stage.notes.push(format!("producer: {summary}"));
    stage.finish(profile.pick(Duration::from_secs(90), Duration::from_secs(300)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_counts_lost_and_duplicated_tasks() {
        let ledgers = [
            "start a 0\nran a\nstart b 0\ntstp\nran b\nstart c 0\n".to_owned(),
            "start b 0\nran b\nstart x 0\nran x\n".to_owned(),
        ];
        let runs = count_runs(&ledgers);
        assert_eq!(runs, HashMap::from([("a".to_owned(), 1), ("b".to_owned(), 2), ("x".to_owned(), 1)]));
        let acknowledged = ["a", "b", "c"].map(str::to_owned);
        let report = Report::tally("test", &acknowledged, &runs);
        assert_eq!((report.acknowledged, report.ran, report.lost, report.duplicates), (3, 2, 1, 1));
        assert!(!report.passed());
        assert_eq!(
            report.to_string(),
            "scenario=test acknowledged=3 ran=2 lost=1 failed_unrun=0 duplicates=1 orphaned_active=0 stale_locks=0"
        );
        // A failover scenario counts the losses of its replication window apart.
        let failover = Report { lost: 0, replication_lost: Some(1), ..report };
        assert!(failover.passed());
        assert!(failover.to_string().ends_with("stale_locks=0 replication_lost=1"), "{failover}");
    }

    #[test]
    fn failed_unrun_counts_charges_without_a_recorded_start() {
        let ledgers = [
            // a ran at once; b failed once after a start, then ran; c was charged at retry 0
            // without a start (its attempt at 1 ran); d was archived after a start, e without.
            "start a 0\nran a\nstart b 0\nstart b 1\nran b\nstart c 1\nran c\nstart d 0\n".to_owned(),
        ];
        let (starts, runs) = (count_starts(&ledgers), count_runs(&ledgers));
        assert_eq!(failed_unrun(&starts, &runs, &["d".to_owned()]), 1);
        assert_eq!(failed_unrun(&starts, &runs, &["d".to_owned(), "e".to_owned()]), 2);
    }
}
