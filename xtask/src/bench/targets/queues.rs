//! The targets on many queues: an idle server's commands, one busy queue beside 999 empty ones,
//! and 10 000 tenant queues served by a pattern.

use super::super::scenarios::{
    MANY_QUEUES_DRAIN, MANY_QUEUES_IDLE, MANY_QUEUES_PICKUP, QUIET_BESIDE_BUSY, TENANTS_IDLE, TENANTS_PICKUP,
};
use super::go_twins::{go_idle, go_many_queues};
use super::{Check, Rows, not_measured, tasks_per_s};

/// An idle server's Redis commands a second on three queues.
pub(super) fn idle_check(rows: &Rows) -> Check {
    match rows.get("idle-3-queues", |row| row.redis_cmds_per_s) {
        Some(rate) => Check {
            target: "idle server with 3 queues ≤ 20 Redis commands/s",
            measured: format!("{rate:.1} commands/s"),
            met: Some(rate <= 20.0),
            context: format!("`idle-3-queues`, scripts' commands included{}", go_idle(rows, &["idle-3-queues"])),
        },
        None => not_measured("idle server with 3 queues ≤ 20 Redis commands/s", "idle-3-queues"),
    }
}

const MANY: &str = "1 000 queues: one busy queue drains at ≥ ½ its rate alone, idle ≤ 50 Redis commands/s, \
                    pickup p99 ≤ 2 ms";

/// One busy queue beside 999 empty ones: its drain rate, the idle commands, pickup.
pub(super) fn many_queues_check(rows: &Rows) -> Check {
    let many = (
        rows.get(MANY_QUEUES_DRAIN, tasks_per_s),
        rows.get("drain-c100", tasks_per_s),
        rows.get(MANY_QUEUES_IDLE, |row| row.redis_cmds_per_s),
        rows.get(MANY_QUEUES_PICKUP, |row| row.pickup_p99_ms),
    );
    match many {
        (Some(beside), Some(alone), Some(idle), Some(p99)) => Check {
            target: MANY,
            measured: format!(
                "{:.2}× ({beside:.0}/s beside 999 empty queues, {alone:.0}/s alone), idle {idle:.1} commands/s, \
                 p99 {p99:.2} ms",
                beside / alone
            ),
            met: Some(beside >= alone / 2.0 && idle <= 50.0 && p99 <= 2.0),
            context: format!(
                "`{MANY_QUEUES_DRAIN}` against `drain-c100`, `{MANY_QUEUES_IDLE}` (scripts' commands included), \
                 `{MANY_QUEUES_PICKUP}`; every queue of one weight, so the busy one comes first in one fetch of \
                 1 000{}",
                go_many_queues(rows)
            ),
        },
        _ => not_measured(
            MANY,
            "drain-c100, drain-c100-beside-999-empty, idle-1000-queues and pickup-latency-c10-beside-999-empty",
        ),
    }
}

const TENANTS: &str = "10 000 tenant queues served by a pattern: idle ≤ 50 Redis commands/s; a quiet tenant \
                       beside a busy one's backlog is not starved: pickup p99 ≤ 100 ms";

/// 10 000 tenant queues served by a pattern: idle commands, and a quiet tenant beside a busy one.
pub(super) fn tenants_check(rows: &Rows) -> Check {
    let tenants = (
        rows.get(TENANTS_IDLE, |row| row.redis_cmds_per_s),
        rows.get(TENANTS_PICKUP, |row| row.pickup_p50_ms),
        rows.get(TENANTS_PICKUP, |row| row.pickup_p99_ms),
        rows.get(QUIET_BESIDE_BUSY, |row| row.pickup_p50_ms),
        rows.get(QUIET_BESIDE_BUSY, |row| row.pickup_p99_ms),
    );
    match tenants {
        (Some(idle), Some(p50), Some(p99), Some(quiet_p50), Some(quiet_p99)) => Check {
            target: TENANTS,
            measured: format!(
                "idle {idle:.1} commands/s; the quiet tenant p50/p99 {quiet_p50:.2}/{quiet_p99:.2} ms; pickup beside \
                 10 000 tenant queues p50/p99 {p50:.2}/{p99:.2} ms"
            ),
            met: Some(idle <= 50.0 && quiet_p99 <= 100.0),
            context: format!(
                "`{TENANTS_IDLE}` and `{TENANTS_PICKUP}`: `tenant:*` matching 10 000 registered empty queues (a \
                 server's work per fetch grows with the queues it serves: no target on that pickup yet); \
                 `{QUIET_BESIDE_BUSY}`: concurrency 10 busy with a backlog of 1 ms tasks in another tenant, tasks \
                 taken ahead included"
            ),
        },
        _ => not_measured(TENANTS, format!("{TENANTS_IDLE}, {TENANTS_PICKUP} and {QUIET_BESIDE_BUSY}")),
    }
}
