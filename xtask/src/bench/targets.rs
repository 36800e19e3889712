//! The performance targets the benchmark is held to, each checked against the report's rows:
//! met, missed (with what this machine's own baselines say about the gap), or not measured in
//! this run (a scenario left out, or a peer not run: `--peer`, `--go`, `--others`).

use std::fmt::Write as _;

use super::report::Row;
use super::scenarios::{SCHEDULED_ON_TIME, SHARED_LIMIT_WAIT};
use super::steps_target::{STEPS_DRAIN, STEPS_PLAIN_TWIN};

mod drain;
mod enqueue;
mod go_twins;
mod groups;
mod latency;
mod others;
mod queues;
mod sharded;
mod size;
#[cfg(test)]
mod tests;

/// How one target fared.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Check {
    /// The target, for people.
    pub(crate) target: &'static str,
    /// What was measured, with the scenarios it comes from.
    pub(crate) measured: String,
    /// `Some(true)` met, `Some(false)` missed, `None` not measured.
    pub(crate) met: Option<bool>,
    /// What the machine's baselines say about the figure, or why it is not measured.
    pub(crate) context: String,
}

/// Looks rows up by scenario name.
struct Rows<'a>(&'a [Row]);

impl Rows<'_> {
    fn get(&self, scenario: &str, field: fn(&Row) -> Option<f64>) -> Option<f64> {
        self.0.iter().find(|row| row.scenario == scenario).and_then(field)
    }

    fn row(&self, scenario: &str) -> Option<&Row> {
        self.0.iter().find(|row| row.scenario == scenario)
    }

    /// The longest Redis command of `scenarios`, in milliseconds, with its first words.
    fn longest(&self, scenarios: &[&str]) -> Option<(f64, String)> {
        scenarios
            .iter()
            .filter_map(|scenario| {
                let row = self.row(scenario)?;
                Some((row.longest_command_ms?, row.longest_command.clone().unwrap_or_default(), *scenario))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(ms, words, scenario)| {
                let what = if words.is_empty() { "none of 1 ms or more".to_owned() } else { format!("`{words}`") };
                (ms, format!("{what} in `{scenario}`"))
            })
    }

    /// The commands that grew most per task (per second for scenarios without tasks) from
    /// `base` to `scenario` (`INFO commandstats`), as a phrase.
    fn grown_commands(&self, base: &str, scenario: &str) -> String {
        let (Some(base), Some(row)) = (self.row(base), self.row(scenario)) else { return String::new() };
        let mut grown: Vec<(&String, f64)> = row
            .cmds_by_command
            .iter()
            .map(|(command, per)| (command, per - base.cmds_by_command.get(command).copied().unwrap_or(0.0)))
            .filter(|(_, more)| *more > 0.005)
            .collect();
        grown.sort_by(|a, b| b.1.total_cmp(&a.1));
        let grown: Vec<String> = grown.iter().take(4).map(|(command, more)| format!("{command} +{more:.2}")).collect();
        let per = if row.tasks > 0 { "task" } else { "second" };
        if grown.is_empty() {
            format!("no command more per {per}")
        } else {
            format!("commands per {per} grew: {}", grown.join(", "))
        }
    }

    fn commands(&self, scenario: &str, command: &str) -> Option<f64> {
        let row = self.0.iter().find(|row| row.scenario == scenario)?;
        Some(row.cmds_by_command.get(command).copied().unwrap_or(0.0))
    }
}

fn redis_cpu(row: &Row) -> Option<f64> {
    row.redis_cpu_us_per_task
}

fn commands(row: &Row) -> Option<f64> {
    row.redis_cmds_per_task
}

fn data_commands(row: &Row) -> Option<f64> {
    row.redis_data_cmd_us_per_task
}

fn tasks_per_s(row: &Row) -> Option<f64> {
    row.tasks_per_s
}

/// The benchmark process's CPU per task, in microseconds.
fn client_cpu(row: &Row) -> Option<f64> {
    (row.tasks > 0).then_some(row.client_cpu_s? * 1e6 / row.tasks as f64)
}

/// A target this run has no rows for: `scenarios` names those it needs.
pub(crate) fn not_measured(target: &'static str, scenarios: impl std::fmt::Display) -> Check {
    Check {
        target,
        measured: "–".to_owned(),
        met: None,
        context: format!("not measured in this run (needs {scenarios})"),
    }
}

/// The longest Redis command any size-axis scenario may run, in milliseconds.
const LONGEST_COMMAND_MS: f64 = 10.0;

/// Checks every target against `rows`, from a run on a machine of `cpus` CPUs that kept idle
/// CPUs awake or not.
pub(crate) fn check(rows: &[Row], cpus_awake: bool, cpus: usize) -> Vec<Check> {
    let rows = Rows(rows);
    let ping_cpu = rows.get("baseline-redis-ping", redis_cpu);
    let ping_rate = rows.get("baseline-redis-ping", tasks_per_s);
    let pipelined_rate = rows.get("baseline-redis-ping-pipelined-100", tasks_per_s);
    let mut checks = vec![
        drain::lifecycle_check(&rows, ping_cpu),
        drain::events_check(&rows),
        drain::workflow_check(&rows),
        super::limit_target::check(rows.row(SHARED_LIMIT_WAIT)),
        super::schedule_target::check(rows.row(SCHEDULED_ON_TIME)),
        super::steps_target::check(rows.row(STEPS_DRAIN), rows.row(STEPS_PLAIN_TWIN)),
        drain::peer_check(&rows),
        drain::go_check(&rows),
        enqueue::enqueue_check(&rows, ping_rate, cpus_awake, cpus),
        enqueue::batch_check(&rows, pipelined_rate),
        enqueue::concurrent_check(&rows),
        latency::pickup_check(&rows),
        others::enqueue_check(&rows),
        others::pickup_check(&rows),
    ];
    checks.extend(latency::streaming_checks(&rows));
    checks.push(queues::idle_check(&rows));
    checks.push(queues::many_queues_check(&rows));
    checks.push(queues::tenants_check(&rows));
    checks.extend(size::size_axis_checks(&rows));
    checks.extend(groups::group_checks(&rows));
    checks.extend(sharded::checks(&rows));
    checks.push(drain::memory_check(&rows));
    checks
}

/// The checks as a Markdown table.
pub(crate) fn markdown(checks: &[Check]) -> String {
    let mut md = String::from("| target | measured | verdict | context |\n|---|---|---|---|\n");
    for check in checks {
        let verdict = match check.met {
            Some(true) => "met",
            Some(false) => "missed",
            None => "not measured",
        };
        let _ = writeln!(md, "| {} | {} | {verdict} | {} |", check.target, check.measured, check.context);
    }
    md
}
