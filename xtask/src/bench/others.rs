//! Other Rust task queues as peers (`--others`): apalis 1.0 with its Redis storage and
//! rusty-sidekiq 0.15, run by `xtask/other-peers` (a Cargo project of its own, outside our
//! workspace, built with `--locked` into `target/bench/other-peers`) against the same private
//! Redis, in the same rounds as ours.
//!
//! Each queue enqueues the run's task count (apalis at most [`APALIS_MAX_TASKS`]) one at a time,
//! drains them at concurrency 10 and,
//! when our `pickup-latency-c10` runs (in the first round, as ours does), samples the pickup by
//! an idle worker as it does. Each is a process of its own, measured as the Go peer's are (Redis
//! CPU and commands, the process's CPU), and becomes a row `<queue>-<our scenario>`. Redis is
//! flushed before each queue's runs.

use std::path::{Path, PathBuf};

use anyhow::bail;

use super::peer;
use super::pin::Pinning;
use super::report::{Ratio, Row, Run};
use super::scenarios::Sizes;
use super::server::RedisServer;
use crate::cmd;

/// The concurrency the other queues' workers run with.
const CONCURRENCY: usize = 10;

/// The most tasks apalis's rows hold: apalis-redis 1.0 stores every task pushed in its scheduled
/// set, due at once, and its fetch script fails ("too many results to unpack") once more tasks
/// than Lua can unpack (about 8 000) are due together, so it cannot drain a larger backlog.
const APALIS_MAX_TASKS: u64 = 5_000;

/// Our scenario whose work `pickup` does.
const PICKUP: &str = "pickup-latency-c10";

/// The rows of apalis's runs.
pub(crate) const APALIS_ENQUEUE: &str = "apalis-enqueue";
/// See [`APALIS_ENQUEUE`].
pub(crate) const APALIS_DRAIN: &str = "apalis-drain-c10";
/// See [`APALIS_ENQUEUE`].
pub(crate) const APALIS_PICKUP: &str = "apalis-pickup-latency-c10";
/// The rows of rusty-sidekiq's runs.
pub(crate) const SIDEKIQ_ENQUEUE: &str = "sidekiq-enqueue";
/// See [`SIDEKIQ_ENQUEUE`].
pub(crate) const SIDEKIQ_DRAIN: &str = "sidekiq-drain-c10";
/// See [`SIDEKIQ_ENQUEUE`].
pub(crate) const SIDEKIQ_PICKUP: &str = "sidekiq-pickup-latency-c10";

/// One of the other queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queue {
    /// apalis 1.0 with `apalis-redis` 1.0.
    Apalis,
    /// rusty-sidekiq 0.15.
    Sidekiq,
}

impl Queue {
    /// Both, in report order.
    pub(crate) const ALL: [Queue; 2] = [Queue::Apalis, Queue::Sidekiq];

    /// Its name on `other-peers`'s command line.
    fn arg(self) -> &'static str {
        match self {
            Queue::Apalis => "apalis",
            Queue::Sidekiq => "sidekiq",
        }
    }

    /// Its name for people.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Queue::Apalis => "apalis",
            Queue::Sidekiq => "rusty-sidekiq",
        }
    }

    /// Its rows: enqueue, drain at concurrency 10, pickup by an idle worker.
    pub(crate) fn rows(self) -> [&'static str; 3] {
        match self {
            Queue::Apalis => [APALIS_ENQUEUE, APALIS_DRAIN, APALIS_PICKUP],
            Queue::Sidekiq => [SIDEKIQ_ENQUEUE, SIDEKIQ_DRAIN, SIDEKIQ_PICKUP],
        }
    }

    /// The `other-peers` arguments of each of its runs at `sizes`, with the row each becomes;
    /// with `pickup`, the pickup's too.
    fn runs(self, sizes: &Sizes, pickup: bool) -> Vec<(&'static str, Vec<String>)> {
        let [enqueue, drain, pickup_row] = self.rows();
        let tasks = match self {
            Queue::Apalis => sizes.tasks.min(APALIS_MAX_TASKS),
            Queue::Sidekiq => sizes.tasks,
        };
        let (tasks, concurrency) = (tasks.to_string(), CONCURRENCY.to_string());
        let args = |words: &[&str]| [self.arg()].iter().chain(words).map(|word| (*word).to_owned()).collect();
        let mut runs = vec![(enqueue, args(&["enqueue", &tasks])), (drain, args(&["drain", &tasks, &concurrency]))];
        if pickup {
            let (samples, max_secs) = (sizes.latency_samples.to_string(), sizes.latency_max_secs.to_string());
            runs.push((pickup_row, args(&["pickup", &samples, &max_secs, &concurrency])));
        }
        runs
    }
}

