//! The `durable-steps` scenario: handlers of durable steps, a durable sleep and a wait for a
//! signal (see [`crate::steps`]) while workers are killed and Redis is restarted, and the counts
//! of steps and signals it adds to the ledger ([`StepsLedger`]).

use super::stage::*;
use super::*;
use crate::steps::{STEPS, StepLine, StepsPayload, TASK_TYPE, WaitOutcome, signal_value};
use anyhow::bail;
use asynq_client::{Client, TaskOptions};
use asynq_core::Task;
use asynq_redis::{RedisBroker, RedisConfig, RedisTarget};
use std::io::Write as _;
use std::sync::Arc;

/// The wait's timeout: longer than any run, so that it fires only for a signal lost.
const WAIT_TIMEOUT: Duration = Duration::from_secs(3_600);

/// The response timeout of the orchestrator's client, so that a signal sent while Redis is down
/// fails soon and is sent again.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1);

/// The counts the `durable-steps` scenario adds to its ledger line, from the lines its handlers
/// write (see [`crate::steps`]):
///
/// ```text
/// rerun_recorded_steps=0 rerun_unrecorded_steps=7 missing_step_effects=0 signal_timeouts=0 signals_wrong=0
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepsLedger {
    /// Step bodies that began after a record of their task's step was durable (after
    /// `ctx.step` returned in some attempt): a recorded step ran again. Must be 0.
    pub rerun_recorded_steps: usize,
    /// Step bodies that ran again before any record of their step was durable: the attempt
    /// before was cut off between the effect and its record (at least once per step, allowed).
    pub rerun_unrecorded_steps: usize,
    /// Steps of finished tasks whose body never began: an effect that never happened. Must be 0.
    pub missing_step_effects: usize,
    /// Tasks whose wait for the signal timed out (the timeout is longer than the run). Must be 0.
    pub signal_timeouts: usize,
    /// Tasks whose wait returned another value than the one sent, and finished tasks whose wait
    /// returned nothing the ledger saw. Must be 0.
    pub signals_wrong: usize,
}

impl StepsLedger {
    /// Whether no recorded step ran again, every finished task's steps had their effect, and
    /// every wait returned its signal's value.
    pub fn passed(&self) -> bool {
        self.rerun_recorded_steps == 0
            && self.missing_step_effects == 0
            && self.signal_timeouts == 0
            && self.signals_wrong == 0
    }
}

/// The counts, as the ledger line ends.
impl fmt::Display for StepsLedger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rerun_recorded_steps={} rerun_unrecorded_steps={} missing_step_effects={} signal_timeouts={} signals_wrong={}",
            self.rerun_recorded_steps,
            self.rerun_unrecorded_steps,
            self.missing_step_effects,
            self.signal_timeouts,
            self.signals_wrong
        )
    }
}

