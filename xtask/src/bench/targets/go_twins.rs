//! Go asynq's twin rows (`--go`), as sentences appended to our checks' context: they inform,
//! never decide, a verdict.

use super::super::peer::go;
use super::super::scenarios::{BULK_ACTIONS, GROUP_READS, MANY_QUEUES_DRAIN, MANY_QUEUES_IDLE, MANY_QUEUES_PICKUP};
use super::{Rows, redis_cpu, tasks_per_s};

/// Go asynq's reads of the same queue of many groups, as a sentence to append, when the run has
/// their twin.
pub(super) fn go_reads(rows: &Rows) -> String {
    let Some(row) = rows.row(&go(GROUP_READS)) else { return String::new() };
    let read = |name: &str| row.reads_ms.get(name).map_or("–".to_owned(), |ms| format!("{ms:.1} ms"));
    format!(
        "; Go asynq, side by side (`GetQueueInfo`, `Queues` and each queue's info, `Groups`): {}, {}, {}; longest \
         command {}",
        read("queue_info"),
        read("queues_and_info"),
        read("groups"),
        row.longest_command_ms.map_or("–".to_owned(), |ms| format!("{ms:.1} ms"))
    )
}

/// Go asynq's drain rate at concurrency 100 beside 999 empty queues against alone, as a
/// sentence to append, when the run has its twins (`--go`).
pub(super) fn go_many_queues(rows: &Rows) -> String {
    let drain = match (rows.get(&go(MANY_QUEUES_DRAIN), tasks_per_s), rows.get(&go("drain-c100"), tasks_per_s)) {
        (Some(beside), Some(alone)) => {
            Some(format!("{:.3}× ({beside:.0}/s beside 999 empty queues, {alone:.0}/s alone)", beside / alone))
        }
        _ => None,
    };
    let idle = go_idle_rates(rows, &[MANY_QUEUES_IDLE]).map(|rates| format!("idle {rates}"));
    let pickup = go_pickup_latency(rows, MANY_QUEUES_PICKUP);
    let parts: Vec<String> = drain.into_iter().chain(idle).chain(pickup).collect();
    if parts.is_empty() { String::new() } else { format!("; Go asynq, side by side: {}", parts.join(", ")) }
}

/// How Go asynq's Redis CPU per task grew from its twin of `small` to its twin of `large`, as a
/// sentence to append, when the run has both.
pub(super) fn go_growth(rows: &Rows, small: &str, large: &str) -> String {
    match (rows.get(&go(small), redis_cpu), rows.get(&go(large), redis_cpu)) {
        (Some(at_small), Some(at_large)) => {
            let longest =
                rows.longest(&[&go(small), &go(large)]).map_or("–".to_owned(), |(ms, _)| format!("{ms:.1} ms"));
            format!(
                "; Go asynq, side by side: {:.2}× ({at_large:.1} µs against {at_small:.1} µs), longest command {longest}",
                at_large / at_small
            )
        }
        _ => String::new(),
    }
}

/// Go asynq's pickup latency in its twin of `scenario`, as a sentence to append, when the run
/// has it.
pub(super) fn go_pickup(rows: &Rows, scenario: &str) -> String {
    go_pickup_latency(rows, scenario).map(|pickup| format!("; Go asynq, side by side: {pickup}")).unwrap_or_default()
}

/// Go asynq's pickup p50 and p99 in its twin of `scenario` (`--go`), which polls its queues.
fn go_pickup_latency(rows: &Rows, scenario: &str) -> Option<String> {
    let row = rows.row(&go(scenario))?;
    Some(format!(
        "pickup p50 {:.1} ms, p99 {:.1} ms ({} samples; Go's servers poll empty queues about once a second)",
        row.pickup_p50_ms?, row.pickup_p99_ms?, row.tasks
    ))
}

/// Go asynq's idle twins of `scenarios`, as a sentence to append, when the run has them.
pub(super) fn go_idle(rows: &Rows, scenarios: &[&str]) -> String {
    go_idle_rates(rows, scenarios).map(|rates| format!("; Go asynq, side by side: {rates}")).unwrap_or_default()
}

/// The Redis commands a second of Go asynq's idle twins of `scenarios` (`--go`), in order.
fn go_idle_rates(rows: &Rows, scenarios: &[&str]) -> Option<String> {
    let rates: Vec<String> = scenarios
        .iter()
        .filter_map(|scenario| rows.get(&go(scenario), |row| row.redis_cmds_per_s))
        .map(|rate| format!("{rate:.1}"))
        .collect();
    if rates.is_empty() {
        return None;
    }
    let which = if scenarios.len() > 1 { format!(" (`{}`)", scenarios.join("`, `")) } else { String::new() };
    Some(format!("{} commands/s{which}", rates.join(" / ")))
}

/// Go asynq's bulk actions on the same tasks, each one script: their rates and longest
/// command, as a sentence to append, when the run has their twins (`--go`).
pub(super) fn go_bulk(rows: &Rows) -> String {
    let twins: Vec<String> = BULK_ACTIONS.iter().map(|name| go(name)).collect();
    let rates: Vec<String> =
        twins.iter().filter_map(|name| Some(format!("`{name}` {:.0}/s", rows.get(name, tasks_per_s)?))).collect();
    let names: Vec<&str> = twins.iter().map(String::as_str).collect();
    match rows.longest(&names) {
        Some((longest, what)) => {
            format!("; Go asynq, side by side: {}, longest command {longest:.1} ms ({what})", rates.join(", "))
        }
        None => String::new(),
    }
}
