//! The targets of the masters axis (`sharded-drain-<N>-masters`): one logical queue on a Redis
//! Cluster drains at nearly linear speedup as masters are added, and no command blocks a master.

use super::super::sharded::{NAME, masters_of};
use super::{Check, LONGEST_COMMAND_MS, Rows, not_measured};

/// The speedup target, for people.
const SCALING_TARGET: &str = "one sharded queue on a Redis Cluster drains at ≥ 0.8× linear speedup up to 4 masters";
/// The most masters the speedup target holds a run to; more are reported.
const HELD_UP_TO: usize = 4;
/// The least efficiency (speedup over masters) the target accepts.
const EFFICIENCY: f64 = 0.8;
/// The longest-command target, for people.
const LONGEST_TARGET: &str = "no Redis command of the masters axis takes 10 ms or more";

/// One point of the axis: masters, tasks/s, Redis CPU per task summed over the masters.
fn points(rows: &Rows) -> Vec<(usize, f64, Option<f64>)> {
    let mut points: Vec<_> = rows
        .0
        .iter()
        .filter_map(|row| Some((masters_of(&row.scenario)?, row.tasks_per_s?, row.redis_cpu_us_per_task)))
        .collect();
    points.sort_by_key(|point| point.0);
    points
}

/// The checks of the masters axis.
pub(super) fn checks(rows: &Rows) -> Vec<Check> {
    vec![scaling_check(rows), longest_check(rows)]
}

fn scaling_check(rows: &Rows) -> Check {
    let points = points(rows);
    let Some(&(1, base, _)) = points.first() else {
        return not_measured(SCALING_TARGET, format_args!("{NAME} with 1 master among `--masters`"));
    };
    let mut measured = Vec::new();
    let mut missed = false;
    for &(masters, rate, _) in &points {
        if masters == 1 {
            measured.push(format!("1 master {rate:.0}/s"));
            continue;
        }
        let speedup = rate / base;
        let efficiency = speedup / masters as f64;
        missed |= masters <= HELD_UP_TO && efficiency < EFFICIENCY;
        measured.push(format!("{masters} masters {rate:.0}/s ({speedup:.2}×, efficiency {efficiency:.2})"));
    }
    let cpu: Vec<String> =
        points.iter().filter_map(|&(masters, _, cpu)| Some(format!("{masters}: {:.1} µs", cpu?))).collect();
    let held = points.iter().any(|point| point.0 == HELD_UP_TO);
    let mut context = vec![
        format!("Redis CPU per task summed over the masters, by masters: {}", cpu.join(", ")),
        format!(
            "each point drains as many tasks per master through one logical queue of 2 shards per master; the \
             speedup needs a core for each master and its workers, so a machine with fewer shares them, and `cargo \
             xtask bench-bundle` carries the bench to a bigger one; past {HELD_UP_TO} masters reported, not held"
        ),
    ];
    if !held && !missed {
        context.push(format!("{HELD_UP_TO} masters not measured (`--masters 1,2,4,8`)"));
    }
    Check {
        target: SCALING_TARGET,
        measured: measured.join("; "),
        met: if missed { Some(false) } else { held.then_some(true) },
        context: context.join("; "),
    }
}

fn longest_check(rows: &Rows) -> Check {
    let names: Vec<&str> =
        rows.0.iter().map(|row| row.scenario.as_str()).filter(|name| masters_of(name).is_some()).collect();
    match rows.longest(&names) {
        Some((ms, what)) => Check {
            target: LONGEST_TARGET,
            measured: format!("{ms:.1} ms"),
            met: Some(ms < LONGEST_COMMAND_MS),
            context: format!("the longest on any master: {what}"),
        },
        None => not_measured(LONGEST_TARGET, NAME),
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::report::{Row, Run};
    use super::super::super::sharded::row_name;
    use super::*;

    fn row(masters: usize, tasks_per_s: f64, longest_ms: f64) -> Row {
        let mut row = Row::from_run(&row_name(masters), &Run { tasks: 1_000, ..Run::default() });
        row.tasks_per_s = Some(tasks_per_s);
        row.redis_cpu_us_per_task = Some(10.0);
        row.longest_command_ms = Some(longest_ms);
        row
    }

    #[test]
    fn speedup_is_held_up_to_four_masters_and_reported_past() {
        let linear = [row(1, 10_000.0, 0.0), row(2, 19_000.0, 1.5), row(4, 33_000.0, 0.0), row(8, 40_000.0, 0.0)];
        let [scaling, longest] = checks(&Rows(&linear)).try_into().unwrap();
        assert_eq!(scaling.met, Some(true), "{}", scaling.measured);
        assert!(scaling.measured.contains("2 masters 19000/s (1.90×, efficiency 0.95)"), "{}", scaling.measured);
        assert!(scaling.measured.contains("8 masters 40000/s (4.00×, efficiency 0.50)"), "{}", scaling.measured);
        assert_eq!((longest.met, longest.measured.as_str()), (Some(true), "1.5 ms"));

        let slow = [row(1, 10_000.0, 0.0), row(2, 12_000.0, 12.0)];
        let [scaling, longest] = checks(&Rows(&slow)).try_into().unwrap();
        assert_eq!((scaling.met, longest.met), (Some(false), Some(false)));

        let short = [row(1, 10_000.0, 0.0), row(2, 19_000.0, 0.0)];
        let scaling = scaling_check(&Rows(&short));
        assert_eq!(scaling.met, None, "4 masters not measured");
        assert!(scaling.context.contains("4 masters not measured"), "{}", scaling.context);

        assert_eq!(scaling_check(&Rows(&[row(2, 19_000.0, 0.0)])).met, None);
        assert_eq!(longest_check(&Rows(&[])).met, None);
    }
}
