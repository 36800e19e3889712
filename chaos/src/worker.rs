//! The `worker` subcommand: an [`asynq_server::Server`] over a [`RedisBroker`] whose handler
//! writes every task it runs to a ledger file, and the ledger's line format.
//!
//! The ledger is opened with `O_APPEND` and each line is one `write(2)`, so lines never
//! interleave between tasks, and what was written survives a `kill -9` of the process (the
//! page cache belongs to the kernel). A handler writes `start <id> <retry count>` when it
//! begins and `ran <id>` when it has finished, just before it returns success; a SIGTSTP
//! writes `tstp`. The handler sleeps as long as the payload says ([`Payload`]), capped by
//! `--max-sleep-ms`.

use anyhow::Context as _;
use asynq_core::Task;
use asynq_core::workflow::ParentOutcome;
use asynq_redis::{RedisBroker, RedisConfig, RedisTarget};
use asynq_server::{Config, HandlerError, Server, TaskContext, handler_fn};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The task type every chaos task has.
pub const TASK_TYPE: &str = "chaos:sleep";

/// What a chaos task's payload says: how long its handler sleeps, and a sequence number that
/// makes every payload (and so every uniqueness lock) distinct. Written as `<sleep_ms> <seq>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload {
    /// How long the handler sleeps, in milliseconds.
    pub sleep_ms: u64,
    /// The task's number within its producer's run.
    pub seq: u64,
}

impl Payload {
    /// The payload's bytes.
    pub fn encode(&self) -> Vec<u8> {
        format!("{} {}", self.sleep_ms, self.seq).into_bytes()
    }

    /// Reads a payload written by [`encode`](Self::encode).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (sleep_ms, seq) = text.split_once(' ')?;
        Some(Self { sleep_ms: sleep_ms.parse().ok()?, seq: seq.parse().ok()? })
    }
}

/// One line of a worker's ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerLine<'a> {
    /// The handler of this task ID started, at this retry count (how many failures the task
    /// had been charged).
    Start(&'a str, u32),
    /// The handler of this task ID finished and is about to return success.
    Ran(&'a str),
    /// This workflow task ran without every parent it waits for having succeeded, or without
    /// the parents' results (the text says what was wrong).
    Broken(&'a str, &'a str),
    /// The worker received SIGTSTP.
    Tstp,
}

impl<'a> LedgerLine<'a> {
    /// Parses one line; `None` for anything else (such as an empty line).
    pub fn parse(line: &'a str) -> Option<Self> {
        match line.split_once(' ') {
            Some(("start", rest)) => {
                let (id, retry) = rest.split_once(' ')?;
                (!id.is_empty()).then_some(Self::Start(id, retry.parse().ok()?))
            }
            Some(("ran", id)) if !id.is_empty() => Some(Self::Ran(id)),
            Some(("broken", rest)) => {
                let (id, what) = rest.split_once(' ')?;
                Some(Self::Broken(id, what))
            }
            None if line == "tstp" => Some(Self::Tstp),
            _ => None,
        }
    }

    /// The line as written, newline included.
    fn render(&self) -> String {
        match self {
            Self::Start(id, retry) => format!("start {id} {retry}\n"),
            Self::Ran(id) => format!("ran {id}\n"),
            Self::Broken(id, what) => format!("broken {id} {what}\n"),
            Self::Tstp => "tstp\n".to_owned(),
        }
    }
}

/// A ledger file opened for appending; clones share the file.
#[derive(Debug, Clone)]
pub(crate) struct Ledger {
    file: Arc<File>,
    path: PathBuf,
}

impl Ledger {
    fn open(path: &Path) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("could not open the ledger {}", path.display()))?;
        Ok(Self { file: Arc::new(file), path: path.to_owned() })
    }

    /// Appends one line in one `write(2)` (a line is far shorter than any partial-write limit).
    pub(crate) fn append(&self, line: LedgerLine<'_>) -> std::io::Result<()> {
        self.write(&line.render())
    }

    /// Appends `text`, one or more whole lines, in one `write(2)`.
    pub(crate) fn write(&self, text: &str) -> std::io::Result<()> {
        (&*self.file).write_all(text.as_bytes())
    }

    /// A handler's error for a failed write to this ledger.
    pub(crate) fn write_error(&self, e: std::io::Error) -> HandlerError {
        HandlerError::new(format!("could not write the ledger {}: {e}", self.path.display()))
    }
}

