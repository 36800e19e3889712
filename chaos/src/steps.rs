//! The durable-steps handler of the `durable-steps` scenario, and the ledger lines it writes
//! beside the worker's own (`start`, `ran`, see [`crate::worker`]).
//!
//! A task of [`TASK_TYPE`] runs five durable steps (`TaskContext::step`), a durable sleep and a
//! wait for the signal [`SIGNAL`], in this order: `step-1`, `step-2`, the sleep, `step-3`, the
//! wait, `step-4`, `step-5`. Every attempt has a label of its own (`<pid>.<n>`), and every line
//! the handler writes carries the time it was written (Unix microseconds, one clock for every
//! process of the machine), so that the orchestrator can order the lines of all the workers:
//!
//! ```text
//! step-body <task> <step> <attempt> <micros>       the step's body began: its effect happened
//! step-recorded <task> <step> <attempt> <micros>   `ctx.step` returned: its record is durable
//! step-signal <task> <attempt> received <value>    the wait returned the signal's value
//! step-signal <task> <attempt> timed_out           the wait timed out
//! ```
//!
//! A body that begins after a `step-recorded` line of its task and step re-ran a recorded step,
//! which durable steps promise never happens; a body that begins again before any such line was
//! cut off between its effect and its record (a kill, a lost Redis), which they allow.

use crate::worker::Ledger;
use asynq_core::Task;
use asynq_server::{HandlerError, SignalWait, TaskContext};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The task type of the durable-steps scenario's tasks.
pub const TASK_TYPE: &str = "chaos:steps";

/// The five steps of every task, in the order the handler runs them.
pub const STEPS: [&str; 5] = ["step-1", "step-2", "step-3", "step-4", "step-5"];

/// The signal every task waits for.
pub const SIGNAL: &str = "go";

/// The value the orchestrator sends with task `id`'s signal (as JSON), and the one its wait must
/// return.
pub fn signal_value(id: &str) -> String {
    format!("go-{id}")
}

/// What a durable-steps task's payload says, written as `sleep=<ms> body=<ms> wait=<s>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepsPayload {
    /// How long the durable sleep (`ctx.sleep`) lasts, in milliseconds.
    pub sleep_ms: u64,
    /// How long each step's body takes after its effect, in milliseconds: the window in which a
    /// kill leaves the effect without its record.
    pub body_ms: u64,
    /// The wait's timeout, in seconds.
    pub wait_s: u64,
}

impl StepsPayload {
    /// The payload's bytes.
    pub fn encode(&self) -> Vec<u8> {
        format!("sleep={} body={} wait={}", self.sleep_ms, self.body_ms, self.wait_s).into_bytes()
    }

    /// Reads a payload written by [`encode`](Self::encode).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut fields = text.split(' ');
        let mut next = |name: &str| fields.next()?.strip_prefix(name)?.strip_prefix('=')?.parse::<u64>().ok();
        let payload = Self { sleep_ms: next("sleep")?, body_ms: next("body")?, wait_s: next("wait")? };
        fields.next().is_none().then_some(payload)
    }
}

/// What a wait for the signal returned, as a [`StepLine::Signal`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome<'a> {
    /// The signal, with this value.
    Received(&'a str),
    /// The timeout passed first.
    TimedOut,
}

