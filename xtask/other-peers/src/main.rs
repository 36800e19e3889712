//! `other-peers` measures two other Rust task queues on a private Redis, so that
//! `cargo xtask bench --others` can set their figures beside ours, in the same run, on the same
//! Redis: apalis 1.0 with its Redis storage (`apalis-redis`) and rusty-sidekiq 0.15.
//!
//! ```text
//! other-peers apalis|sidekiq enqueue <N>
//! other-peers apalis|sidekiq drain <N> <concurrency>
//! other-peers apalis|sidekiq pickup <samples> <max seconds> <concurrency>
//! ```
//!
//! Each reads the Redis URL from `REDIS_URL` and prints one line, as the Go peer does:
//!
//! - `enqueue` flushes Redis, then pushes N tasks of a 40-byte JSON payload one at a time, each
//!   awaited before the next: `RESULT n=.. enqueue_s=.. enqueue_tps=..`.
//! - `drain` connects a worker at that concurrency on the queue an `enqueue` of the same queue
//!   left, with a no-op handler, and times from its start until N handlers have run:
//!   `RESULT n=.. conc=.. processed=.. process_s=.. process_tps=.. handler_calls=..`.
//! - `pickup` flushes Redis and starts an idle worker at that concurrency; then, until it has that
//!   many samples or that many seconds have passed, it waits 5 ms, pushes one task and times from
//!   just before the push to the start of its handler: `RESULT n=.. conc=.. samples=.. p50=..
//!   p99=..` (milliseconds, nearest rank), as our `pickup-latency` scenario and the Go peer do.
//!
//! The process exits as soon as it has printed its line: the workers' shutdown is not timed.

mod apalis_peer;
mod sidekiq_peer;

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, mpsc};

/// What the peers' functions fail with.
pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;

/// A started worker, which runs while it is polled and ends only with an error.
pub(crate) type WorkerRun = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Error>>>>;

/// The queue both peers use (a name without `:`, which apalis's pub/sub channels split on).
pub(crate) const QUEUE: &str = "default";

/// How long a sample of `pickup` waits before its push, so that the worker is idle again.
const PICKUP_GAP: Duration = Duration::from_millis(5);

/// How long `pickup` waits for one handler to start, and `drain` for any progress, before giving
/// up: beyond apalis's 30 s heartbeat, which wakes an idle apalis worker that missed a push.
const STALL_TIMEOUT: Duration = Duration::from_secs(65);

const USAGE: &str = "usage: other-peers apalis|sidekiq enqueue <N> | drain <N> <concurrency> | \
                     pickup <samples> <max seconds> <concurrency>";

/// The task's arguments: serialised as JSON, the same 40 bytes as the other peers' payload,
/// `{"user_id":1234567,"action":"noop-bnch"}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Payload {
    user_id: u64,
    action: String,
}

impl Payload {
    /// The benchmark's payload.
    pub(crate) fn new() -> Self {
        Self { user_id: 1_234_567, action: "noop-bnch".to_owned() }
    }
}

/// Which queue a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Apalis,
    Sidekiq,
}

/// What a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    Enqueue { tasks: u64 },
    Drain { tasks: u64, concurrency: usize },
    Pickup { samples: u64, max: Duration, concurrency: usize },
}

/// What the handlers report: how many have run, and with `started`, when each started.
#[derive(Debug)]
pub(crate) struct Probe {
    ran: AtomicU64,
    progress: Notify,
    started: Option<mpsc::UnboundedSender<Instant>>,
}

impl Probe {
    fn new(started: Option<mpsc::UnboundedSender<Instant>>) -> Arc<Self> {
        Arc::new(Self { ran: AtomicU64::new(0), progress: Notify::new(), started })
    }

    /// Called by a handler as it starts: its whole (no-op) work.
    pub(crate) fn ran(&self) {
        if let Some(started) = &self.started {
            // The receiver outlives the worker until the process exits.
            let _ = started.send(Instant::now());
        }
        self.ran.fetch_add(1, Ordering::Relaxed);
        self.progress.notify_one();
    }

