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
//! - `rerun_recorded_steps` and the other counts of [`StepsLedger`] (`durable-steps` only): steps
//!   run again after their record was durable, and signals lost.
//!
//! Anything else a scenario checks (a process that hung, panicked or died, a call that did not
//! fail within its timeout, a task that started after SIGTSTP) is a [`Report::failures`] entry.
//! Waiting is always polling every [`POLL`] with a bound; the only fixed pauses are faults
//! held for a set time ("Redis down for 5 s") and the observation window after SIGTSTP.

use anyhow::Context as _;
use asynq_tests::{RedisCluster, RedisSentinel, RedisServer, RespConnection, RespValue};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod faults;
mod sharded;
mod stage;
mod steps;

use faults::*;
pub use steps::StepsLedger;

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
    /// `kill -9` of workers (each restarted) while they drain a sharded queue whose shards
    /// spread over the masters of a Cluster, resharded on the way.
    KillWorkersDuringShardedDrain,
    /// Handlers of durable steps, a durable sleep and a wait for a signal, while workers are
    /// killed (`kill -9`) and Redis restarted: no recorded step runs again, no signal is lost.
    DurableSteps,
}

impl Scenario {
    /// Every scenario, in the order `run --scenario all` runs them.
    pub const ALL: [Scenario; 16] = [
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
        Self::KillWorkersDuringShardedDrain,
        Self::DurableSteps,
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
            Self::KillWorkersDuringShardedDrain => "kill-workers-during-sharded-drain",
            Self::DurableSteps => "durable-steps",
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
            Self::KillWorkersDuringShardedDrain => sharded::kill_workers_during_sharded_drain(profile, bin),
            Self::DurableSteps => steps::durable_steps(profile, bin),
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
    /// In the durable-steps scenario, the counts of steps and signals.
    pub steps: Option<StepsLedger>,
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
            && self.steps.is_none_or(|steps| steps.passed())
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
        if let Some(steps) = self.steps {
            write!(f, " {steps}")?;
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
    /// Whether the first queue is a sharded queue's logical name and the others its shards:
    /// workers then serve it as a sharded queue (producers place tasks on its shards by themselves).
    sharded: bool,
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

#[cfg(test)]
mod tests {
    use super::stage::*;
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
