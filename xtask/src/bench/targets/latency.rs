//! The targets on latency and streaming: pickup by idle workers, an open-loop stream of
//! producers, and the commands a task costs when it wakes an idle server.

use super::super::peer::go;
use super::super::report::Row;
use super::super::scenarios::{STREAM_PRODUCERS, STREAMS};
use super::go_twins::go_pickup;
use super::{Check, Rows, commands, not_measured};

/// Pickup latency with idle workers, woken by push.
pub(super) fn pickup_check(rows: &Rows) -> Check {
    let pickup = |field: fn(&Row) -> Option<f64>| rows.get("pickup-latency-c10", field);
    match (pickup(|row| row.pickup_p50_ms), pickup(|row| row.pickup_p99_ms)) {
        (Some(p50), Some(p99)) => Check {
            target: "pickup with idle workers: p50 ≤ 2 ms, p99 ≤ 10 ms",
            measured: format!("p50 {p50:.2} ms, p99 {p99:.2} ms"),
            met: Some(p50 <= 2.0 && p99 <= 10.0),
            context: format!(
                "woken by push (`pickup-latency-c10`){}{}",
                go_pickup(rows, "pickup-latency-c10"),
                super::others::pickup_context(rows)
            ),
        },
        _ => not_measured("pickup with idle workers: p50 ≤ 2 ms, p99 ≤ 10 ms", "pickup-latency-c10"),
    }
}

const STREAM_TARGET: &str = "producers and a server streaming at 20 000 tasks/s: ≤ 25 µs Redis CPU per task";
const WAKE_TARGET: &str = "an idle wake-up costs ≤ 12 Redis commands per task";

/// The checks of streaming: Redis CPU per task at an offered 20 000
/// tasks/s, and the commands one task costs when it wakes an idle server.
pub(super) fn streaming_checks(rows: &Rows) -> Vec<Check> {
    let [slow, middle, max] = STREAMS;
    let stream = rows.row(middle);
    let describe = |name: &str| {
        let row = rows.row(name)?;
        Some(format!(
            "`{name}`: offered {}/s, ran {}/s, {} µs and {} commands per task, pickup p50/p99 {}/{} ms",
            row.offered_per_s.map_or("–".to_owned(), |rate| format!("{rate:.0}")),
            row.tasks_per_s.map_or("–".to_owned(), |rate| format!("{rate:.0}")),
            row.redis_cpu_us_per_task.map_or("–".to_owned(), |us| format!("{us:.1}")),
            row.redis_cmds_per_task.map_or("–".to_owned(), |cmds| format!("{cmds:.2}")),
            row.pickup_p50_ms.map_or("–".to_owned(), |ms| format!("{ms:.2}")),
            row.pickup_p99_ms.map_or("–".to_owned(), |ms| format!("{ms:.2}")),
        ))
    };
    let mut checks = Vec::new();
    checks.push(match stream.and_then(|row| Some((row.redis_cpu_us_per_task?, row.offered_per_s?))) {
        Some((cpu, offered)) => Check {
            target: STREAM_TARGET,
            measured: format!("{cpu:.1} µs at an offered {offered:.0} tasks/s"),
            // The load must have been offered: a run whose producers fell behind measured less.
            met: Some(cpu <= 25.0 && offered >= 0.95 * 20_000.0),
            context: [slow, middle, max]
                .into_iter()
                .map(str::to_owned)
                .chain([slow, middle, max].map(go))
                .filter_map(|name| describe(&name))
                .chain(std::iter::once(format!(
                    "{STREAM_PRODUCERS} producers sharing one client, open loop (a fixed timetable); one server at \
                     concurrency 10; the load counts as offered from 95 % of it"
                )))
                .collect::<Vec<_>>()
                .join("; "),
        },
        None => not_measured(STREAM_TARGET, middle),
    });
    checks.push(match rows.get("pickup-latency-c10", commands) {
        Some(cmds) => {
            let mut by_command: Vec<(&String, f64)> = rows
                .row("pickup-latency-c10")
                .map(|row| row.cmds_by_command.iter().map(|(command, per)| (command, *per)).collect())
                .unwrap_or_default();
            by_command.sort_by(|a, b| b.1.total_cmp(&a.1));
            let split: Vec<String> = by_command
                .iter()
                .filter(|(_, per)| *per >= 0.05)
                .map(|(command, per)| format!("{command} {per:.2}"))
                .collect();
            Check {
                target: WAKE_TARGET,
                measured: format!("{cmds:.2} commands per task"),
                met: Some(cmds <= 12.0),
                context: format!(
                    "`pickup-latency-c10`: one task at a time into an idle server, scripts' commands included \
                     (enqueue, wake-up, fetch, handler, settle); by command: {}",
                    split.join(", ")
                ),
            }
        }
        None => not_measured(WAKE_TARGET, "pickup-latency-c10"),
    });
    checks
}