/// Our throughputs next to the other queues'.
pub(crate) fn ratios() -> Vec<Ratio> {
    let [apalis_enqueue, apalis_drain, _] = Queue::Apalis.rows();
    let [sidekiq_enqueue, sidekiq_drain, _] = Queue::Sidekiq.rows();
    let ratio = |label: &str, name: &str, ours, peer| Ratio { label: format!("{label}, ours / {name}'s"), ours, peer };
    vec![
        ratio("enqueue one at a time", "apalis", "enqueue", apalis_enqueue),
        ratio("enqueue one at a time", "rusty-sidekiq", "enqueue", sidekiq_enqueue),
        ratio("processing at concurrency 10", "apalis", "drain-c10", apalis_drain),
        ratio("processing at concurrency 10", "rusty-sidekiq", "drain-c10", sidekiq_drain),
    ]
}

/// The built `other-peers`.
#[derive(Debug)]
pub(crate) struct Others {
    binary: PathBuf,
}

impl Others {
    /// Its binary's name.
    pub(crate) const BINARY: &str = "other-peers";

    /// The peers built already, as `dir/`[`Others::BINARY`] (`--bin-dir`, a bench bundle).
    ///
    /// Errors: no such file.
    pub(crate) fn prebuilt(dir: &Path) -> anyhow::Result<Self> {
        Ok(Self { binary: peer::prebuilt_binary(dir, Self::BINARY, "--others")? })
    }

    /// Its binary.
    pub(crate) fn binary(&self) -> &Path {
        &self.binary
    }

    /// Builds `xtask/other-peers` in release mode, with its own lock file, under `target_dir`.
    pub(crate) fn build(target_dir: PathBuf) -> anyhow::Result<Self> {
        let manifest = crate::workspace_root().join("xtask/other-peers/Cargo.toml");
        if !manifest.is_file() {
            bail!("--others needs the project at {}, which is missing", manifest.display());
        }
        let mut build = cmd::cargo_command(["build", "--release", "--locked", "--manifest-path"]);
        build.arg(&manifest).arg("--target-dir").arg(&target_dir);
        cmd::run(&mut build)?;
        Ok(Self { binary: target_dir.join("release").join(Self::BINARY) })
    }

    /// One round of both queues against `redis` at `sizes`, each on a flushed Redis; with
    /// `pickup`, their pickups too.
    pub(crate) fn run(
        &self,
        redis: &mut RedisServer,
        pinning: Pinning,
        sizes: &Sizes,
        pickup: bool,
    ) -> anyhow::Result<Vec<Row>> {
        let mut rows = Vec::new();
        for queue in Queue::ALL {
            redis.reset()?;
            for (row, args) in queue.runs(sizes, pickup) {
                let (result, cost) = peer::invoke(&self.binary, redis, pinning, &args)?;
                rows.push(row_of(row, result.run(), cost));
            }
        }
        Ok(rows)
    }
}

/// The row `name` of a run, with what Redis and the process spent.
fn row_of(name: &str, run: Run, cost: peer::Cost) -> Row {
    let run = Run { redis: Some(cost.usage), window_s: cost.window_s, client_cpu_s: cost.client_cpu_s, ..run };
    Row::from_run(name, &run)
}