/// The worker's settings, from its command line.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The Redis to serve.
    pub redis_url: String,
    /// The queues to serve, at equal priority (at least one, here or in `sharded_queues`).
    pub queues: Vec<String>,
    /// The sharded queues to serve by logical name, at the priority of the others
    /// ([`Config::sharded_queues`]).
    pub sharded_queues: Vec<String>,
    /// Where to append the ledger.
    pub ledger: PathBuf,
    /// Tasks run at once.
    pub concurrency: usize,
    /// The longest a handler sleeps, whatever its payload says.
    pub max_sleep: Option<Duration>,
    /// [`Config::shutdown_timeout`].
    pub shutdown_timeout: Duration,
    /// [`Config::recoverer_interval`].
    pub recoverer_interval: Duration,
    /// [`Config::delayed_task_check_interval`].
    pub delayed_task_check_interval: Duration,
    /// The delay before every retry ([`Config::retry_delay`]), instead of Go's 15 s or more.
    pub retry_delay: Duration,
    /// [`RedisConfig::response_timeout`].
    pub response_timeout: Duration,
    /// When set, this long after starting, enqueue one task of [`OVERSIZED_PAYLOAD`] bytes
    /// through the broker the server uses (no client limit), and print how it ended on stdout:
    /// `oversized=refused error=...` when the broker refused it with `Error::TooLarge`,
    /// `oversized=UNEXPECTED ...` otherwise.
    pub oversized_enqueue_after: Option<Duration>,
    /// At most this many tasks of [`TASK_TYPE`] run at once across every worker
    /// ([`Config::shared_type_concurrency`]).
    pub shared_limit: Option<u32>,
}

/// The payload size of the oversized enqueue: over Redis's limit on one value (512 MiB).
pub const OVERSIZED_PAYLOAD: usize = 600 * 1024 * 1024;

/// How long a worker started while Redis is down (a replacement started during a restart)
/// tries to connect before it gives up, as a supervisor would go on restarting it.
const CONNECT_PATIENCE: Duration = Duration::from_secs(30);