/// One line the durable-steps handler writes to its worker's ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepLine<'a> {
    /// The body of a step began (task, step, attempt, Unix microseconds).
    Body(&'a str, &'a str, &'a str, u64),
    /// `ctx.step` returned, so the step's record is durable (task, step, attempt, Unix
    /// microseconds).
    Recorded(&'a str, &'a str, &'a str, u64),
    /// The wait for [`SIGNAL`] returned (task, attempt, outcome).
    Signal(&'a str, &'a str, WaitOutcome<'a>),
}

impl<'a> StepLine<'a> {
    /// Parses one line; `None` for any other (the worker's own lines among them).
    pub fn parse(line: &'a str) -> Option<Self> {
        let mut words = line.split(' ');
        let kind = words.next()?;
        let mut next = || words.next().filter(|word| !word.is_empty());
        let parsed = match kind {
            "step-body" | "step-recorded" => {
                let (task, step, attempt) = (next()?, next()?, next()?);
                let micros = next()?.parse().ok()?;
                if kind == "step-body" {
                    Self::Body(task, step, attempt, micros)
                } else {
                    Self::Recorded(task, step, attempt, micros)
                }
            }
            "step-signal" => {
                let (task, attempt) = (next()?, next()?);
                let outcome = match next()? {
                    "received" => WaitOutcome::Received(next()?),
                    "timed_out" => WaitOutcome::TimedOut,
                    _ => return None,
                };
                Self::Signal(task, attempt, outcome)
            }
            _ => return None,
        };
        words.next().is_none().then_some(parsed)
    }

    /// The line as written, newline included.
    pub fn render(&self) -> String {
        match self {
            Self::Body(task, step, attempt, micros) => format!("step-body {task} {step} {attempt} {micros}\n"),
            Self::Recorded(task, step, attempt, micros) => {
                format!("step-recorded {task} {step} {attempt} {micros}\n")
            }
            Self::Signal(task, attempt, WaitOutcome::Received(value)) => {
                format!("step-signal {task} {attempt} received {value}\n")
            }
            Self::Signal(task, attempt, WaitOutcome::TimedOut) => format!("step-signal {task} {attempt} timed_out\n"),
        }
    }
}

/// Now, in Unix microseconds.
fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// A label for a new attempt, unique across the scenario's processes.
fn attempt_label() -> String {
    static ATTEMPTS: AtomicU64 = AtomicU64::new(0);
    format!("{}.{}", std::process::id(), ATTEMPTS.fetch_add(1, Ordering::Relaxed))
}

/// The handler of [`TASK_TYPE`]: ledger `start`, the steps, the sleep and the wait (each step's
/// body and record written to the ledger, see the module's docs), ledger `ran`.
pub(crate) async fn handle(ledger: &Ledger, ctx: &TaskContext, task: &Task) -> Result<(), HandlerError> {
    let id = ctx.task_id();
    let payload = StepsPayload::decode(task.payload()).ok_or_else(|| {
        HandlerError::skip_retry(format!("payload {:?} is not `sleep=<ms> body=<ms> wait=<s>`", task.payload()))
    })?;
    let attempt = attempt_label();
    let write = |line: StepLine<'_>| ledger.write(&line.render()).map_err(|e| ledger.write_error(e));
    ledger.append(crate::worker::LedgerLine::Start(id, ctx.retry_count())).map_err(|e| ledger.write_error(e))?;
    let step = |name: &'static str| {
        let attempt = attempt.as_str();
        async move {
            let body = || async move {
                write(StepLine::Body(id, name, attempt, now_micros()))?;
                tokio::time::sleep(Duration::from_millis(payload.body_ms)).await;
                Ok::<_, HandlerError>(format!("{name} of {id}"))
            };
            let result: String = ctx.step(name, body).await?;
            write(StepLine::Recorded(id, name, attempt, now_micros()))?;
            if result != format!("{name} of {id}") {
                return Err(HandlerError::skip_retry(format!("step {name} returned {result:?}")));
            }
            Ok::<_, HandlerError>(())
        }
    };
    step(STEPS[0]).await?;
    step(STEPS[1]).await?;
    ctx.sleep(Duration::from_millis(payload.sleep_ms)).await?;
    step(STEPS[2]).await?;
    let outcome = ctx.wait_for_signal::<String>(SIGNAL, Duration::from_secs(payload.wait_s)).await?;
    match &outcome {
        SignalWait::Received(value) => write(StepLine::Signal(id, &attempt, WaitOutcome::Received(value)))?,
        SignalWait::TimedOut => write(StepLine::Signal(id, &attempt, WaitOutcome::TimedOut))?,
    }
    step(STEPS[3]).await?;
    step(STEPS[4]).await?;
    ledger.append(crate::worker::LedgerLine::Ran(id)).map_err(|e| ledger.write_error(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips() {
        let payload = StepsPayload { sleep_ms: 1_500, body_ms: 40, wait_s: 600 };
        assert_eq!(StepsPayload::decode(&payload.encode()), Some(payload));
        assert_eq!(StepsPayload::decode(b"sleep=1 body=2"), None);
        assert_eq!(StepsPayload::decode(b"sleep=1 body=2 wait=3 more=4"), None);
        assert_eq!(StepsPayload::decode(b"1500 7"), None);
    }

    #[test]
    fn step_lines_round_trip() {
        let lines = [
            StepLine::Body("a-1", "step-1", "42.0", 1_700_000_000_000_000),
            StepLine::Recorded("a-1", "step-5", "42.3", 1_700_000_000_000_001),
            StepLine::Signal("a-1", "42.1", WaitOutcome::Received("\"go-a-1\"")),
            StepLine::Signal("a-1", "42.1", WaitOutcome::TimedOut),
        ];
        for line in lines {
            let text = line.render();
            assert_eq!(StepLine::parse(text.trim_end()), Some(line));
        }
        assert_eq!(StepLine::parse("start a-1 0"), None);
        assert_eq!(StepLine::parse("step-body a-1 step-1 42.0"), None);
        assert_eq!(StepLine::parse("step-signal a-1 42.1 waved"), None);
        assert_eq!(StepLine::parse("step-recorded a-1 step-1 42.0 1 2"), None);
    }
}
