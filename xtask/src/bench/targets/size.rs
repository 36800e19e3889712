//! The size-axis targets: costs that must stay flat as work grows (deep backlogs, a full
//! archive, many idle servers, a storm of scheduled tasks, bulk actions on a large queue).

use super::super::report::Row;
use super::super::scenarios::{
    BULK_ACTIONS, DEEP_BACKLOG_DRAINS, DEEP_BACKLOG_SLICE, FAIL_INTO_EMPTY_ARCHIVE, FAIL_INTO_FULL_ARCHIVE,
    IDLE_SERVER_COUNTS, IDLE_SERVERS, SCHEDULED_STORM,
};
use super::go_twins::{go_bulk, go_growth, go_idle};
use super::{Check, LONGEST_COMMAND_MS, Rows, not_measured, redis_cpu, tasks_per_s};

const DEEP_TARGET: &str = "drain with 1 000 000 tasks pending: Redis CPU per task ≤ 1.25× that with 10 000 \
                           pending, no Redis command of 10 ms";
const ARCHIVE_TARGET: &str = "tasks failing for good into an archive at its cap (10 000): Redis CPU per task ≤ \
                              1.25× into an empty archive, no Redis command of 10 ms";
const SERVERS_TARGET: &str = "50 idle servers: Redis commands/s ≤ 50 × one server's × 1.1, `Inspector::servers()` \
                              ≤ 50 ms";
const STORM_TARGET: &str = "a storm of scheduled tasks falling due at once: no Redis command of 10 ms, pickup p99 \
                            of new work during it ≤ 10 ms";
const BULK_TARGET: &str = "bulk operator actions (`archiveall`, `deleteall`, `runall`, `queue rm --force`) on a \
                           large queue: no Redis command of 10 ms";

