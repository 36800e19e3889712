//! `kill-workers-during-sharded-drain`: a sharded queue ([`asynq_core::shard`]) drained by
//! several workers on a Cluster, some killed on the way.

use super::faults::check_releases;
use super::stage::{count_runs, count_starts};
use super::*;
use asynq_client::Inspector;
use asynq_core::QueueInfo;
use asynq_redis::RedisBroker;
use std::collections::BTreeMap;

/// How many shards the logical queue ([`QUEUE`]) is declared with: two on each of the
/// Cluster's three masters.
const SHARDS: usize = 6;

/// How many masters the Cluster has.
const MASTERS: usize = 3;

/// A Cluster of three masters; [`QUEUE`] declared as a sharded queue of [`SHARDS`] shards (through
/// [`Inspector::declare_sharded_queue`]), which must spread evenly over the masters, as the Cluster
/// itself reports the masters of their slots. Two producers enqueue through a plain `Client`, which
/// places the tasks on the shards by itself; several worker processes serve the logical queue
/// (`worker --sharded-queue`, [`asynq_server::Config::sharded_queues`]), and during the drain some
/// are killed (`kill -9`) each with tasks in flight, and started again at once. The killed workers'
/// tasks run again once their leases expire and a recoverer, which looks at every shard, takes them
/// back.
///
/// Beyond the ledger counts (nothing lost, no failure without a started handler, no orphaned
/// active task nor stale lock in any shard), every shard must have received tasks (its event log,
/// kept from the start, holds `enqueued` events) and drained them (its processed count), and
/// nothing may have gone to the plain queue of the logical name. Each task must have been enqueued
/// once and taken from pending no more often than it was put back there, no worker that was not
/// killed may have started a task twice, and every task finished twice must have been in flight at
/// a kill (started by the killed worker and still active, its outcome not written), which
/// at-least-once delivery runs again. After the drain, [`Inspector::queue_info`] of the logical
/// name must list the declared shards, count nothing left in any state, and sum the shards'
/// processed counts; and no shard may keep a task (a task hash under its keys).
pub(super) fn kill_workers_during_sharded_drain(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let workers = profile.pick(3, 4);
    let count: u64 = profile.pick(900, 20_000);
    let sleep = profile.pick(Duration::from_millis(100), Duration::from_millis(20));
    let kills: u64 = profile.pick(2, 3);

    let scenario = Scenario::KillWorkersDuringShardedDrain;
    let mut stage = Stage::on(scenario, bin, Backend::Cluster(Box::new(RedisCluster::start(MASTERS))))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let inspector = runtime.block_on(async {
        let broker = RedisBroker::connect(&stage.redis.url()).await?;
        anyhow::Ok(Inspector::new(broker))
    })?;
    let declared = runtime.block_on(inspector.declare_sharded_queue(QUEUE, SHARDS))?;
    // The stage's queues are the logical name, then its shards, which the checks of `finish`
    // (orphans, locks, archived and failed counts) go through; the names live as long as the
    // process, a few bytes per run.
    let shards: Vec<&'static str> =
        declared.shards().iter().map(|shard| &*Box::leak(shard.as_str().to_owned().into_boxed_str())).collect();
    stage.queues = std::iter::once(QUEUE).chain(shards.iter().copied()).collect();
    stage.sharded = true;
    check_spread(&mut stage, &shards)?;
    stage.keep_event_logs(EVENT_CAP)?;

    let spec = WorkerSpec {
        concurrency: 10,
        recoverer_interval: profile.pick(Duration::from_secs(1), Duration::from_secs(5)),
        ..WorkerSpec::default()
    };
    let mut live: Vec<(String, ProcId)> = Vec::new();
    for n in 1..=workers {
        let label = format!("worker-{n}");
        live.push((label.clone(), stage.worker(&label, &spec)?));
    }
    let mut labels: Vec<String> = live.iter().map(|(label, _)| label.clone()).collect();
    let half = count / 2;
    let producers = [
        stage.producer("producer-1", &ProducerSpec { count: half, sleep, ..ProducerSpec::default() })?,
        stage.producer(
            "producer-2",
            &ProducerSpec { count: count - half, first_seq: half, sleep, ..ProducerSpec::default() },
        )?,
    ];
    stage.notes.push(format!(
        "{count} tasks of {} ms from two producers, {workers} workers of concurrency 10",
        sleep.as_millis()
    ));

    let mut killed = Vec::new();
    let mut in_flight_at_kills = BTreeSet::new();
    for k in 1..=kills {
        let target = (count * k / (kills + 1)) as usize;
        stage.poll(&format!("{target} tasks to run"), Duration::from_secs(300), |stage| {
            Ok(stage.finished_tasks()? >= target)
        })?;
        let slot = (k as usize - 1) % live.len();
        let (label, victim) = live[slot].clone();
        stage.kill9(victim);
        let running = stage.starts(&label).saturating_sub(stage.finished(&label));
        let in_flight = stage.in_flight(&label)?;
        stage.notes.push(format!(
            "kill -9 of {label} with {running} handlers running and {} tasks it started in flight, {target} tasks run",
            in_flight.len()
        ));
        in_flight_at_kills.extend(in_flight);
        killed.push(label);
        let successor = format!("worker-{}-restart-{k}", slot + 1);
        live[slot] = (successor.clone(), stage.worker(&successor, &spec)?);
        labels.push(successor);
    }
    if in_flight_at_kills.is_empty() {
        stage.failures.push("no kill found a task in flight: the kills tested nothing".to_owned());
    }
    for producer in producers {
        let summary = stage.finish_producer(producer, Duration::from_secs(300))?;
        if summary.failed_calls > 0 {
            stage.notes.push(format!("producer: {summary}"));
        }
    }
    // The killed workers' tasks come back once their leases expire (30 s) and a recoverer's
    // grace (30 s more) has passed.
    let drain_started = Instant::now();
    let drained = stage.poll(
        "the logical queue to drain",
        profile.pick(Duration::from_secs(150), Duration::from_secs(300)),
        |stage| Ok(stage.queue_counts()?.unfinished() == 0),
    );
    match drained {
        Ok(()) => stage.notes.push(format!(
            "the killed workers' tasks ran and the shards drained {:.1} s after the producers were done",
            drain_started.elapsed().as_secs_f64()
        )),
        Err(e) => stage.failures.push(format!("{e:#}")),
    }
    check_releases(&mut stage, &labels, &killed)?;
    check_duplicates(&mut stage, &in_flight_at_kills)?;
    check_shards(&mut stage, &runtime, &inspector, &declared)?;
    drop(inspector);
    stage.finish(Duration::from_secs(10))
}

