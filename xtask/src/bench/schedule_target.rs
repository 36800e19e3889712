//! The target of the scheduled-on-time scenario: a scheduled task starts within 100 ms of its
//! due second (p99), on a server whose forwarder would otherwise look every 5 s.

use super::report::Row;
use super::scenarios::SCHEDULED_ON_TIME;
use super::targets::{Check, not_measured};

/// The target, for people.
const TARGET: &str = "scheduled tasks start on time: p99 within 100 ms of the due second, on an idle server";

/// The most a task may start after its due second, at the 99th percentile, in milliseconds.
const MOST_LATE_P99_MS: f64 = 100.0;

/// Checks the row of [`SCHEDULED_ON_TIME`], if it was run.
pub(crate) fn check(row: Option<&Row>) -> Check {
    let Some((p50, p99)) = row.and_then(|row| Some((row.pickup_p50_ms?, row.pickup_p99_ms?))) else {
        return not_measured(TARGET, SCHEDULED_ON_TIME);
    };
    Check {
        target: TARGET,
        measured: format!("`{SCHEDULED_ON_TIME}` p50 {p50:.1} ms, p99 {p99:.1} ms after the due second"),
        met: Some(p99 <= MOST_LATE_P99_MS),
        context: "the forwarder sleeps until the earliest task is due and a newly scheduled earliest task wakes \
                  it; one that looked every 5 s would be up to 5 000 ms late"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Run;
    use super::*;

    fn row(p50: f64, p99: f64) -> Row {
        let run = Run { tasks: 200, pickup_p50_ms: Some(p50), pickup_p99_ms: Some(p99), ..Run::default() };
        Row::from_run(SCHEDULED_ON_TIME, &run)
    }

    #[test]
    fn met_within_100_ms_at_the_99th_percentile() {
        assert_eq!(check(Some(&row(3.0, 40.0))).met, Some(true));
        assert_eq!(check(Some(&row(3.0, 150.0))).met, Some(false));
        assert_eq!(check(None).met, None);
        assert!(check(Some(&row(3.04, 40.0))).measured.contains("p50 3.0 ms, p99 40.0 ms"));
    }
}
