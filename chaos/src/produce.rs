//! The `produce` subcommand: enqueues chaos tasks and appends the ID of every task whose
//! enqueue returned `Ok` to an "acknowledged" ledger, one ID a line, written as soon as the
//! call returns.
//!
//! A failed enqueue is reported on stderr with how long the call took, and retried after a
//! short backoff while the failure is a backend error (an outage); the retry is a new task
//! with a new ID, so a call whose reply was lost leaves a task that runs without being
//! acknowledged, which the ledger tolerates. Any other error (a uniqueness lock held by such
//! a task, say) drops the task. When done, one summary line goes to stdout (see [`Summary`]).

use crate::worker::{Payload, TASK_TYPE};
use anyhow::{Context as _, bail};
use asynq_client::{Client, FlowProducer, TaskOptions};
use asynq_core::workflow::Flow;
use asynq_core::{Error, Task};
use asynq_redis::{RedisBroker, RedisConfig, RedisTarget};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long to wait before retrying a failed enqueue.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// How long a uniqueness lock lives: longer than any scenario, so it is released only when the
/// task finishes (or is deleted).
const UNIQUE_TTL: Duration = Duration::from_secs(3_600);

/// The producer's settings, from its command line.
#[derive(Debug, Clone)]
pub struct ProduceOptions {
    /// The Redis to enqueue to.
    pub redis_url: String,
    /// The queue to enqueue to.
    pub queue: String,
    /// Where to append acknowledged task IDs.
    pub acked: PathBuf,
    /// How many tasks to enqueue.
    pub count: u64,
    /// The first task's sequence number (see [`Payload`]); give concurrent producers disjoint
    /// ranges, so unique tasks of different producers do not collide.
    pub first_seq: u64,
    /// How long each handler sleeps.
    pub sleep_ms: u64,
    /// Every `n`th task is unique (`0`: none).
    pub unique_every: u64,
    /// Tasks per second, one enqueue at a time (`None`: as fast as possible, in batches).
    pub rate: Option<u32>,
    /// Tasks per batch when not paced.
    pub batch: usize,
    /// [`RedisConfig::response_timeout`].
    pub response_timeout: Duration,
    /// Give up (and fail) when one task could not be enqueued for this long.
    pub give_up_after: Duration,
    /// Each task's retry limit (`None`: the client's default).
    pub max_retry: Option<u32>,
    /// Store one workflow instead of plain tasks: `count` tasks side by side, then one that
    /// waits for them all, then a chain of this many tasks, each waiting for the one before. In
    /// a workflow, a payload's `seq` is how many tasks the task waits for.
    pub workflow_chain: Option<u64>,
    /// With `workflow_chain`: the queue of a first task, which the `count` tasks wait for, of
    /// the task that waits for them, and of every other step of the chain (the first step in
    /// `queue`), so that every task of the workflow but the first waits for a task of the other
    /// queue (`None`: every task in `queue`, and no first task).
    pub alternate_queue: Option<String>,
}

/// What a producer did, printed as its last stdout line:
/// `acknowledged=N failed_calls=N dropped=N slowest_failure_ms=N first_error=TEXT`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Tasks whose enqueue returned `Ok`.
    pub acknowledged: u64,
    /// Enqueue calls that returned an error (each retry counts).
    pub failed_calls: u64,
    /// Tasks given up after a non-backend error.
    pub dropped: u64,
    /// The longest a failed call took, in milliseconds.
    pub slowest_failure_ms: u64,
    /// The first error's text (empty if none).
    pub first_error: String,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "acknowledged={} failed_calls={} dropped={} slowest_failure_ms={} first_error={}",
            self.acknowledged, self.failed_calls, self.dropped, self.slowest_failure_ms, self.first_error
        )
    }
}

impl Summary {
    /// Parses a line written by its `Display`.
    pub fn parse(line: &str) -> Option<Self> {
        let (head, first_error) = line.split_once(" first_error=")?;
        let mut fields = head.split(' ').map(|field| field.split_once('='));
        let mut next = |name: &str| match fields.next() {
            Some(Some((key, value))) if key == name => value.parse::<u64>().ok(),
            _ => None,
        };
        Some(Self {
            acknowledged: next("acknowledged")?,
            failed_calls: next("failed_calls")?,
            dropped: next("dropped")?,
            slowest_failure_ms: next("slowest_failure_ms")?,
            first_error: first_error.to_owned(),
        })
    }
}

/// Enqueues the tasks, then prints the [`Summary`].
pub async fn run(options: ProduceOptions) -> anyhow::Result<()> {
    let target = RedisTarget::from_url(&options.redis_url).context("bad --redis-url")?;
    let broker = RedisBroker::connect_with(RedisConfig {
        response_timeout: options.response_timeout,
        ..RedisConfig::new(target)
    })
    .await
    .with_context(|| format!("could not connect to {}", options.redis_url))?;
    let mut producer = Producer {
        client: Client::new(broker.clone()),
        flows: FlowProducer::new(broker),
        acked: OpenOptions::new()
            .create(true)
            .append(true)
            .open(&options.acked)
            .with_context(|| format!("could not open {}", options.acked.display()))?,
        summary: Summary::default(),
        options,
    };
    let result = producer.produce().await;
    println!("{}", producer.summary);
    result
}

struct Producer {
    client: Client,
    flows: FlowProducer,
    acked: File,
    summary: Summary,
    options: ProduceOptions,
}