/// Connects to the worker's Redis, trying again every 100 ms for up to [`CONNECT_PATIENCE`].
async fn connect(options: &WorkerOptions, target: RedisTarget) -> anyhow::Result<RedisBroker> {
    let give_up = tokio::time::Instant::now() + CONNECT_PATIENCE;
    let mut first = true;
    loop {
        let config = RedisConfig { response_timeout: options.response_timeout, ..RedisConfig::new(target.clone()) };
        match RedisBroker::connect_with(config).await {
            Ok(broker) => return Ok(broker),
            Err(e) if tokio::time::Instant::now() < give_up => {
                if std::mem::take(&mut first) {
                    eprintln!("asynq-chaos: could not connect to {} ({e}); trying again", options.redis_url);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e).with_context(|| format!("could not connect to {}", options.redis_url)),
        }
    }
}

/// Runs the worker until SIGTERM (or Ctrl-C), as [`Server::run`] does; each SIGTSTP also
/// writes `tstp` to the ledger.
pub async fn run(options: WorkerOptions) -> anyhow::Result<()> {
    if options.queues.is_empty() && options.sharded_queues.is_empty() {
        anyhow::bail!("a worker serves at least one queue or sharded queue");
    }
    let ledger = Ledger::open(&options.ledger)?;
    let target = RedisTarget::from_url(&options.redis_url).context("bad --redis-url")?;
    let broker = connect(&options, target).await?;
    let retry_delay = options.retry_delay;
    let config = Config {
        concurrency: options.concurrency,
        queues: options.queues.iter().map(|queue| (queue.clone(), 1)).collect(),
        sharded_queues: options.sharded_queues.iter().map(|queue| (queue.clone(), 1)).collect(),
        shutdown_timeout: options.shutdown_timeout,
        recoverer_interval: options.recoverer_interval,
        delayed_task_check_interval: options.delayed_task_check_interval,
        retry_delay: Arc::new(move |_, _, _| retry_delay),
        shared_type_concurrency: options.shared_limit.map(|limit| (TASK_TYPE.to_owned(), limit)).into_iter().collect(),
        ..Config::default()
    };
    if let Some(after) = options.oversized_enqueue_after {
        let queue = options.queues.first().context("the oversized enqueue needs a plain --queue")?;
        spawn_oversized_enqueue(broker.clone(), queue.clone(), after);
    }
    let server = Server::new(broker, config)?;
    spawn_tstp_marker(ledger.clone())?;
    let max_sleep = options.max_sleep;
    let handler = handler_fn(move |ctx: TaskContext, task: Task| {
        let ledger = ledger.clone();
        async move {
            match task.type_name() {
                crate::steps::TASK_TYPE => crate::steps::handle(&ledger, &ctx, &task).await,
                _ => handle(&ledger, max_sleep, &ctx, &task).await,
            }
        }
    });
    server.run(handler).await?;
    Ok(())
}

/// Enqueues one task of [`OVERSIZED_PAYLOAD`] bytes through `broker`, shared with the running
/// server, after `after`; prints the outcome (see [`WorkerOptions::oversized_enqueue_after`]).
fn spawn_oversized_enqueue(broker: RedisBroker, queue: String, after: Duration) {
    tokio::spawn(async move {
        tokio::time::sleep(after).await; // The fault's timing: while the server works.
        let client = asynq_client::Client::new(broker).with_max_payload(usize::MAX);
        let task = Task::new(TASK_TYPE, vec![b'0'; OVERSIZED_PAYLOAD]);
        let line = match client.enqueue(&task, asynq_client::TaskOptions::new().queue(queue)).await {
            Err(e @ asynq_core::Error::TooLarge { .. }) => format!("oversized=refused error={e}"),
            other => format!("oversized=UNEXPECTED {other:?}"),
        };
        println!("{line}");
    });
}

/// The handler of [`TASK_TYPE`]: ledger `start`, sleep, ledger `ran` (the tasks of
/// [`crate::steps::TASK_TYPE`] have their own, [`crate::steps`]).
async fn handle(
    ledger: &Ledger,
    max_sleep: Option<Duration>,
    ctx: &TaskContext,
    task: &Task,
) -> Result<(), HandlerError> {
    let id = ctx.task_id();
    let payload = Payload::decode(task.payload())
        .ok_or_else(|| HandlerError::skip_retry(format!("payload {:?} is not `<sleep_ms> <seq>`", task.payload())))?;
    let write_error = |e: std::io::Error| ledger.write_error(e);
    ledger.append(LedgerLine::Start(id, ctx.retry_count())).map_err(write_error)?;
    if ctx.workflow_id().is_some() {
        // In a workflow, `seq` is how many tasks this one waits for, each writing `ok`.
        let parents = ctx.parent_results().await.map_err(HandlerError::new)?;
        let succeeded = parents
            .iter()
            .filter(|p| matches!(&p.outcome, ParentOutcome::Succeeded { result: Some(r) } if r.as_ref() == b"ok"))
            .count();
        if parents.len() as u64 != payload.seq || succeeded != parents.len() {
            let what = format!("{succeeded}_of_{}_parents_succeeded,_{}_expected", parents.len(), payload.seq);
            ledger.append(LedgerLine::Broken(id, &what)).map_err(write_error)?;
        }
        ctx.result_writer().write("ok").await.map_err(HandlerError::new)?;
    }
    let mut sleep = Duration::from_millis(payload.sleep_ms);
    if let Some(max) = max_sleep {
        sleep = sleep.min(max);
    }
    if !sleep.is_zero() {
        tokio::time::sleep(sleep).await;
    }
    ledger.append(LedgerLine::Ran(id)).map_err(write_error)
}

/// Writes `tstp` to the ledger on every SIGTSTP, beside the server's own handler, which stops
/// fetching: the orchestrator reads the mark to know the signal arrived.
#[cfg(unix)]
fn spawn_tstp_marker(ledger: Ledger) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    // SIGTSTP, as asynq-server listens for it.
    let mut tstp = signal(SignalKind::from_raw(20)).context("could not listen for SIGTSTP")?;
    tokio::spawn(async move {
        while tstp.recv().await.is_some() {
            if let Err(e) = ledger.append(LedgerLine::Tstp) {
                eprintln!("asynq-chaos worker: could not write the SIGTSTP mark: {e}");
            }
        }
    });
    Ok(())
}

/// No SIGTSTP off Unix.
#[cfg(not(unix))]
fn spawn_tstp_marker(_ledger: Ledger) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips() {
        let payload = Payload { sleep_ms: 1_500, seq: 42 };
        assert_eq!(Payload::decode(&payload.encode()), Some(payload));
        assert_eq!(Payload::decode(b"1500"), None);
        assert_eq!(Payload::decode(b"x 1"), None);
    }

    #[test]
    fn ledger_lines_round_trip() {
        let lines = [
            LedgerLine::Start("a-1", 0),
            LedgerLine::Start("a-1", 3),
            LedgerLine::Ran("b-2"),
            LedgerLine::Broken("c-3", "2_of_3_parents_succeeded,_3_expected"),
            LedgerLine::Tstp,
        ];
        for line in lines {
            let text = line.render();
            assert_eq!(LedgerLine::parse(text.trim_end()), Some(line));
        }
        assert_eq!(LedgerLine::parse(""), None);
        assert_eq!(LedgerLine::parse("ran "), None);
        assert_eq!(LedgerLine::parse("start a-1"), None);
    }
}