/// Fails the stage unless the shards' slots are served by every master, [`SHARDS`] /
/// [`MASTERS`] each, as the Cluster reports the masters; notes where each shard lives.
fn check_spread(stage: &mut Stage, shards: &[&'static str]) -> anyhow::Result<()> {
    let mut per_master: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for shard in shards {
        per_master.entry(stage.redis.data(shard)?.addr()).or_default().push(shard);
    }
    let spread: Vec<String> =
        per_master.iter().map(|(master, shards)| format!("{master}: {}", shards.join(" "))).collect();
    stage.notes.push(format!("{SHARDS} shards of {QUEUE} by master: {}", spread.join("; ")));
    let even = per_master.len() == MASTERS && per_master.values().all(|on| on.len() == SHARDS / MASTERS);
    if !even {
        stage.failures.push(format!("the shards do not spread evenly over the {MASTERS} masters: {spread:?}"));
    }
    Ok(())
}

/// Fails the stage for every task finished more than once that was not in flight at a kill
/// (`in_flight`): at-least-once delivery repeats only a task whose outcome its killed worker had
/// not written.
fn check_duplicates(stage: &mut Stage, in_flight: &BTreeSet<String>) -> anyhow::Result<()> {
    let runs = count_runs(&stage.read_all("ledger")?);
    let duplicated: Vec<&String> = runs.iter().filter(|(_, n)| **n > 1).map(|(id, _)| id).collect();
    let unexplained: Vec<&&String> = duplicated.iter().filter(|id| !in_flight.contains(**id)).collect();
    stage.notes.push(format!(
        "{} tasks finished twice or more, {} of them in flight at a kill (of the {} that were)",
        duplicated.len(),
        duplicated.len() - unexplained.len(),
        in_flight.len()
    ));
    if let Some(first) = unexplained.first() {
        stage.failures.push(format!(
            "{} tasks finished more than once that were not in flight at a kill, the first: {first}",
            unexplained.len()
        ));
    }
    Ok(())
}

/// The checks of each shard and of the logical queue after the drain (see
/// [`kill_workers_during_sharded_drain`]).
fn check_shards(
    stage: &mut Stage,
    runtime: &tokio::runtime::Runtime,
    inspector: &Inspector,
    declared: &asynq_core::shard::ShardedQueue,
) -> anyhow::Result<()> {
    let logical = runtime.block_on(inspector.queue_info(QUEUE))?;
    if logical.shards != declared.shards() {
        stage.failures.push(format!(
            "queue_info({QUEUE}) lists the shards {:?}, not {:?}",
            logical.shards,
            declared.shards()
        ));
    }
    if let Some(left) = left_in(&logical) {
        stage.failures.push(format!("queue_info({QUEUE}) still counts {left} after the drain"));
    }
    let mut processed = 0;
    let mut per_shard = Vec::new();
    for shard in declared.shards() {
        let info = runtime.block_on(inspector.queue_info(shard))?;
        if let Some(left) = left_in(&info) {
            stage.failures.push(format!("queue_info({shard}) still counts {left} after the drain"));
        }
        let enqueued = stage.enqueued_events(shard)?;
        if enqueued == 0 || info.processed_total == 0 {
            stage.failures.push(format!(
                "shard {shard} did not both receive and drain tasks: {enqueued} enqueued, {} processed",
                info.processed_total
            ));
        }
        let kept = stage.command_on(shard, &["KEYS", &Stage::key(shard, "t:*")])?;
        let kept = kept.as_array().map_or(0, |keys| keys.len());
        if kept > 0 {
            stage.failures.push(format!("shard {shard} keeps {kept} tasks after the drain"));
        }
        processed += info.processed_total;
        per_shard.push(format!("{shard} {enqueued}/{}", info.processed_total));
    }
    // The plain queue of the logical name serves producers that do not place (Go's; and
    // `queue_info` adds it in); every producer here places tasks on the shards.
    let plain_enqueued = stage.enqueued_events(QUEUE)?;
    let plain_processed = stage.command(&["GET", &Stage::key(QUEUE, "processed")])?;
    let plain_processed = plain_processed.as_str().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    if plain_enqueued > 0 || plain_processed > 0 {
        stage.failures.push(format!(
            "tasks went to the plain queue {QUEUE}, not to a shard: {plain_enqueued} enqueued, {plain_processed} processed"
        ));
    }
    if logical.processed_total != processed + plain_processed {
        stage.failures.push(format!(
            "queue_info({QUEUE}) counts {} processed, its shards {processed} and the plain queue {plain_processed}",
            logical.processed_total
        ));
    }
    stage.notes.push(format!("per shard, tasks enqueued/processed: {}", per_shard.join(", ")));
    Ok(())
}

/// What `info` still counts in a state a drained queue has nothing in, if anything.
fn left_in(info: &QueueInfo) -> Option<String> {
    let counts = [
        ("size", info.size),
        ("pending", info.pending),
        ("active", info.active),
        ("scheduled", info.scheduled),
        ("retry", info.retry),
        ("archived", info.archived),
        ("completed", info.completed),
        ("aggregating", info.aggregating),
        ("waiting", info.waiting),
    ];
    let left: Vec<String> = counts.iter().filter(|(_, n)| *n > 0).map(|(what, n)| format!("{what}={n}")).collect();
    (!left.is_empty()).then(|| left.join(" "))
}

impl Stage {
    /// The tasks the killed worker `label` started whose outcome is not written: still in an
    /// active list. Read right after the kill, before their leases expire, when no other worker
    /// can have taken them again.
    fn in_flight(&self, label: &str) -> anyhow::Result<BTreeSet<String>> {
        let started = count_starts(&[self.ledger(label)]);
        let mut in_flight = BTreeSet::new();
        for queue in &self.queues {
            let active = self.command_on(queue, &["LRANGE", &Self::key(queue, "active"), "0", "-1"])?;
            let active = active.as_array().unwrap_or_default();
            let ids = active.iter().filter_map(RespValue::as_str).filter(|id| started.contains_key(*id));
            in_flight.extend(ids.map(str::to_owned));
        }
        Ok(in_flight)
    }

    /// How many `enqueued` events the event log of `queue` holds (see
    /// [`Stage::keep_event_logs`]).
    fn enqueued_events(&self, queue: &str) -> anyhow::Result<usize> {
        let stream = asynq_redis::keys::Namespace::DEFAULT.queue(queue).events();
        let events = self.command_on(queue, &["XRANGE", &stream, "-", "+"])?;
        let events = events.as_array().with_context(|| format!("XRANGE {stream} replied {events:?}"))?;
        Ok(events
            .iter()
            .filter_map(|event| event.as_array().and_then(|entry| entry.get(1)).map(RespValue::to_map))
            .filter(|fields| fields.get("kind").is_some_and(|kind| kind == "enqueued"))
            .count())
    }
}
