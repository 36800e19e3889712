//! `kill-workers-during-sharded-drain`: a sharded queue ([`asynq_core::shard`]) drained by
//! several workers on a Cluster, resharded and some workers killed on the way.

use super::faults::check_releases;
use super::stage::{count_runs, count_starts};
use super::*;
use asynq_client::Inspector;
use asynq_core::QueueInfo;
use asynq_core::shard::ShardedQueue;
use asynq_redis::RedisBroker;
use std::collections::BTreeMap;

/// How many shards the logical queue ([`QUEUE`]) is declared with: two on each of the
/// Cluster's three masters.
const SHARDS: usize = 6;

/// How many masters the Cluster has.
const MASTERS: usize = 3;

/// How many shards the logical queue is resharded to once the first producer is done: three on
/// each master.
const RESHARDED: usize = 9;

/// A Cluster of three masters; [`QUEUE`] declared as a sharded queue of [`SHARDS`] shards (through
/// [`Inspector::declare_sharded_queue`]), which must spread evenly over the masters, as the Cluster
/// itself reports the masters of their slots. Two producers enqueue through a plain `Client`, which
/// places the tasks on the shards by itself; several worker processes serve the logical queue
/// (`worker --sharded-queue`, [`asynq_server::Config::sharded_queues`]). Once the first producer
/// is done, while the workers drain its tasks, the queue is resharded to [`RESHARDED`] shards
/// ([`Inspector::reshard_queue`], spread evenly too), and the second producer places its tasks on
/// the new generation; during the drain some workers are killed (`kill -9`) each with tasks in
/// flight, and started again at once. The killed workers' tasks run again once their leases
/// expire and a recoverer, which looks at every shard, takes them back; the workers drop the old
/// generation once its grace has passed and it is drained.
///
/// Beyond the ledger counts (nothing lost, no failure without a started handler, no orphaned
/// active task nor stale lock in any shard), every shard of both generations must have received
/// tasks (its event log, kept from the start, holds `enqueued` events) and drained them (its
/// processed count), and nothing may have gone to the plain queue of the logical name. Each task
/// must have been enqueued once and taken from pending no more often than it was put back there,
/// no worker that was not killed may have started a task twice, and every task finished twice
/// must have been in flight at a kill (started by the killed worker and still active, its outcome
/// not written), which at-least-once delivery runs again. After the drain the old generation must
/// be dropped (its queues no longer registered, its processed counts kept in the declaration's
/// retired totals); [`Inspector::queue_info`] of the logical name must list the new shards,
/// count nothing left in any state, and sum the new shards' and the retired processed counts;
/// and no shard may keep a task (a task hash under its keys).
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
    // The stage's queues are the logical name, then its shards (of both generations, once
    // resharded), which the checks of `finish` (orphans, locks, archived and failed counts) go
    // through.
    stage.queues = vec![QUEUE];
    stage.sharded = true;
    add_shards(&mut stage, &declared)?;

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
    let first = stage.producer("producer-1", &ProducerSpec { count: half, sleep, ..ProducerSpec::default() })?;
    let mut summaries = vec![stage.finish_producer(first, Duration::from_secs(300))?];
    // The second producer starts once the new generation keeps event logs: it reads the
    // declaration (and the logs' settings) at its first enqueue.
    let resharded = runtime.block_on(inspector.reshard_queue(QUEUE, RESHARDED))?;
    add_shards(&mut stage, &resharded)?;
    let resharded_at = Instant::now();
    let second = stage.producer(
        "producer-2",
        &ProducerSpec { count: count - half, first_seq: half, sleep, ..ProducerSpec::default() },
    )?;
    stage.notes.push(format!(
        "{count} tasks of {} ms from two producers, {workers} workers of concurrency 10; resharded from {SHARDS} to \
         {RESHARDED} shards between the producers",
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
    summaries.push(stage.finish_producer(second, Duration::from_secs(300))?);
    for summary in summaries.iter().filter(|summary| summary.failed_calls > 0) {
        stage.notes.push(format!("producer: {summary}"));
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
    let dropped = stage.poll("the old generation to be dropped", Duration::from_secs(120), |_| {
        let now = runtime.block_on(inspector.sharded_queues())?;
        Ok(now.iter().any(|sharded| sharded.logical() == QUEUE && sharded.draining().is_none()))
    });
    match dropped {
        Ok(()) => stage.notes.push(format!(
            "the workers dropped the old generation {:.1} s after the reshard",
            resharded_at.elapsed().as_secs_f64()
        )),
        Err(e) => stage.failures.push(format!("{e:#}")),
    }
    check_releases(&mut stage, &labels, &killed)?;
    check_duplicates(&mut stage, &in_flight_at_kills)?;
    check_shards(&mut stage, &runtime, &inspector, &declared)?;
    drop(inspector);
    stage.finish(Duration::from_secs(10))
}

/// Adds the shards of `declared`'s newest generation to the stage's queues (the names live as
/// long as the process, a few bytes per run), checks their spread ([`check_spread`]) and keeps
/// an event log for each.
fn add_shards(stage: &mut Stage, declared: &ShardedQueue) -> anyhow::Result<()> {
    let shards: Vec<&'static str> =
        declared.shards().iter().map(|shard| &*Box::leak(shard.as_str().to_owned().into_boxed_str())).collect();
    stage.queues.extend(shards.iter().copied());
    check_spread(stage, &shards)?;
    stage.keep_event_logs(EVENT_CAP)
}

/// Fails the stage unless the shards' slots are served by every master, as many each, as the
/// Cluster reports the masters; notes where each shard lives.
fn check_spread(stage: &mut Stage, shards: &[&'static str]) -> anyhow::Result<()> {
    let mut per_master: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for shard in shards {
        per_master.entry(stage.redis.data(shard)?.addr()).or_default().push(shard);
    }
    let spread: Vec<String> =
        per_master.iter().map(|(master, shards)| format!("{master}: {}", shards.join(" "))).collect();
    stage.notes.push(format!("{} shards of {QUEUE} by master: {}", shards.len(), spread.join("; ")));
    let even = per_master.len() == MASTERS && per_master.values().all(|on| on.len() == shards.len() / MASTERS);
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

/// The checks of each shard of both generations and of the logical queue after the drain and
/// the drop of `first`, the first generation (see [`kill_workers_during_sharded_drain`]).
fn check_shards(
    stage: &mut Stage,
    runtime: &tokio::runtime::Runtime,
    inspector: &Inspector,
    first: &ShardedQueue,
) -> anyhow::Result<()> {
    let declared = runtime.block_on(inspector.sharded_queues())?.into_iter().find(|s| s.logical() == QUEUE);
    let declared = declared.with_context(|| format!("{QUEUE} is no longer declared"))?;
    let logical = runtime.block_on(inspector.queue_info(QUEUE))?;
    if logical.shards != declared.shards() || !logical.draining_shards.is_empty() {
        stage.failures.push(format!(
            "queue_info({QUEUE}) lists the shards {:?} and {:?} draining, not {:?}",
            logical.shards,
            logical.draining_shards,
            declared.shards()
        ));
    }
    if let Some(left) = left_in(&logical) {
        stage.failures.push(format!("queue_info({QUEUE}) still counts {left} after the drain"));
    }
    let registered = runtime.block_on(inspector.queues())?;
    let mut per_shard = Vec::new();
    let mut processed = 0;
    for shard in declared.shards() {
        let info = runtime.block_on(inspector.queue_info(shard))?;
        if let Some(left) = left_in(&info) {
            stage.failures.push(format!("queue_info({shard}) still counts {left} after the drain"));
        }
        processed += info.processed_total;
        per_shard.push(check_shard(stage, shard, info.processed_total)?);
    }
    // The old generation's queues are removed; their counters stay, as Go's removal leaves them.
    let mut retired = 0;
    for shard in first.shards() {
        if registered.contains(shard) {
            stage.failures.push(format!("the old shard {shard} is still a registered queue"));
        }
        let count = counter(stage, shard, "processed")?;
        retired += count;
        per_shard.push(check_shard(stage, shard, count)?);
    }
    if declared.retired().processed != retired {
        stage.failures.push(format!(
            "the declaration keeps {} processed by the dropped generation, its shards' counters {retired}",
            declared.retired().processed
        ));
    }
    // The plain queue of the logical name serves producers that do not place (Go's; and
    // `queue_info` adds it in); every producer here places tasks on the shards.
    let plain_enqueued = stage.enqueued_events(QUEUE)?;
    let plain_processed = counter(stage, QUEUE, "processed")?;
    if plain_enqueued > 0 || plain_processed > 0 {
        stage.failures.push(format!(
            "tasks went to the plain queue {QUEUE}, not to a shard: {plain_enqueued} enqueued, {plain_processed} processed"
        ));
    }
    let expected = processed + declared.retired().processed + plain_processed;
    if logical.processed_total != expected {
        stage.failures.push(format!(
            "queue_info({QUEUE}) counts {} processed, its shards {processed}, the dropped ones {} and the plain queue \
             {plain_processed}",
            logical.processed_total,
            declared.retired().processed
        ));
    }
    stage.notes.push(format!("per shard, tasks enqueued/processed: {}", per_shard.join(", ")));
    Ok(())
}

/// Fails the stage unless `shard` received tasks (its event log) and `processed` some, or if it
/// keeps a task hash; returns `<shard> <enqueued>/<processed>` for the notes.
fn check_shard(stage: &mut Stage, shard: &str, processed: u64) -> anyhow::Result<String> {
    let enqueued = stage.enqueued_events(shard)?;
    if enqueued == 0 || processed == 0 {
        stage.failures.push(format!(
            "shard {shard} did not both receive and drain tasks: {enqueued} enqueued, {processed} processed"
        ));
    }
    let kept = stage.command_on(shard, &["KEYS", &Stage::key(shard, "t:*")])?;
    let kept = kept.as_array().map_or(0, |keys| keys.len());
    if kept > 0 {
        stage.failures.push(format!("shard {shard} keeps {kept} tasks after the drain"));
    }
    Ok(format!("{shard} {enqueued}/{processed}"))
}

/// The total counter `name` (`processed`, `failed`) of `queue`, 0 when it was never written.
fn counter(stage: &Stage, queue: &str, name: &str) -> anyhow::Result<u64> {
    let reply = stage.command_on(queue, &["GET", &Stage::key(queue, name)])?;
    Ok(reply.as_str().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0))
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
