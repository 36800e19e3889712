//! The target of the shared-limit scenario: tasks over a concurrency limit shared by two servers
//! wait for a slot and start as soon as one frees, so twelve tasks of 300 ms under a limit of 2
//! take about six rounds of work, never with more than the limit running at once.

use super::report::Row;
use super::scenarios::{SHARED_LIMIT, SHARED_LIMIT_TASKS, SHARED_LIMIT_WAIT, SHARED_LIMIT_WORK};
use super::targets::{Check, not_measured};

/// The target, for people.
const TARGET: &str = "tasks over a shared concurrency limit wait for a slot: 12 tasks of 300 ms under a limit of 2 on \
                      two servers within 1.2× the ideal 1.8 s, never more than 2 running at once";

/// How far over the ideal the run may take.
const MOST_OVER_IDEAL: f64 = 1.2;

/// The ideal: `ceil(tasks / limit)` rounds of work, in seconds.
fn ideal_s() -> f64 {
    SHARED_LIMIT_TASKS.div_ceil(SHARED_LIMIT) as f64 * SHARED_LIMIT_WORK.as_secs_f64()
}

/// Checks the row of [`SHARED_LIMIT_WAIT`], if it was run.
pub(crate) fn check(row: Option<&Row>) -> Check {
    let Some((tasks_per_s, max_running)) = row.and_then(|row| Some((row.tasks_per_s?, row.max_running?))) else {
        return not_measured(TARGET, SHARED_LIMIT_WAIT);
    };
    let elapsed_s = SHARED_LIMIT_TASKS as f64 / tasks_per_s;
    let ideal = ideal_s();
    Check {
        target: TARGET,
        measured: format!(
            "`{SHARED_LIMIT_WAIT}` {elapsed_s:.2} s ({:.2}× the ideal {ideal:.1} s), at most {max_running} running at once",
            elapsed_s / ideal
        ),
        met: Some(elapsed_s <= ideal * MOST_OVER_IDEAL && max_running <= SHARED_LIMIT),
        context:
            "a slot given back wakes the waiting servers (pub/sub); before, a refused task went through the retry \
                  set and the run took about 25 s"
                .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Run;
    use super::*;

    fn row(elapsed_s: f64, max_running: u64) -> Row {
        let run = Run {
            tasks: SHARED_LIMIT_TASKS,
            tasks_per_s: Some(SHARED_LIMIT_TASKS as f64 / elapsed_s),
            max_running: Some(max_running),
            ..Run::default()
        };
        Row::from_run(SHARED_LIMIT_WAIT, &run)
    }

    #[test]
    fn met_within_the_bound_and_the_limit_missed_past_either() {
        assert!((ideal_s() - 1.8).abs() < 1e-9);
        assert_eq!(check(Some(&row(1.85, 2))).met, Some(true));
        assert_eq!(check(Some(&row(2.3, 2))).met, Some(false), "past 1.2× the ideal");
        assert_eq!(check(Some(&row(1.85, 3))).met, Some(false), "more than the limit at once");
        assert_eq!(check(None).met, None);
        assert!(check(Some(&row(1.85, 2))).measured.contains("1.85 s (1.03× the ideal 1.8 s)"));
    }
}