/// Counts the steps and signals of `ledgers` (every worker's), for the tasks `finished` (the
/// acknowledged tasks some worker finished); returns the counts and, for each count that must be
/// 0 and is not, a line naming its first example.
pub(super) fn count_steps(ledgers: &[String], finished: &[&String]) -> (StepsLedger, Vec<String>) {
    // Per task and step: when each body began, and when the first record was known durable.
    let mut bodies: HashMap<(&str, &str), Vec<u64>> = HashMap::new();
    let mut recorded: HashMap<(&str, &str), u64> = HashMap::new();
    let mut received: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut timed_out: BTreeSet<&str> = BTreeSet::new();
    for line in ledgers.iter().flat_map(|text| text.lines()) {
        match StepLine::parse(line) {
            Some(StepLine::Body(task, step, _, micros)) => bodies.entry((task, step)).or_default().push(micros),
            Some(StepLine::Recorded(task, step, _, micros)) => {
                let first = recorded.entry((task, step)).or_insert(micros);
                *first = (*first).min(micros);
            }
            Some(StepLine::Signal(task, _, WaitOutcome::Received(value))) => {
                received.entry(task).or_default().push(value)
            }
            Some(StepLine::Signal(task, _, WaitOutcome::TimedOut)) => {
                timed_out.insert(task);
            }
            None => {}
        }
    }
    let mut ledger = StepsLedger::default();
    let mut examples = Vec::new();
    let mut rerun: BTreeSet<String> = BTreeSet::new();
    for (key, began) in &bodies {
        let record = recorded.get(key).copied().unwrap_or(u64::MAX);
        let after = began.iter().filter(|micros| **micros > record).count();
        if after > 0 {
            rerun.insert(format!("{} of {}", key.1, key.0));
        }
        ledger.rerun_recorded_steps += after;
        ledger.rerun_unrecorded_steps += (began.len() - after).saturating_sub(1);
    }
    if let Some(first) = rerun.first() {
        examples.push(format!("{} step bodies ran after their step was recorded, the first: {first}", rerun.len()));
    }
    let missing: Vec<String> = finished
        .iter()
        .flat_map(|id| STEPS.iter().map(move |step| (id.as_str(), *step)))
        .filter(|key| !bodies.contains_key(key))
        .map(|(id, step)| format!("{step} of {id}"))
        .collect();
    ledger.missing_step_effects = missing.len();
    if let Some(first) = missing.first() {
        examples.push(format!("{} steps of finished tasks never ran, the first: {first}", missing.len()));
    }
    ledger.signal_timeouts = timed_out.len();
    if let Some(first) = timed_out.first() {
        examples.push(format!("{} waits for a signal timed out, the first: {first}", timed_out.len()));
    }
    let mut wrong: BTreeSet<&str> = received
        .iter()
        .filter(|(task, values)| values.iter().any(|value| *value != signal_value(task)))
        .map(|(task, _)| *task)
        .collect();
    wrong.extend(
        finished.iter().map(|id| id.as_str()).filter(|id| !received.contains_key(id) && !timed_out.contains(id)),
    );
    ledger.signals_wrong = wrong.len();
    if let Some(first) = wrong.first() {
        examples.push(format!(
            "{} waits returned another value than their signal's, or none, the first: {first}",
            wrong.len()
        ));
    }
    (ledger, examples)
}

/// When the orchestrator sends a task's signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendWhen {
    /// Once the task is parked in its durable sleep (or, if that was missed, parked waiting).
    Sleeping,
    /// Once the task is parked waiting for the signal.
    Waiting,
}

/// A fault of the scenario, injected once the workers have recorded a share of all the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// `kill -9` of the oldest worker still running, and a new one in its place.
    KillWorker,
    /// `kill -9` of redis-server, restarted on the same port after a while (AOF `always`).
    RestartRedis,
}

/// The orchestrator's signaller: a client of its own, the signals still to send, and what the
/// sent ones found.
struct Signaller {
    runtime: tokio::runtime::Runtime,
    client: Client,
    /// Tasks whose signal is still to send, and when to send it.
    unsent: Vec<(String, SendWhen)>,
    /// Signals sent before the task first ran.
    before_run: usize,
    /// Signals sent while the task was parked in its durable sleep.
    while_sleeping: usize,
    /// Signals that woke a task parked waiting for them.
    woke: usize,
    /// Signals sent to a task running, or waiting for a retry.
    otherwise: usize,
    /// Sends that failed and were tried again (Redis down).
    failed_sends: usize,
}

impl Signaller {
    fn connect(url: &str) -> anyhow::Result<Self> {
        // A thread of its own, so the broker's background tasks (reconnection, notices) run between
        // the calls too.
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let target = RedisTarget::from_url(url).context("bad Redis URL")?;
        let config = RedisConfig { response_timeout: CLIENT_TIMEOUT, ..RedisConfig::new(target) };
        let broker = runtime.block_on(RedisBroker::connect_with(config)).context("could not connect")?;
        let client = Client::new(broker.clone()).with_steps(Arc::new(broker));
        Ok(Self {
            runtime,
            client,
            unsent: Vec::new(),
            before_run: 0,
            while_sleeping: 0,
            woke: 0,
            otherwise: 0,
            failed_sends: 0,
        })
    }

