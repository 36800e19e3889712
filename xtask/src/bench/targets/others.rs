//! The targets against other Rust queues (`--others`): one-at-a-time enqueue at least at
//! apalis's rate, and an idle server's pickup p99 below rusty-sidekiq's. Their figures also
//! join the context of the enqueue and pickup targets.

use super::super::others::{APALIS_ENQUEUE, APALIS_PICKUP, Queue, SIDEKIQ_ENQUEUE, SIDEKIQ_PICKUP};
use super::super::report::Row;
use super::super::scenarios::PICKUP_START_APART;
use super::{Check, Rows, not_measured, redis_cpu, tasks_per_s};

/// Our one-at-a-time enqueue against apalis's.
const ENQUEUE_TARGET: &str = "enqueue one at a time: ≥ 1.0× apalis's rate (`--others`)";
/// Our idle pickup against rusty-sidekiq's.
const PICKUP_TARGET: &str = "pickup with idle workers: p99 below rusty-sidekiq's (`--others`)";

/// Each other queue's one-at-a-time enqueue, as a sentence to append (empty without their rows).
pub(super) fn enqueue_context(rows: &Rows) -> String {
    let ours = rows.get("enqueue", tasks_per_s);
    let figures: Vec<String> = Queue::ALL
        .into_iter()
        .filter_map(|queue| {
            let [enqueue, ..] = queue.rows();
            let rate = rows.get(enqueue, tasks_per_s)?;
            let ratio = ours.map(|ours| format!(", ours {:.2}×", ours / rate)).unwrap_or_default();
            let cost = |field: fn(&Row) -> Option<f64>| {
                rows.get(enqueue, field).map_or("–".to_owned(), |v| format!("{v:.1}"))
            };
            Some(format!(
                "{} {rate:.0}/s (`{enqueue}`{ratio}; Redis CPU {} µs, {} commands per enqueue)",
                queue.name(),
                cost(redis_cpu),
                cost(|row| row.redis_cmds_per_task)
            ))
        })
        .collect();
    if figures.is_empty() { String::new() } else { format!("; side by side: {}", figures.join(", ")) }
}

/// Each other queue's pickup by an idle worker, as a sentence to append (empty without their rows).
pub(super) fn pickup_context(rows: &Rows) -> String {
    let figures: Vec<String> = Queue::ALL
        .into_iter()
        .filter_map(|queue| {
            let [.., pickup] = queue.rows();
            let row = rows.row(pickup)?;
            Some(format!(
                "{} p50 {:.2} ms, p99 {:.2} ms ({} samples, `{pickup}`)",
                queue.name(),
                row.pickup_p50_ms?,
                row.pickup_p99_ms?,
                row.tasks
            ))
        })
        .collect();
    if figures.is_empty() { String::new() } else { format!("; side by side: {}", figures.join(", ")) }
}

/// Our one-at-a-time enqueue (`enqueue`) at least at apalis's rate (`apalis-enqueue`).
pub(super) fn enqueue_check(rows: &Rows) -> Check {
    let (Some(ours), Some(apalis)) = (rows.get("enqueue", tasks_per_s), rows.get(APALIS_ENQUEUE, tasks_per_s)) else {
        return not_measured(ENQUEUE_TARGET, format!("`enqueue` and `--others`' `{APALIS_ENQUEUE}`"));
    };
    let sidekiq = rows
        .get(SIDEKIQ_ENQUEUE, tasks_per_s)
        .map(|rate| format!("; rusty-sidekiq {rate:.0}/s (ours {:.2}×)", ours / rate))
        .unwrap_or_default();
    Check {
        target: ENQUEUE_TARGET,
        measured: format!("`enqueue` {ours:.0}/s, `{APALIS_ENQUEUE}` {apalis:.0}/s: {:.2}×", ours / apalis),
        met: Some(ours >= apalis),
        context: format!("one producer awaiting each push, same Redis, same round{sidekiq}"),
    }
}

/// Our idle pickup p99 (`pickup-latency-c10`) below rusty-sidekiq's (`sidekiq-pickup-latency-c10`).
pub(super) fn pickup_check(rows: &Rows) -> Check {
    let p99 = |scenario: &str| rows.get(scenario, |row| row.pickup_p99_ms);
    let (Some(ours), Some(sidekiq)) = (p99("pickup-latency-c10"), p99(SIDEKIQ_PICKUP)) else {
        return not_measured(PICKUP_TARGET, format!("`pickup-latency-c10` and `--others`' `{SIDEKIQ_PICKUP}`"));
    };
    let apalis = p99(APALIS_PICKUP).map(|apalis| format!("; apalis p99 {apalis:.2} ms")).unwrap_or_default();
    let apart = p99(PICKUP_START_APART)
        .map(|p99| format!("; ours with the start record apart (a third hop) p99 {p99:.2} ms"))
        .unwrap_or_default();
    Check {
        target: PICKUP_TARGET,
        measured: format!("p99 ours {ours:.2} ms, rusty-sidekiq's {sidekiq:.2} ms"),
        met: Some(ours < sidekiq),
        context: format!(
            "one task at a time into an idle worker at concurrency 10; rusty-sidekiq's workers block in BRPOP, \
             one hop after the push; ours are woken by the enqueue's PUBLISH, then fetch, recording the start, two{apart}{apalis}"
        ),
    }
}
