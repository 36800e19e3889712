//! The scenarios: each sets a stage, injects its fault, and counts.

use super::*;
use crate::worker::LedgerLine;
use anyhow::bail;
use asynq_redis::keys::Namespace;

/// `kill -9` a worker with many tasks in flight; another worker finishes everything once the
/// leases expire and its recoverer finds them.
pub(super) fn kill_worker(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn workflow_worker(profile: Profile) -> WorkerSpec {
    WorkerSpec {
        concurrency: 10,
        recoverer_interval: profile.pick(Duration::from_secs(1), Duration::from_secs(60)),
        ..WorkerSpec::default()
    }
}

/// The producer of the workflow scenarios: one workflow of `members` side by side, a task
/// waiting for them, then a chain of `chain` (alternating with `alternate_queue`, if given).
pub(super) fn workflow_producer(members: u64, chain: u64, alternate_queue: Option<&'static str>) -> ProducerSpec {
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
pub(super) fn kill_workers_during_workflow(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn kill_workers_during_cross_queue_workflow(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn check_releases(stage: &mut Stage, workers: &[String], killed: &[String]) -> anyhow::Result<()> {
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
pub(super) fn kill_worker_holding_slots(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn rescue_and_finish(mut stage: Stage, profile: Profile) -> anyhow::Result<Report> {
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
pub(super) fn restart_redis(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn redis_unreachable(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn sigterm(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn many_workers(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn sentinel_failover(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn queue_slot(queue: &str) -> u16 {
    RedisCluster::key_slot(format!("{{{queue}}}"))
}

/// `kill -9` of the Cluster master serving the queue while producers and workers run: its
/// replica takes over, the broker follows the new slot map, and every acknowledged task runs
/// but those the failover's replication window lost, counted apart.
pub(super) fn cluster_failover(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn failover_under_load(
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
pub(super) fn unforgiving_load(
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
pub(super) fn finish_unforgiving_load(mut stage: Stage, producer: ProcId, profile: Profile) -> anyhow::Result<Report> {
    let summary = stage.finish_producer(producer, Duration::from_secs(300))?;
    stage.notes.push(format!("producer: {summary}"));
    stage.finish(profile.pick(Duration::from_secs(150), Duration::from_secs(300)))
}

/// Redis frozen with SIGSTOP past every client's response timeout while tasks flow: dequeue
/// replies are lost with tasks already leased, yet no `max_retry(0)` task is charged a failure
/// it did not run, and every one runs once Redis is back.
pub(super) fn redis_frozen(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn restart_redis_repeatedly(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn kill_prefetching_worker(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
pub(super) fn oversized_enqueue(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
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