    /// Waits until `tasks` handlers have run; fails if none ran for [`STALL_TIMEOUT`].
    async fn wait_for(&self, tasks: u64) -> Result<u64, Error> {
        loop {
            let ran = self.ran.load(Ordering::Relaxed);
            if ran >= tasks {
                return Ok(ran);
            }
            if tokio::time::timeout(STALL_TIMEOUT, self.progress.notified()).await.is_err()
                && self.ran.load(Ordering::Relaxed) == ran
            {
                return Err(format!("only {ran} of {tasks} tasks ran, and none for {STALL_TIMEOUT:?}").into());
            }
        }
    }
}

/// A peer's client, pushing one task at a time.
enum Producer {
    Apalis(Box<apalis_peer::Producer>),
    Sidekiq(sidekiq_peer::Producer),
}

impl Producer {
    async fn connect(peer: Peer, url: &str) -> Result<Self, Error> {
        Ok(match peer {
            Peer::Apalis => Producer::Apalis(Box::new(apalis_peer::Producer::connect(url).await?)),
            Peer::Sidekiq => Producer::Sidekiq(sidekiq_peer::Producer::connect(url).await?),
        })
    }

    async fn push(&mut self) -> Result<(), Error> {
        match self {
            Producer::Apalis(producer) => producer.push().await,
            Producer::Sidekiq(producer) => producer.push().await,
        }
    }
}

/// Starts the peer's worker at `concurrency` on [`QUEUE`], its handler reporting to `probe`.
async fn start_worker(peer: Peer, url: &str, concurrency: usize, probe: Arc<Probe>) -> Result<WorkerRun, Error> {
    match peer {
        Peer::Apalis => apalis_peer::start_worker(url, concurrency, probe).await,
        Peer::Sidekiq => sidekiq_peer::start_worker(url, concurrency, probe).await,
    }
}

/// Runs `work` while `worker` runs; fails if the worker stops first.
async fn beside<T>(worker: WorkerRun, work: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
    tokio::select! {
        result = work => result,
        stopped = worker => Err(stopped.err().unwrap_or_else(|| "the worker stopped".into())),
    }
}

/// Reads the command line (without the program's name).
fn parse(args: &[String]) -> Result<(Peer, Work), String> {
    let peer = match args.first().map(String::as_str) {
        Some("apalis") => Peer::Apalis,
        Some("sidekiq") => Peer::Sidekiq,
        _ => return Err(USAGE.to_owned()),
    };
    let number = |i: usize| -> Result<u64, String> {
        let arg = args.get(i).ok_or_else(|| USAGE.to_owned())?;
        match arg.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("argument {i}: want a positive number, got {arg:?}")),
        }
    };
    let arity = |count: usize| if args.len() == count { Ok(()) } else { Err(USAGE.to_owned()) };
    let work = match args.get(1).map(String::as_str) {
        Some("enqueue") => {
            arity(3)?;
            Work::Enqueue { tasks: number(2)? }
        }
        Some("drain") => {
            arity(4)?;
            Work::Drain { tasks: number(2)?, concurrency: number(3)? as usize }
        }
        Some("pickup") => {
            arity(5)?;
            Work::Pickup { samples: number(2)?, max: Duration::from_secs(number(3)?), concurrency: number(4)? as usize }
        }
        _ => return Err(USAGE.to_owned()),
    };
    Ok((peer, work))
}

/// The `p`-th percentile (0 < p <= 100) of `sorted` by the nearest-rank method, as the other
/// peers and our scenarios compute it; `None` when empty.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Empties the Redis at `url`.
async fn flush(url: &str) -> Result<(), Error> {
    let mut conn = redis::Client::open(url)?.get_multiplexed_async_connection().await?;
    let () = redis::cmd("FLUSHALL").query_async(&mut conn).await?;
    Ok(())
}