    /// Enqueues `count` tasks of [`TASK_TYPE`] in batches, appending each acknowledged ID to
    /// `acked`; every enqueue must succeed (Redis is up).
    fn enqueue(&self, count: usize, payload: StepsPayload, acked: &Path) -> anyhow::Result<Vec<String>> {
        let mut file = File::options().create(true).append(true).open(acked)?;
        let mut ids = Vec::with_capacity(count);
        while ids.len() < count {
            let batch: Vec<(Task, TaskOptions)> = (ids.len()..count.min(ids.len() + 100))
                .map(|_| (Task::new(TASK_TYPE, payload.encode()), TaskOptions::new().queue(QUEUE)))
                .collect();
            for result in self.runtime.block_on(self.client.enqueue_batch(&batch)) {
                let info = result.context("enqueue")?;
                file.write_all(format!("{}\n", info.id).as_bytes())?;
                ids.push(info.id.to_string());
            }
        }
        Ok(ids)
    }

    /// Sends task `id`'s signal; `Ok(None)` when it failed for an outage (to be sent again).
    fn send(&mut self, id: &str) -> anyhow::Result<Option<bool>> {
        match self.runtime.block_on(self.client.signal(QUEUE, id, crate::steps::SIGNAL, &signal_value(id))) {
            Ok(woke) => Ok(Some(woke)),
            Err(asynq_core::Error::Broker(_)) => {
                self.failed_sends += 1;
                Ok(None)
            }
            Err(e) => Err(anyhow::anyhow!("signal to {id}: {e}")),
        }
    }

    /// Looks at the unsent tasks' state in Redis and sends the signals now due; a Redis that does
    /// not answer (restarting) leaves them for the next round.
    fn round(&mut self, stage: &Stage) -> anyhow::Result<()> {
        if self.unsent.is_empty() {
            return Ok(());
        }
        const STATES: &str = "local out = {} for _, key in ipairs(KEYS) do \
            local v = redis.call('HMGET', key, 'state', 'parked') \
            out[#out + 1] = v[1] or '' out[#out + 1] = v[2] or '' end return out";
        let keys: Vec<String> = self.unsent.iter().map(|(id, _)| Stage::key(QUEUE, &format!("t:{id}"))).collect();
        let count = keys.len().to_string();
        let mut args = vec!["EVAL", STATES, &count];
        args.extend(keys.iter().map(String::as_str));
        let Ok(reply) = stage.command(&args) else { return Ok(()) };
        let fields: Vec<String> =
            reply.as_array().unwrap_or_default().iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect();
        if fields.len() != 2 * self.unsent.len() {
            bail!("task states: unexpected reply {reply:?}");
        }
        let mut still = Vec::new();
        for ((id, when), state) in std::mem::take(&mut self.unsent).into_iter().zip(fields.chunks_exact(2)) {
            let (state, parked) = (state[0].as_str(), state[1].as_str());
            let sleeping = state == "scheduled" && parked.starts_with("sleep:");
            let due = match when {
                SendWhen::Sleeping => sleeping || parked.starts_with("signal:"),
                SendWhen::Waiting => parked.starts_with("signal:"),
            };
            match due.then(|| self.send(&id)).transpose()? {
                Some(Some(true)) => self.woke += 1,
                Some(Some(false)) if sleeping => self.while_sleeping += 1,
                Some(Some(false)) => self.otherwise += 1,
                Some(None) | None => still.push((id, when)),
            }
        }
        self.unsent = still;
        Ok(())
    }
}

