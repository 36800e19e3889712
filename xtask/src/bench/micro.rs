//! The criterion micro-benchmarks (`bench/benches/micro.rs`): runs them and reads back each
//! benchmark's median from the files criterion writes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context as _;

use crate::{cmd, step};

/// One micro-benchmark's result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MicroResult {
    /// Criterion's ID, `group/function`.
    pub(crate) name: String,
    /// Median time of one iteration, in nanoseconds.
    pub(crate) median_ns: f64,
}

/// Runs the micro-benchmarks (criterion's `--quick` mode when `quick`), keeping criterion's
/// files under `criterion_home`, and returns the results of this run, sorted by name.
pub(crate) fn run(quick: bool, criterion_home: &Path) -> anyhow::Result<Vec<MicroResult>> {
    let started = SystemTime::now();
    let mut bench = cmd::cargo_command(["bench", "-p", "asynq-bench", "--bench", "micro", "--"]);
    if quick {
        bench.arg("--quick");
    }
    bench.env("CRITERION_HOME", criterion_home);
    cmd::run(&mut bench)?;
    let mut results = Vec::new();
    for dir in result_dirs(criterion_home)? {
        // Results of benchmarks that no longer exist stay on disk; keep only this run's.
        let estimates = dir.join("estimates.json");
        let fresh = estimates.metadata().and_then(|meta| meta.modified()).is_ok_and(|modified| modified >= started);
        if fresh {
            results.push(read_result(&dir)?);
        }
    }
    results.sort_by(|a, b| a.name.cmp(&b.name));
    step(format_args!("{} micro-benchmarks measured", results.len()));
    Ok(results)
}

/// Every `new/` directory under `root`: criterion keeps each benchmark's latest results there.
fn result_dirs(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            if !path.is_dir() {
                continue;
            }
            if path.file_name().is_some_and(|name| name == "new") {
                found.push(path);
            } else {
                pending.push(path);
            }
        }
    }
    Ok(found)
}

/// Reads the benchmark's ID (`benchmark.json`) and median (`estimates.json`) from a `new/`
/// directory.
fn read_result(dir: &Path) -> anyhow::Result<MicroResult> {
    let read = |name: &str| -> anyhow::Result<serde_json::Value> {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
    };
    let benchmark = read("benchmark.json")?;
    let estimates = read("estimates.json")?;
    let name = benchmark["full_id"].as_str().context("benchmark.json has no full_id")?.to_owned();
    let median_ns = estimates["median"]["point_estimate"].as_f64().context("estimates.json has no median")?;
    Ok(MicroResult { name, median_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_criterion_result_files() {
        let root = std::env::temp_dir().join(format!("xtask-micro-test-{}", std::process::id()));
        let new = root.join("keys/task_key/new");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(new.join("benchmark.json"), r#"{"group_id":"keys","full_id":"keys/task_key"}"#).unwrap();
        std::fs::write(new.join("estimates.json"), r#"{"median":{"point_estimate":41.5},"mean":{}}"#).unwrap();
        std::fs::create_dir_all(root.join("keys/task_key/base")).unwrap();
        let dirs = result_dirs(&root).unwrap();
        assert_eq!(dirs, vec![new.clone()]);
        assert_eq!(read_result(&new).unwrap(), MicroResult { name: "keys/task_key".into(), median_ns: 41.5 });
        std::fs::remove_dir_all(&root).unwrap();
    }
}
