//! The targets on groups: an idle aggregator and operator reads over a queue of 100 000 groups.

use super::super::peer::go;
use super::super::scenarios::{GROUP_READS, IDLE_AGGREGATOR};
use super::go_twins::go_reads;
use super::{Check, LONGEST_COMMAND_MS, Rows, not_measured};

const IDLE_AGGREGATOR_TARGET: &str = "an idle group aggregator on a queue of 100 000 groups, none ready: Redis CPU \
                                      ≤ 1 % of one CPU, no Redis command of 10 ms";
const GROUP_READS_TARGET: &str = "operator reads of a queue of 100 000 groups: queue info (`asynq stats`, `queue ls`, \
                                  `queue inspect`, a metrics scrape) ≤ 10 ms, no Redis command of 10 ms";

/// The checks of the group scenarios: an idle aggregator and operator reads
/// over many groups.
pub(super) fn group_checks(rows: &Rows) -> Vec<Check> {
    let idle = rows.row(IDLE_AGGREGATOR);
    let idle_check = match (idle.and_then(|row| row.redis_cpu_pct), rows.longest(&[IDLE_AGGREGATOR])) {
        (Some(cpu), Some((longest, what))) => Check {
            target: IDLE_AGGREGATOR_TARGET,
            measured: format!(
                "Redis CPU {cpu:.2} %, {} commands/s; longest command {longest:.1} ms",
                idle.and_then(|row| row.redis_cmds_per_s).map_or("–".to_owned(), |rate| format!("{rate:.0}"))
            ),
            met: Some(cpu <= 1.0 && longest < LONGEST_COMMAND_MS),
            context: format!(
                "one grouped task in each group, the aggregator's grace period an hour, checks every 7 s; \
                 longest: {what}{}",
                rows.row(&go(IDLE_AGGREGATOR))
                    .and_then(|row| Some((row.redis_cpu_pct?, row.redis_cmds_per_s?, row.longest_command_ms)))
                    .map(|(cpu, rate, longest)| format!(
                        "; Go asynq, side by side: Redis CPU {cpu:.2} %, {rate:.0} commands/s, longest command {}",
                        longest.map_or("–".to_owned(), |ms| format!("{ms:.1} ms"))
                    ))
                    .unwrap_or_default()
            ),
        },
        _ => not_measured(IDLE_AGGREGATOR_TARGET, IDLE_AGGREGATOR),
    };
    let reads = rows.row(GROUP_READS);
    let read = |name: &str| reads.and_then(|row| row.reads_ms.get(name).copied());
    let reads_check = match (read("queue_info"), read("queues_and_info"), rows.longest(&[GROUP_READS])) {
        (Some(info), Some(scrape), Some((longest, what))) => Check {
            target: GROUP_READS_TARGET,
            measured: format!(
                "queue info {info:.1} ms, a scrape's reads {scrape:.1} ms, the group list {} ms, a page of \
                 aggregating tasks {} ms; longest command {longest:.1} ms",
                read("groups").map_or("–".to_owned(), |ms| format!("{ms:.0}")),
                read("aggregating_page").map_or("–".to_owned(), |ms| format!("{ms:.0}"))
            ),
            met: Some(info <= 10.0 && scrape <= 10.0 && longest < LONGEST_COMMAND_MS),
            context: format!(
                "one grouped task in each group; medians of 3 calls of `Inspector::queue_info`, \
                 `Inspector::queues` and each queue's info, `Inspector::groups` (the whole list, in pages), \
                 the first 20 aggregating tasks; \
                 longest: {what}{}",
                go_reads(rows)
            ),
        },
        _ => not_measured(GROUP_READS_TARGET, GROUP_READS),
    };
    vec![idle_check, reads_check]
}