/// Whether `scenario` is our pickup scenario, which the other queues' pickups run beside.
pub(crate) fn is_pickup(scenario: &str) -> bool {
    scenario == PICKUP
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::peer::ResultLine;
    use super::super::stats::Usage;
    use super::*;

    fn sizes() -> Sizes {
        Sizes { tasks: 2_000, latency_samples: 200, latency_max_secs: 5, idle_window: Duration::from_secs(1) }
    }

    #[test]
    fn each_queue_runs_our_sizes_and_names_rows_after_our_scenarios() {
        let ours: Vec<&str> = super::super::scenarios::all(&sizes()).iter().map(|scenario| scenario.name).collect();
        for queue in Queue::ALL {
            let runs = queue.runs(&sizes(), true);
            let lines: Vec<(&str, String)> = runs.iter().map(|(row, args)| (*row, args.join(" "))).collect();
            let arg = queue.arg();
            let prefix = format!("{}-", arg);
            assert_eq!(
                lines,
                [
                    (queue.rows()[0], format!("{arg} enqueue 2000")),
                    (queue.rows()[1], format!("{arg} drain 2000 10")),
                    (queue.rows()[2], format!("{arg} pickup 200 5 10")),
                ]
            );
            for (row, _) in &runs {
                let scenario = row.strip_prefix(&prefix).expect("each row starts with the queue's name");
                assert!(ours.contains(&scenario), "{row} is not named after one of our scenarios");
            }
            assert_eq!(queue.runs(&sizes(), false).len(), 2, "no pickup unless ours runs");
        }
        let large = Sizes { tasks: 20_000, ..sizes() };
        let apalis: Vec<String> = Queue::Apalis.runs(&large, false).into_iter().map(|(_, a)| a.join(" ")).collect();
        assert_eq!(apalis, ["apalis enqueue 5000", "apalis drain 5000 10"], "apalis cannot drain more");
        assert_eq!(Queue::Sidekiq.runs(&large, false)[1].1.join(" "), "sidekiq drain 20000 10");
        assert!(is_pickup(PICKUP) && ours.contains(&PICKUP) && !is_pickup("enqueue"));
    }

    #[test]
    fn ratios_set_our_scenarios_beside_the_other_queues_rows() {
        let ours: Vec<&str> = super::super::scenarios::all(&sizes()).iter().map(|scenario| scenario.name).collect();
        let ratios = ratios();
        let labels: Vec<&str> = ratios.iter().map(|ratio| ratio.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "enqueue one at a time, ours / apalis's",
                "enqueue one at a time, ours / rusty-sidekiq's",
                "processing at concurrency 10, ours / apalis's",
                "processing at concurrency 10, ours / rusty-sidekiq's",
            ]
        );
        for ratio in &ratios {
            assert!(ours.contains(&ratio.ours), "{} is not a scenario", ratio.ours);
            assert!(Queue::ALL.iter().any(|queue| queue.rows().contains(&ratio.peer)), "{} is no row", ratio.peer);
        }
    }

    #[test]
    fn a_runs_line_and_cost_make_its_row() {
        let cost = |calls: u64, cpu_s: f64| peer::Cost {
            usage: Usage { cpu_s, calls: [("evalsha".to_owned(), calls)].into(), ..Usage::default() },
            window_s: 2.0,
            client_cpu_s: Some(0.5),
        };
        let line = |text: &str| ResultLine::find(&format!("RESULT {text}\n")).unwrap().run();
        let enqueue = row_of(APALIS_ENQUEUE, line("n=2000 enqueue_s=0.353 enqueue_tps=5661"), cost(2_000, 0.04));
        assert_eq!((enqueue.tasks, enqueue.tasks_per_s, enqueue.concurrency), (2_000, Some(5_661.0), None));
        assert_eq!(enqueue.redis_cmds_per_task, Some(1.0));
        assert_eq!(enqueue.redis_cpu_us_per_task, Some(20.0));
        assert_eq!(enqueue.client_cpu_s, Some(0.5));
        let drain = row_of(
            SIDEKIQ_DRAIN,
            line("n=2000 conc=10 processed=2000 process_s=0.318 process_tps=6282 handler_calls=2000"),
            cost(8_000, 0.1),
        );
        assert_eq!((drain.tasks, drain.tasks_per_s, drain.concurrency), (2_000, Some(6_282.0), Some(10)));
        assert_eq!(drain.redis_cmds_per_task, Some(4.0));
        let pickup = row_of(SIDEKIQ_PICKUP, line("n=200 conc=10 samples=200 p50=0.782 p99=3.888"), cost(400, 0.01));
        assert_eq!((pickup.tasks, pickup.pickup_p50_ms, pickup.pickup_p99_ms), (200, Some(0.782), Some(3.888)));
        assert_eq!(pickup.tasks_per_s, None);
    }
}