/// The checks of the costs that must stay flat as work grows.
pub(super) fn size_axis_checks(rows: &Rows) -> Vec<Check> {
    let mut checks = Vec::new();

    let [small, middle, large] = DEEP_BACKLOG_DRAINS;
    checks.push(match (rows.get(small, redis_cpu), rows.get(large, redis_cpu), rows.longest(&DEEP_BACKLOG_DRAINS)) {
        (Some(at_small), Some(at_large), Some((longest, what))) => Check {
            target: DEEP_TARGET,
            measured: format!(
                "{:.2}× ({at_large:.1} µs at 1 000 000 pending, {} at 100 000, {at_small:.1} at 10 000; {} tasks/s); \
                 longest command {longest:.1} ms",
                at_large / at_small,
                rows.get(middle, redis_cpu).map_or("–".to_owned(), |us| format!("{us:.1}")),
                DEEP_BACKLOG_DRAINS
                    .iter()
                    .map(|name| rows.get(name, tasks_per_s).map_or("–".to_owned(), |rate| format!("{rate:.0}")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            met: Some(at_large <= 1.25 * at_small && longest < LONGEST_COMMAND_MS),
            context: format!(
                "concurrency 100 draining the first {DEEP_BACKLOG_SLICE} tasks (all of the 10 000); longest: {what}; \
                 1 000 000 against 10 000: {}{}",
                rows.grown_commands(small, large),
                go_growth(rows, small, large)
            ),
        },
        _ => not_measured(DEEP_TARGET, DEEP_BACKLOG_DRAINS.join(", ")),
    });

    let archives = [FAIL_INTO_EMPTY_ARCHIVE, FAIL_INTO_FULL_ARCHIVE];
    checks.push(
        match (
            rows.get(FAIL_INTO_EMPTY_ARCHIVE, redis_cpu),
            rows.get(FAIL_INTO_FULL_ARCHIVE, redis_cpu),
            rows.longest(&archives),
        ) {
            (Some(empty), Some(full), Some((longest, what))) => Check {
                target: ARCHIVE_TARGET,
                measured: format!(
                    "{:.2}× ({full:.1} µs at the cap, {empty:.1} into an empty archive; {} and {} tasks/s); longest \
                     command {longest:.1} ms",
                    full / empty,
                    rows.get(FAIL_INTO_FULL_ARCHIVE, tasks_per_s).map_or("–".to_owned(), |rate| format!("{rate:.0}")),
                    rows.get(FAIL_INTO_EMPTY_ARCHIVE, tasks_per_s)
                        .map_or("–".to_owned(), |rate| format!("{rate:.0}")),
                ),
                met: Some(full <= 1.25 * empty && longest < LONGEST_COMMAND_MS),
                context: format!(
                    "concurrency 100, `max_retry` 0: 20 000 failures after 10 000 tasks archived, against 9 000 into \
                     an empty archive; longest: {what}; at the cap against empty: {}{}",
                    rows.grown_commands(FAIL_INTO_EMPTY_ARCHIVE, FAIL_INTO_FULL_ARCHIVE),
                    go_growth(rows, FAIL_INTO_EMPTY_ARCHIVE, FAIL_INTO_FULL_ARCHIVE)
                ),
            },
            _ => not_measured(ARCHIVE_TARGET, archives.join(" and ")),
        },
    );

    let cmds_per_s = |row: &Row| row.redis_cmds_per_s;
    let [one, ten, fifty] = IDLE_SERVERS;
    let servers_ls = |row: &Row| row.servers_ls_ms;
    checks.push(match (rows.get(one, cmds_per_s), rows.get(fifty, cmds_per_s), rows.get(fifty, servers_ls)) {
        (Some(alone), Some(many), Some(ls)) => Check {
            target: SERVERS_TARGET,
            measured: format!(
                "{many:.1} commands/s with 50, {} with 10, {alone:.1} with one ({:.2}× one server's per server); \
                 `Inspector::servers()` {ls:.1} ms with 50",
                rows.get(ten, cmds_per_s).map_or("–".to_owned(), |rate| format!("{rate:.1}")),
                many / alone / IDLE_SERVER_COUNTS[2] as f64
            ),
            met: Some(many <= IDLE_SERVER_COUNTS[2] as f64 * alone * 1.1 && ls <= 50.0),
            context: format!(
                "each server at concurrency 2 on three queues, with its own connection, in one process; \
                 `Inspector::servers()` the median of 5 calls after the window ({} ms with one server, {} with 10); \
                 50 against one: {}",
                rows.get(one, servers_ls).map_or("–".to_owned(), |ms| format!("{ms:.1}")),
                rows.get(ten, servers_ls).map_or("–".to_owned(), |ms| format!("{ms:.1}")),
                rows.grown_commands(one, fifty)
            ) + &go_idle(rows, &IDLE_SERVERS),
        },
        _ => not_measured(SERVERS_TARGET, IDLE_SERVERS.join(", ")),
    });

    let storm = rows.row(SCHEDULED_STORM);
    checks.push(match (storm.and_then(|row| row.pickup_p99_ms), rows.longest(&[SCHEDULED_STORM])) {
        (Some(p99), Some((longest, what))) => {
            let storm = storm.expect("the storm's row");
            Check {
                target: STORM_TARGET,
                measured: format!(
                    "longest command {longest:.1} ms; pickup p50 {} ms, p99 {p99:.2} ms while {} scheduled tasks \
                     were forwarded at {} tasks/s",
                    storm.pickup_p50_ms.map_or("–".to_owned(), |ms| format!("{ms:.2}")),
                    storm.tasks,
                    storm.tasks_per_s.map_or("–".to_owned(), |rate| format!("{rate:.0}")),
                ),
                met: Some(longest < LONGEST_COMMAND_MS && p99 <= 10.0),
                context: format!(
                    "all due at one second; one server at concurrency 10 forwards them (and runs them, no-op) \
                     while a fresh task is enqueued into another queue of the same weight every 5 ms; longest: \
                     {what}; {:.1} µs of Redis CPU and {:.2} commands per scheduled task, the processing that \
                     overlapped included",
                    storm.redis_cpu_us_per_task.unwrap_or(f64::NAN),
                    storm.redis_cmds_per_task.unwrap_or(f64::NAN),
                ),
            }
        }
        _ => not_measured(STORM_TARGET, SCHEDULED_STORM.to_owned()),
    });

    let rates: Vec<String> = BULK_ACTIONS
        .iter()
        .filter_map(|name| Some(format!("`{name}` {:.0}/s", rows.get(name, tasks_per_s)?)))
        .collect();
    checks.push(match (rows.row(BULK_ACTIONS[0]), rows.longest(&BULK_ACTIONS)) {
        (Some(row), Some((longest, what))) if rates.len() == BULK_ACTIONS.len() => Check {
            target: BULK_TARGET,
            measured: format!("longest command {longest:.1} ms over {} tasks each; {}", row.tasks, rates.join(", ")),
            met: Some(longest < LONGEST_COMMAND_MS),
            context: format!(
                "each action on all of one queue's tasks (`runall` on scheduled ones, the others on pending ones), in \
                 steps of `asynq_redis::BULK_STEP` tasks per script call; longest: {what}{}",
                go_bulk(rows)
            ),
        },
        _ => not_measured(BULK_TARGET, BULK_ACTIONS.join(", ")),
    });
    checks
}