/// Runs `work` against the Redis at `url`: the fields of its `RESULT` line after `n=`.
async fn run(peer: Peer, work: Work, url: &str) -> Result<Vec<String>, Error> {
    match work {
        Work::Enqueue { tasks } => {
            flush(url).await?;
            let mut producer = Producer::connect(peer, url).await?;
            let start = Instant::now();
            for _ in 0..tasks {
                producer.push().await?;
            }
            let seconds = start.elapsed().as_secs_f64();
            Ok(vec![format!("enqueue_s={seconds:.3}"), format!("enqueue_tps={:.0}", tasks as f64 / seconds)])
        }
        Work::Drain { tasks, concurrency } => {
            let probe = Probe::new(None);
            // Connected but not yet running: it starts when `beside` first polls it.
            let worker = start_worker(peer, url, concurrency, probe.clone()).await?;
            let start = Instant::now();
            let ran = beside(worker, probe.wait_for(tasks)).await?;
            let seconds = start.elapsed().as_secs_f64();
            Ok(vec![
                format!("conc={concurrency}"),
                format!("processed={tasks}"),
                format!("process_s={seconds:.3}"),
                format!("process_tps={:.0}", tasks as f64 / seconds),
                format!("handler_calls={ran}"),
            ])
        }
        Work::Pickup { samples, max, concurrency } => {
            flush(url).await?;
            let (started_tx, mut started) = mpsc::unbounded_channel();
            let worker = start_worker(peer, url, concurrency, Probe::new(Some(started_tx))).await?;
            let mut producer = Producer::connect(peer, url).await?;
            let sampling = async {
                let mut latencies_ms = Vec::new();
                let begin = Instant::now();
                while (latencies_ms.len() as u64) < samples && begin.elapsed() < max {
                    tokio::time::sleep(PICKUP_GAP).await;
                    let enqueued = Instant::now();
                    producer.push().await?;
                    let at = tokio::time::timeout(STALL_TIMEOUT, started.recv())
                        .await
                        .map_err(|_| format!("no handler started within {STALL_TIMEOUT:?} of a push"))?
                        .ok_or("the worker stopped")?;
                    latencies_ms.push(at.saturating_duration_since(enqueued).as_secs_f64() * 1e3);
                }
                Ok::<_, Error>(latencies_ms)
            };
            let mut latencies_ms = beside(worker, sampling).await?;
            latencies_ms.sort_by(f64::total_cmp);
            let mut fields = vec![format!("conc={concurrency}"), format!("samples={}", latencies_ms.len())];
            for (name, p) in [("p50", 50.0), ("p99", 99.0)] {
                if let Some(ms) = percentile(&latencies_ms, p) {
                    fields.push(format!("{name}={ms:.3}"));
                }
            }
            Ok(fields)
        }
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (peer, work) = parse(&args).unwrap_or_else(|message| {
        eprintln!("{message}");
        std::process::exit(2);
    });
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6391/".to_owned());
    let n = match work {
        Work::Enqueue { tasks } | Work::Drain { tasks, .. } => tasks,
        Work::Pickup { samples, .. } => samples,
    };
    match run(peer, work, &url).await {
        Ok(fields) => {
            println!("RESULT n={n} {}", fields.join(" "));
            let _ = std::io::stdout().flush();
            // The measurement is over; do not time the workers' shutdown.
            std::process::exit(0);
        }
        Err(error) => {
            eprintln!("other-peers {}: {error}", args.join(" "));
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn reads_each_command() {
        assert_eq!(parse(&args("apalis enqueue 10")), Ok((Peer::Apalis, Work::Enqueue { tasks: 10 })));
        assert_eq!(parse(&args("sidekiq drain 10 4")), Ok((Peer::Sidekiq, Work::Drain { tasks: 10, concurrency: 4 })));
        assert_eq!(
            parse(&args("sidekiq pickup 300 7 10")),
            Ok((Peer::Sidekiq, Work::Pickup { samples: 300, max: Duration::from_secs(7), concurrency: 10 }))
        );
        for bad in ["", "faktory enqueue 1", "apalis enqueue 0", "apalis enqueue x", "apalis drain 1", "apalis idle 1"]
        {
            assert!(parse(&args(bad)).is_err(), "{bad:?} is refused");
        }
    }

    #[test]
    fn the_payload_is_the_other_peers_40_bytes() {
        let json = serde_json::to_string(&Payload::new()).unwrap();
        assert_eq!(json, r#"{"user_id":1234567,"action":"noop-bnch"}"#);
        assert_eq!(json.len(), 40);
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&sorted, 50.0), Some(50.0));
        assert_eq!(percentile(&sorted, 99.0), Some(99.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
