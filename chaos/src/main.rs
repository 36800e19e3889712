//! `asynq-chaos`: the chaos suite's one binary.
//!
//! ```text
//! asynq-chaos run --profile full [--scenario kill-worker]   # the orchestrator
//! asynq-chaos worker --redis-url URL --ledger FILE ...       # a worker process under test
//! asynq-chaos produce --redis-url URL --acked FILE ...       # a producer process under test
//! ```
//!
//! `run` starts its own redis-server for each scenario and runs this same binary as the
//! workers and producers; it prints one ledger line per scenario and fails if any scenario
//! lost a task, left an orphaned active task or a stale uniqueness lock, or failed a check.

use anyhow::{Context as _, bail};
use asynq_chaos::produce::{self, ProduceOptions};
use asynq_chaos::worker::{self, WorkerOptions};
use asynq_chaos::{Profile, Scenario};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Chaos tests of asynq over Redis.
#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run scenarios, each against a private redis-server, and print their ledgers.
    Run {
        /// `quick` (CI sizes) or `full` (the issue's sizes).
        #[arg(long, default_value = "full")]
        profile: String,
        /// One scenario (kill-worker, restart-redis, redis-unreachable, sigterm, many-workers,
        /// sentinel-failover, cluster-failover, redis-frozen, restart-redis-repeatedly,
        /// kill-prefetching-worker, oversized-enqueue, kill-worker-holding-slots,
        /// kill-workers-during-workflow, kill-workers-during-cross-queue-workflow,
        /// kill-workers-during-sharded-drain, durable-steps) or `all`.
        #[arg(long, default_value = "all")]
        scenario: String,
    },
    /// Serve the queues until SIGTERM, writing every task run to a ledger.
    Worker {
        #[arg(long)]
        redis_url: String,
        /// A queue to serve (repeat for more, served at equal priority).
        #[arg(long = "queue", required_unless_present = "sharded_queues")]
        queues: Vec<String>,
        /// A sharded queue to serve by its logical name, every shard its declaration names
        /// (repeat for more; `Config::sharded_queues`).
        #[arg(long = "sharded-queue")]
        sharded_queues: Vec<String>,
        /// The ledger file, appended to.
        #[arg(long)]
        ledger: PathBuf,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// Cap on the handler's sleep, whatever the payload says.
        #[arg(long)]
        max_sleep_ms: Option<u64>,
        #[arg(long, default_value_t = 8_000)]
        shutdown_timeout_ms: u64,
        #[arg(long, default_value_t = 60_000)]
        recoverer_interval_ms: u64,
        #[arg(long, default_value_t = 5_000)]
        delayed_task_check_interval_ms: u64,
        /// The delay before every retry.
        #[arg(long, default_value_t = 1_000)]
        retry_delay_ms: u64,
        #[arg(long, default_value_t = 5_000)]
        response_timeout_ms: u64,
        /// Enqueue one 600 MiB task through the server's own broker this long after starting.
        #[arg(long)]
        oversized_enqueue_after_ms: Option<u64>,
        /// At most this many chaos tasks run at once across every worker (a shared limit).
        #[arg(long)]
        shared_limit: Option<u32>,
    },
    /// Enqueue tasks, appending each acknowledged ID to a file.
    Produce {
        #[arg(long)]
        redis_url: String,
        #[arg(long)]
        queue: String,
        /// The acknowledged ledger, appended to.
        #[arg(long)]
        acked: PathBuf,
        #[arg(long)]
        count: u64,
        /// The first task's sequence number.
        #[arg(long, default_value_t = 0)]
        first_seq: u64,
        /// How long each task's handler sleeps.
        #[arg(long, default_value_t = 0)]
        sleep_ms: u64,
        /// Every Nth task is unique (0: none).
        #[arg(long, default_value_t = 0)]
        unique_every: u64,
        /// Tasks per second, one enqueue at a time (default: as fast as possible, in batches).
        #[arg(long)]
        rate: Option<u32>,
        /// Tasks per batch when not paced.
        #[arg(long, default_value_t = 100)]
        batch: usize,
        #[arg(long, default_value_t = 5_000)]
        response_timeout_ms: u64,
        /// Fail when one task cannot be enqueued for this long.
        #[arg(long, default_value_t = 120)]
        give_up_secs: u64,
        /// Each task's retry limit (default: the client's, 25).
        #[arg(long)]
        max_retry: Option<u32>,
        /// Store one workflow instead: `--count` tasks side by side, one that waits for them
        /// all, then a chain of this many.
        #[arg(long)]
        workflow_chain: Option<u64>,
        /// With `--workflow-chain`: a first task in this queue, which the `--count` tasks wait
        /// for; the task that waits for them and every other step of the chain go to this queue
        /// too, so that each task waits for a task of the other queue.
        #[arg(long, requires = "workflow_chain")]
        alternate_queue: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run { profile, scenario } => run(&profile, &scenario),
        Cmd::Worker {
            redis_url,
            queues,
            sharded_queues,
            ledger,
            concurrency,
            max_sleep_ms,
            shutdown_timeout_ms,
            recoverer_interval_ms,
            delayed_task_check_interval_ms,
            retry_delay_ms,
            response_timeout_ms,
            oversized_enqueue_after_ms,
            shared_limit,
        } => block_on(worker::run(WorkerOptions {
            redis_url,
            queues,
            sharded_queues,
            ledger,
            concurrency,
            max_sleep: max_sleep_ms.map(Duration::from_millis),
            shutdown_timeout: Duration::from_millis(shutdown_timeout_ms),
            recoverer_interval: Duration::from_millis(recoverer_interval_ms),
            delayed_task_check_interval: Duration::from_millis(delayed_task_check_interval_ms),
            retry_delay: Duration::from_millis(retry_delay_ms),
            response_timeout: Duration::from_millis(response_timeout_ms),
            oversized_enqueue_after: oversized_enqueue_after_ms.map(Duration::from_millis),
            shared_limit,
        })),
        Cmd::Produce {
            redis_url,
            queue,
            acked,
            count,
            first_seq,
            sleep_ms,
            unique_every,
            rate,
            batch,
            response_timeout_ms,
            give_up_secs,
            max_retry,
            workflow_chain,
            alternate_queue,
        } => block_on(produce::run(ProduceOptions {
            redis_url,
            queue,
            acked,
            count,
            first_seq,
            sleep_ms,
            unique_every,
            rate,
            batch,
            response_timeout: Duration::from_millis(response_timeout_ms),
            give_up_after: Duration::from_secs(give_up_secs),
            max_retry,
            workflow_chain,
            alternate_queue,
        })),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("asynq-chaos: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a worker or producer on a multi-threaded runtime, logging warnings (or `RUST_LOG`)
/// to stderr.
fn block_on(future: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(future)
}

/// The orchestrator: runs the scenarios with this very binary as workers and producers.
fn run(profile: &str, scenario: &str) -> anyhow::Result<()> {
    let profile = Profile::parse(profile).with_context(|| format!("unknown profile {profile:?} (quick, full)"))?;
    let scenarios: Vec<Scenario> = match scenario {
        "all" => Scenario::ALL.to_vec(),
        name => vec![Scenario::parse(name).with_context(|| format!("unknown scenario {name:?}"))?],
    };
    let bin = std::env::current_exe().context("could not find this binary")?;
    let mut failed = Vec::new();
    let mut ledgers = Vec::new();
    for scenario in scenarios {
        eprintln!("asynq-chaos: running {} ({} profile)", scenario.name(), profile.name());
        let report = scenario.run(profile, &bin)?;
        println!("{}", report.details());
        if !report.passed() {
            failed.push(scenario.name());
        }
        ledgers.push(report.to_string());
    }
    println!("\nledgers:\n{}", ledgers.join("\n"));
    if !failed.is_empty() {
        bail!("failed: {}", failed.join(", "));
    }
    Ok(())
}
