//! `sharded-drain`, the masters axis: one logical queue drained on Redis Clusters of N masters
//! (`--masters`, 1 and 2 by default), each N a row `sharded-drain-<N>-masters`.
//!
//! Per N, a Cluster of its own on loopback, started before the first round and kept to the end;
//! per run, on flushed masters: `asynq-bench sharded-fill` (not measured) declares the queue with
//! [`SHARDS_PER_MASTER`] shards per master (the broker salts their names so their slots spread
//! over the masters) and enqueues `--tasks` tasks per master in batches; then `--workers-per-master`
//! × N `asynq-bench sharded-drain` processes at concurrency [`CONCURRENCY`] drain it, measured:
//! Redis CPU and commands summed over the masters, the longest command of any. The run fails
//! unless the processes' handlers ran as many tasks as were enqueued and `asynq-bench
//! sharded-check` then finds the queue empty, every task processed once, none failed.
//! Each N holds as many tasks per master, so a drain lasts about as long at every N if it scales.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::cluster::Cluster;
use super::pin::Pinning;
use super::report::{Row, Run};
use super::scenarios::{Launcher, combine, strings};
use super::stats;

/// The scenario's name; its rows add the masters: `sharded-drain-2-masters`.
pub(crate) const NAME: &str = "sharded-drain";
/// The masters axis when `--masters` is not given: what a 2-core machine can run.
pub(crate) const DEFAULT_MASTERS: [usize; 2] = [1, 2];
/// The most masters a point of the axis may have: the queue's shards stay within the broker's
/// limit of 64.
pub(crate) const MAX_MASTERS: usize = asynq_core::shard::MAX_SHARDS / SHARDS_PER_MASTER;
/// Shards of the logical queue per master.
pub(crate) const SHARDS_PER_MASTER: usize = 2;
/// Each drain process's concurrency.
pub(crate) const CONCURRENCY: usize = 100;

/// The row of the axis point with `masters` masters.
pub(crate) fn row_name(masters: usize) -> String {
    format!("{NAME}-{masters}-master{}", if masters == 1 { "" } else { "s" })
}

/// The masters of a row named by [`row_name`].
pub(crate) fn masters_of(row: &str) -> Option<usize> {
    let rest = row.strip_prefix(NAME)?.strip_prefix('-')?;
    let masters = rest.strip_suffix("-masters").or_else(|| rest.strip_suffix("-master"))?;
    masters.parse().ok().filter(|masters| row_name(*masters) == row)
}

/// Parses `--masters`: comma-separated counts, each 1 to [`MAX_MASTERS`], sorted, no repeats.
pub(crate) fn parse_masters(value: &str) -> anyhow::Result<Vec<usize>> {
    let mut masters = value
        .split(',')
        .map(|count| {
            count
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|count| (1..=MAX_MASTERS).contains(count))
                .with_context(|| format!("--masters takes counts of 1 to {MAX_MASTERS} masters, got {count:?}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    masters.sort_unstable();
    masters.dedup();
    Ok(masters)
}

/// The axis: a Cluster per point, and how each run goes.
#[derive(Debug)]
pub(crate) struct Axis {
    clusters: Vec<Cluster>,
    binary: PathBuf,
    tasks_per_master: u64,
    workers_per_master: usize,
}

impl Axis {
    /// Starts a Cluster of `redis_server` for each count of `masters`, to run the `asynq-bench`
    /// at `binary` against.
    pub(crate) fn start(
        redis_server: &Path,
        binary: PathBuf,
        masters: &[usize],
        tasks_per_master: u64,
        workers_per_master: usize,
    ) -> anyhow::Result<Self> {
        let clusters = masters
            .iter()
            .map(|&n| Cluster::start(redis_server, n).with_context(|| format!("starting a {n}-master Redis Cluster")))
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { clusters, binary, tasks_per_master, workers_per_master })
    }

    /// One run of every point of the axis, fewest masters first.
    pub(crate) fn run_round(&mut self) -> anyhow::Result<Vec<Row>> {
        let mut rows = Vec::with_capacity(self.clusters.len());
        for cluster in &mut self.clusters {
            let name = row_name(cluster.masters());
            let tasks = self.tasks_per_master * cluster.masters() as u64;
            let run = run_once(cluster, &self.binary, tasks, self.workers_per_master)
                .with_context(|| format!("scenario {name} failed"))?;
            rows.push(Row::from_run(&name, &run));
        }
        Ok(rows)
    }
}

/// One run on `cluster`: fill, measured drain, check.
fn run_once(cluster: &mut Cluster, binary: &Path, tasks: u64, workers_per_master: usize) -> anyhow::Result<Run> {
    cluster.reset()?;
    let masters = cluster.masters();
    let launcher = Launcher::new(binary.to_path_buf(), Pinning::new(false), cluster.url());
    let (tasks_arg, shards) = (tasks.to_string(), (masters * SHARDS_PER_MASTER).to_string());
    launcher
        .spawn(&[strings(&["sharded-fill", "--tasks", &tasks_arg, "--shards", &shards, "--producers", &shards])])?
        .wait()?;
    let drain = strings(&["sharded-drain", "--tasks", &tasks_arg, "--concurrency", &CONCURRENCY.to_string()]);
    let drains = vec![drain; masters * workers_per_master];
    let (measurements, usage, window_s) = stats::measure_all(cluster.nodes_mut(), || launcher.spawn(&drains)?.wait())?;
    let handled: u64 = measurements.iter().filter_map(|m| m.handled).sum();
    if handled != tasks {
        bail!("the drain's handlers ran {handled} tasks, but {tasks} were enqueued");
    }
    launcher.spawn(&[strings(&["sharded-check", "--tasks", &tasks_arg])])?.wait()?;
    combine(&measurements, usage, window_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_named_by_their_masters() {
        assert_eq!(row_name(1), "sharded-drain-1-master");
        assert_eq!(row_name(8), "sharded-drain-8-masters");
        for n in [1, 2, 4, 8, 32] {
            assert_eq!(masters_of(&row_name(n)), Some(n));
        }
        assert_eq!(masters_of("sharded-drain-2-master"), None);
        assert_eq!(masters_of("drain-c100"), None);
        assert_eq!(masters_of("sharded-drain-x-masters"), None);
    }

    #[test]
    fn masters_parse_sorted_without_repeats_within_the_shard_limit() {
        assert_eq!(parse_masters("8,1,4,2,4").unwrap(), [1, 2, 4, 8]);
        assert_eq!(parse_masters(" 3 ").unwrap(), [3]);
        assert_eq!(parse_masters("32").unwrap(), [MAX_MASTERS]);
        for bad in ["0", "33", "two", "1,,2", ""] {
            assert!(parse_masters(bad).is_err(), "{bad:?}");
        }
    }
}
