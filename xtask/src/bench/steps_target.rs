//! The durable-steps scenarios and their target: a step's record costs at most one Redis
//! command. [`STEPS_DRAIN`] drains the run's tasks with [`STEPS_PER_TASK`] steps each, and
//! [`STEPS_PLAIN_TWIN`] drains [`STEPS_PER_TASK`] times as many plain tasks in the same run, so
//! that Redis's CPU per task with steps compares with that of as many plain tasks.

use super::report::Row;
use super::targets::{Check, not_measured};

/// How many durable steps each task of [`STEPS_DRAIN`] runs.
pub(crate) const STEPS_PER_TASK: usize = 5;
/// A drain at concurrency 100 of the run's tasks, each running [`STEPS_PER_TASK`] steps.
pub(crate) const STEPS_DRAIN: &str = "steps-drain-5-steps-c100";
/// A drain at concurrency 100 of [`STEPS_PER_TASK`] times the run's tasks, plain.
pub(crate) const STEPS_PLAIN_TWIN: &str = "steps-drain-plain-5x-tasks-c100";

/// The target, for people.
const TARGET: &str = "a durable step's record costs at most one Redis command: a five-step task sends at most a plain \
                      task's script calls, one read of its records and one call per step";

/// How far over one call per step the measurement may be: a slower drain shares its batched
/// fetches and settles among fewer tasks.
const SLACK: f64 = 0.05;

/// The script calls (`EVALSHA`, `EVAL`) per task of `row`: the commands a broker sends, where
/// the row's command count also holds those its scripts run inside Redis.
fn script_calls(row: &Row) -> Option<f64> {
    let calls = ["evalsha", "eval", "evalsha_ro", "eval_ro"].iter().filter_map(|c| row.cmds_by_command.get(*c));
    (!row.cmds_by_command.is_empty()).then(|| calls.sum())
}

/// Checks the rows of [`STEPS_DRAIN`] and [`STEPS_PLAIN_TWIN`], if both were run.
pub(crate) fn check(steps: Option<&Row>, plain: Option<&Row>) -> Check {
    let figures = |row: Option<&Row>| {
        row.and_then(|row| Some((script_calls(row)?, row.redis_cmds_per_task?, row.redis_cpu_us_per_task?)))
    };
    let (Some((step_calls, step_cmds, step_cpu)), Some((plain_calls, plain_cmds, plain_cpu))) =
        (figures(steps), figures(plain))
    else {
        return not_measured(TARGET, format_args!("{STEPS_DRAIN} and {STEPS_PLAIN_TWIN}"));
    };
    let n = STEPS_PER_TASK as f64;
    // One read of the records per attempt, at its first step.
    let per_step = (step_calls - plain_calls - 1.0) / n;
    Check {
        target: TARGET,
        measured: format!(
            "`{STEPS_DRAIN}` {step_calls:.2} script calls per task, `{STEPS_PLAIN_TWIN}` {plain_calls:.2}: {per_step:.2} \
             per step's record beside the one read"
        ),
        met: Some(per_step <= 1.0 + SLACK),
        context: format!(
            "Redis CPU per five-step task {step_cpu:.1} µs against {:.1} µs for five plain tasks ({:.2}×), {:.1} µs \
             per step; commands run (scripts' own included) {step_cmds:.2} per five-step task, {:.2} for five plain",
            plain_cpu * n,
            step_cpu / (plain_cpu * n),
            (step_cpu - plain_cpu) / n,
            plain_cmds * n
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::{Row, Run};
    use super::*;

    fn row(scenario: &str, tasks: u64, script_calls: f64, cpu_us_per_task: f64) -> Row {
        let mut row = Row::from_run(scenario, &Run { tasks, ..Run::default() });
        row.cmds_by_command = [("evalsha".to_owned(), script_calls), ("hset".to_owned(), 2.0)].into();
        row.redis_cmds_per_task = Some(script_calls + 2.0);
        row.redis_cpu_us_per_task = Some(cpu_us_per_task);
        row
    }

    #[test]
    fn met_at_one_command_per_step_beside_the_read_missed_past_it() {
        let plain = row(STEPS_PLAIN_TWIN, 100, 0.5, 20.0);
        let check = check(Some(&row(STEPS_DRAIN, 20, 6.5, 90.0)), Some(&plain));
        assert_eq!(check.met, Some(true));
        assert!(check.measured.contains("1.00 per step's record"), "{}", check.measured);
        assert!(check.context.contains("90.0 µs against 100.0 µs for five plain tasks (0.90×)"), "{}", check.context);
        assert!(check.context.contains("8.50 per five-step task, 12.50 for five plain"), "{}", check.context);
        assert_eq!(super::check(Some(&row(STEPS_DRAIN, 20, 11.5, 90.0)), Some(&plain)).met, Some(false));
        assert_eq!(super::check(None, Some(&plain)).met, None);
    }
}