impl Producer {
    async fn produce(&mut self) -> anyhow::Result<()> {
        if let Some(chain) = self.options.workflow_chain {
            return self.store_workflow(chain).await;
        }
        let seqs = self.options.first_seq..self.options.first_seq + self.options.count;
        match self.options.rate {
            Some(rate) => {
                let mut pace = tokio::time::interval(Duration::from_secs(1) / rate.max(1));
                pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                for seq in seqs {
                    pace.tick().await;
                    self.enqueue_one(seq).await?;
                }
            }
            None => {
                let seqs: Vec<u64> = seqs.collect();
                for chunk in seqs.chunks(self.options.batch.max(1)) {
                    self.enqueue_batch(chunk).await?;
                }
            }
        }
        Ok(())
    }

    /// Stores the workflow of [`ProduceOptions::workflow_chain`] in one call.
    async fn store_workflow(&mut self, chain: u64) -> anyhow::Result<()> {
        let first = self.options.queue.clone();
        let second = self.options.alternate_queue.clone().unwrap_or_else(|| first.clone());
        let step = |waits_for: u64, queue: &String| {
            let task = Task::new(TASK_TYPE, Payload { sleep_ms: self.options.sleep_ms, seq: waits_for }.encode());
            Flow::task(task, TaskOptions::new().queue(queue.clone()))
        };
        let two_queues = self.options.alternate_queue.is_some();
        let members = (0..self.options.count).map(|_| step(u64::from(two_queues), &first));
        let chord = Flow::chord(members, step(self.options.count, &second));
        // Across two queues, the fan-out waits for a first task of the other one, so that its
        // release crosses queues too.
        let mut flow = if two_queues { step(0, &second).then(chord) } else { chord };
        for n in 0..chain {
            flow = flow.then(step(1, if n % 2 == 0 { &first } else { &second }));
        }
        let started = Instant::now();
        match self.flows.enqueue(&flow).await {
            Ok(stored) => {
                for task in &stored.tasks {
                    self.acknowledge(&task.id)?;
                }
                Ok(())
            }
            Err(e) => {
                self.failed(&e, started.elapsed());
                bail!("the workflow could not be stored: {e}")
            }
        }
    }

    fn task(&self, seq: u64) -> (Task, TaskOptions) {
        let task = Task::new(TASK_TYPE, Payload { sleep_ms: self.options.sleep_ms, seq }.encode());
        let mut options = TaskOptions::new().queue(self.options.queue.clone());
        if self.options.unique_every > 0 && seq.is_multiple_of(self.options.unique_every) {
            options = options.unique(UNIQUE_TTL);
        }
        if let Some(max_retry) = self.options.max_retry {
            options = options.max_retry(max_retry);
        }
        (task, options)
    }

    /// One batch call; the tasks it did not enqueue are retried one by one.
    async fn enqueue_batch(&mut self, seqs: &[u64]) -> anyhow::Result<()> {
        let tasks: Vec<(Task, TaskOptions)> = seqs.iter().map(|seq| self.task(*seq)).collect();
        let started = Instant::now();
        let results = self.client.enqueue_batch(&tasks).await;
        let elapsed = started.elapsed();
        for (seq, result) in seqs.iter().zip(results) {
            match result {
                Ok(info) => self.acknowledge(&info.id)?,
                Err(e) => {
                    self.failed(&e, elapsed);
                    if is_outage(&e) {
                        self.enqueue_one(*seq).await?;
                    } else {
                        self.summary.dropped += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Enqueues one task, retrying through an outage for up to `give_up_after`.
    async fn enqueue_one(&mut self, seq: u64) -> anyhow::Result<()> {
        let (task, options) = self.task(seq);
        let first_try = Instant::now();
        loop {
            let started = Instant::now();
            match self.client.enqueue(&task, options.clone()).await {
                Ok(info) => return self.acknowledge(&info.id),
                Err(e) => {
                    self.failed(&e, started.elapsed());
                    if !is_outage(&e) {
                        self.summary.dropped += 1;
                        return Ok(());
                    }
                    if first_try.elapsed() >= self.options.give_up_after {
                        bail!("task {seq} could not be enqueued for {:?}: {e}", self.options.give_up_after);
                    }
                    tokio::time::sleep(RETRY_BACKOFF).await;
                }
            }
        }
    }

    fn acknowledge(&mut self, id: &str) -> anyhow::Result<()> {
        (&self.acked).write_all(format!("{id}\n").as_bytes()).context("could not write the acknowledged ledger")?;
        self.summary.acknowledged += 1;
        Ok(())
    }

    fn failed(&mut self, error: &Error, took: Duration) {
        eprintln!("enqueue failed after {} ms: {error}", took.as_millis());
        self.summary.failed_calls += 1;
        self.summary.slowest_failure_ms = self.summary.slowest_failure_ms.max(took.as_millis() as u64);
        if self.summary.first_error.is_empty() {
            // One line, whatever the error's text holds.
            self.summary.first_error = error.to_string().replace('\n', " ");
        }
    }
}

/// Whether the error is the backend's, so trying again later may succeed.
fn is_outage(error: &Error) -> bool {
    matches!(error, Error::Broker(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_round_trips() {
        let summary = Summary {
            acknowledged: 10,
            failed_calls: 3,
            dropped: 1,
            slowest_failure_ms: 1_002,
            first_error: "broker error: timed out (transient) a=b".to_owned(),
        };
        assert_eq!(Summary::parse(&summary.to_string()), Some(summary));
        assert_eq!(Summary::parse("acknowledged=1"), None);
    }
}