/// Tasks of five durable steps, a durable sleep and a wait for a signal (see [`crate::steps`]),
/// run by a few workers while workers are killed (`kill -9`, a new one started in each's place)
/// and redis-server is killed and restarted on the same port (AOF `always`), each fault once the
/// workers have recorded a given share of all the steps. The orchestrator sends every task's
/// signal: a third before any worker starts, a third once the task is parked in its sleep, and a
/// third once it is parked waiting. Beyond the ledger counts, the [`StepsLedger`]'s: no step body
/// began after its step's record was durable, every finished task's steps had their effect, and
/// every wait returned the value sent.
pub(super) fn durable_steps(profile: Profile, bin: &Path) -> anyhow::Result<Report> {
    let count = profile.pick(60, 1_000);
    let workers = profile.pick(2, 3);
    let down = profile.pick(Duration::from_secs(1), Duration::from_secs(3));
    // (share of all the steps recorded, fault), in order.
    let faults: Vec<(f64, Fault)> = match profile {
        Profile::Quick => vec![(0.3, Fault::KillWorker), (0.6, Fault::RestartRedis)],
        Profile::Full => vec![
            (0.1, Fault::KillWorker),
            (0.25, Fault::KillWorker),
            (0.4, Fault::RestartRedis),
            (0.55, Fault::KillWorker),
            (0.7, Fault::KillWorker),
        ],
    };
    let payload = StepsPayload {
        sleep_ms: profile.pick(1_000, 1_500),
        body_ms: profile.pick(30, 40),
        wait_s: WAIT_TIMEOUT.as_secs(),
    };
    let spec = WorkerSpec {
        concurrency: profile.pick(5, 10),
        recoverer_interval: profile.pick(Duration::from_secs(1), Duration::from_secs(5)),
        ..WorkerSpec::default()
    };
    let args = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut stage = Stage::new(Scenario::DurableSteps, bin, &args)?;
    let mut signaller = Signaller::connect(&stage.redis.url())?;
    let ids = signaller.enqueue(count, payload, &stage.path("producer.acked"))?;
    for (i, id) in ids.iter().enumerate() {
        match i % 3 {
            0 => match signaller.send(id)? {
                Some(_) => signaller.before_run += 1,
                None => bail!("the signal to {id} could not be sent before any worker started"),
            },
            1 => signaller.unsent.push((id.clone(), SendWhen::Sleeping)),
            _ => signaller.unsent.push((id.clone(), SendWhen::Waiting)),
        }
    }
    let mut live = Vec::new();
    for n in 1..=workers {
        let label = format!("worker-{n}");
        live.push(stage.worker(&label, &spec)?);
    }
    let mut started = workers;
    let total = (count * STEPS.len()) as f64;
    let mut next = 0;
    let mut done = Vec::new();
    let injected = stage.poll(
        "every fault and every signal",
        profile.pick(Duration::from_secs(120), Duration::from_secs(600)),
        |stage| {
            signaller.round(stage)?;
            let recorded = stage
                .read_all("ledger")?
                .iter()
                .flat_map(|text| text.lines())
                .filter(|line| matches!(StepLine::parse(line), Some(StepLine::Recorded(..))))
                .count();
            if let Some((share, fault)) = faults.get(next).copied()
                && recorded as f64 >= share * total
            {
                next += 1;
                match fault {
                    Fault::KillWorker => {
                        stage.kill9(live.remove(0));
                        started += 1;
                        live.push(stage.worker(&format!("worker-{started}"), &spec)?);
                        done.push(format!("kill -9 of a worker at {recorded} steps recorded"));
                    }
                    Fault::RestartRedis => {
                        stage.single().kill();
                        std::thread::sleep(down); // The fault: Redis is down.
                        stage.single().restart();
                        done.push(format!(
                            "redis-server killed at {recorded} steps recorded, restarted after {down:?}"
                        ));
                    }
                }
            }
            Ok(next == faults.len() && signaller.unsent.is_empty())
        },
    );
    stage.notes.push(format!(
        "{count} tasks of {} steps, a {} ms durable sleep and a wait for a signal; {}",
        STEPS.len(),
        payload.sleep_ms,
        done.join(", ")
    ));
    stage.notes.push(format!(
        "signals: {} sent before the task ran, {} while it slept, {} woke it waiting, {} while it ran or awaited a \
         retry; {} sends failed and were sent again",
        signaller.before_run, signaller.while_sleeping, signaller.woke, signaller.otherwise, signaller.failed_sends
    ));
    if let Err(e) = injected {
        stage.failures.push(format!("{e:#}; {} signals unsent", signaller.unsent.len()));
    }
    // The steps' counts need the ledgers once the queue drained, which `finish` reads and then
    // deletes: drain first (`finish` then counts the failure, if it did not).
    let limit = profile.pick(Duration::from_secs(100), Duration::from_secs(300));
    let draining = Instant::now();
    if stage.poll("the queue to drain", limit, |stage| Ok(stage.queue_counts()?.unfinished() == 0)).is_ok() {
        let took = draining.elapsed().as_secs_f64();
        stage.notes.push(format!("the queue drained {took:.1} s after the last fault and signal"));
    }
    let ledgers = stage.read_all("ledger")?;
    let finished = count_runs(&ledgers);
    let ran: Vec<&String> = ids.iter().filter(|id| finished.contains_key(*id)).collect();
    let (steps, examples) = count_steps(&ledgers, &ran);
    if steps.rerun_unrecorded_steps > 0 {
        stage.notes.push(format!(
            "{} step bodies ran again because their attempt was cut off between the effect and its record \
             (at least once per step)",
            steps.rerun_unrecorded_steps
        ));
    }
    stage.failures.extend(examples);
    let mut report = stage.finish(Duration::from_secs(10))?;
    report.steps = Some(steps);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::StepLine::{Body, Recorded, Signal};

    fn ledger(lines: &[StepLine<'_>]) -> String {
        lines.iter().map(StepLine::render).collect()
    }

    #[test]
    fn count_steps_tells_a_recorded_step_run_again_from_a_body_cut_off_before_its_record() {
        let a_value = signal_value("a");
        let mut a_lines = Vec::new();
        for step in STEPS {
            a_lines.push(Body("a", step, "1.0", 10));
            a_lines.push(Recorded("a", step, "1.0", 20));
        }
        // Task b: step-1 cut off before its record and run again (allowed), step-2 run again
        // after its record (not), a wrong value, and a timeout; step-5 never ran.
        let b_lines = [
            Body("b", "step-1", "1.1", 10),
            Body("b", "step-1", "2.0", 30),
            Recorded("b", "step-1", "2.0", 40),
            Body("b", "step-2", "2.0", 50),
            Recorded("b", "step-2", "2.0", 60),
            Body("b", "step-2", "2.1", 70),
            Recorded("b", "step-2", "2.1", 80),
            Body("b", "step-3", "2.1", 90),
            Body("b", "step-4", "2.1", 90),
            Signal("b", "2.1", WaitOutcome::Received("go-x")),
            Signal("b", "2.2", WaitOutcome::TimedOut),
        ];
        a_lines.push(Signal("a", "1.0", WaitOutcome::Received(&a_value)));
        let ledgers = [ledger(&a_lines), ledger(&b_lines)];
        let (a, b) = ("a".to_owned(), "b".to_owned());
        let (counts, examples) = count_steps(&ledgers, &[&a, &b]);
        assert_eq!(
            counts,
            StepsLedger {
                rerun_recorded_steps: 1,
                rerun_unrecorded_steps: 1,
                missing_step_effects: 1,
                signal_timeouts: 1,
                signals_wrong: 1
            }
        );
        assert!(!counts.passed());
        assert_eq!(examples.len(), 4, "{examples:?}");
        assert!(examples[0].ends_with("the first: step-2 of b"), "{examples:?}");
        // Task a alone passes, with nothing run again.
        let (counts, examples) = count_steps(&ledgers[..1], &[&a]);
        assert_eq!(counts, StepsLedger::default());
        assert!(counts.passed() && examples.is_empty());
        assert_eq!(
            counts.to_string(),
            "rerun_recorded_steps=0 rerun_unrecorded_steps=0 missing_step_effects=0 signal_timeouts=0 signals_wrong=0"
        );
        // A finished task whose wait the ledger never saw return is counted wrong.
        let (counts, _) = count_steps(&[ledger(&a_lines[..10])], &[&a]);
        assert_eq!(counts.signals_wrong, 1);
    }
}
