//! The targets on processing: what Redis spends on a task's lifecycle (with and without an event
//! log, and in a workflow's fan-in), how fast a server drains against the peers, and its memory.

use super::super::report::Row;
use super::super::scenarios::{
    DRAIN_WITH_EVENTS, ENQUEUE_WITH_EVENTS, EVENT_CAP, FAN_IN_MEMBERS, PLAIN_FAN_IN, WORKFLOW_FAN_IN,
};
use super::{Check, Rows, commands, data_commands, not_measured, redis_cpu, tasks_per_s};

/// What Redis spends on a task from a batched enqueue to its acknowledgement
/// in a drain at concurrency 100, against the data commands it needs.
const LIFECYCLE_TARGET: &str = "Redis CPU per task lifecycle ≤ 8 µs, within 1.2× of its data commands";

/// The scenario measuring what one `redis.call` from a script costs beyond the command itself.
const CALL_FROM_LUA: &str = "baseline-redis-call-from-lua";

pub(super) fn lifecycle_check(rows: &Rows, ping_cpu: Option<f64>) -> Check {
    const ENQUEUE: &str = "enqueue-batch-100";
    const DRAIN: &str = "drain-c100";
    let (Some(enqueue), Some(drain), Some(enqueue_data), Some(drain_data)) = (
        rows.get(ENQUEUE, redis_cpu),
        rows.get(DRAIN, redis_cpu),
        rows.get(ENQUEUE, data_commands),
        rows.get(DRAIN, data_commands),
    ) else {
        return not_measured(LIFECYCLE_TARGET, format_args!("{ENQUEUE} and {DRAIN}"));
    };
    let (total, data) = (enqueue + drain, enqueue_data + drain_data);
    // Each command a script runs is one `redis.call`; the script calls themselves are not.
    let calls_from_lua = |scenario| Some(rows.get(scenario, commands)? - rows.commands(scenario, "evalsha")?);
    let context = [
        Some(format!(
            "{data:.1} µs of it is spent inside the data commands themselves (`INFO commandstats`: `{ENQUEUE}` \
             {enqueue_data:.1} + `{DRAIN}` {drain_data:.1}), the rest running the scripts, parsing requests and in \
             system calls"
        )),
        rows.get(CALL_FROM_LUA, redis_cpu)
            .zip(rows.get(CALL_FROM_LUA, data_commands))
            .zip(calls_from_lua(ENQUEUE).zip(calls_from_lua(DRAIN)))
            .map(|((call, command), (enqueue_calls, drain_calls))| {
                let price = call - command;
                let calls = enqueue_calls + drain_calls;
                format!(
                    "each `redis.call` from a script costs this Redis {price:.2} µs beyond the command's own time \
                 (`{CALL_FROM_LUA}`), and a lifecycle makes {calls:.1} per task: {:.1} µs",
                    price * calls
                )
            }),
        rows.get("enqueue", redis_cpu)
            .zip(rows.get("drain-c10", redis_cpu))
            .map(|(one, c10)| format!("one at a time: {:.1} µs (`enqueue` + `drain-c10`)", one + c10)),
        ping_cpu.map(|ping| {
            format!("this Redis spends {ping:.1} µs of CPU on one unpipelined PING (`baseline-redis-ping`)")
        }),
        rows.get("go-enqueue-then-drain-c10", redis_cpu).map(|go| {
            format!("Go asynq's lifecycle costs it {go:.1} µs (`go-enqueue-then-drain-c10`), {:.1}× ours", go / total)
        }),
    ];
    Check {
        target: LIFECYCLE_TARGET,
        measured: format!(
            "{total:.1} µs (`{ENQUEUE}` {enqueue:.1} + `{DRAIN}` {drain:.1}), {:.2}× its data commands",
            total / data
        ),
        met: Some(total <= 8.0 && total <= 1.2 * data),
        context: context.into_iter().flatten().collect::<Vec<_>>().join("; "),
    }
}

const EVENTS_TARGET: &str = "a queue's event log costs at most a quarter more Redis CPU per task lifecycle";

/// The event log's cost: a lifecycle's Redis CPU with a queue's log against without.
pub(super) fn events_check(rows: &Rows) -> Check {
    let lifecycle = |enqueue: &str, drain: &str| Some(rows.get(enqueue, redis_cpu)? + rows.get(drain, redis_cpu)?);
    let lifecycle_commands =
        |enqueue: &str, drain: &str| Some(rows.get(enqueue, commands)? + rows.get(drain, commands)?);
    match (lifecycle("enqueue-batch-100", "drain-c100"), lifecycle(ENQUEUE_WITH_EVENTS, DRAIN_WITH_EVENTS)) {
        (Some(off), Some(on)) => Check {
            target: EVENTS_TARGET,
            measured: format!(
                "{:.2}× ({on:.1} µs with a log of {EVENT_CAP} events: `{ENQUEUE_WITH_EVENTS}` + \
                 `{DRAIN_WITH_EVENTS}`; {off:.1} µs without: `enqueue-batch-100` + `drain-c100`)",
                on / off
            ),
            met: Some(on <= off * 1.25),
            context: match (
                lifecycle_commands("enqueue-batch-100", "drain-c100"),
                lifecycle_commands(ENQUEUE_WITH_EVENTS, DRAIN_WITH_EVENTS),
            ) {
                (Some(off), Some(on)) => format!(
                    "{on:.2} Redis commands per task with the log (three XADD: enqueued, started, succeeded), \
                     {off:.2} without; a queue without a log runs no command for it (one empty script \
                     argument per call)"
                ),
                _ => String::new(),
            },
        },
        _ => not_measured(EVENTS_TARGET, "enqueue-batch-100, drain-c100 and their -events twins"),
    }
}

/// The workflow issue's scale target: a fan-out of 10 000 tasks with one fan-in callback costs
/// at most twice a plain task's Redis CPU and commands per member, and no command blocks Redis
/// for 10 ms.
const WORKFLOW_TARGET: &str = "a 10 000-member fan-out with a fan-in callback: ≤ 2× a plain task's Redis CPU and \
     commands per member, no Redis command of 10 ms";

pub(super) fn workflow_check(rows: &Rows) -> Check {
    let cpu = |row: &Row| row.redis_cpu_us_per_task;
    let commands = |row: &Row| row.redis_cmds_per_task;
    let longest = |row: &Row| row.longest_command_ms;
    let (Some(cpu_on), Some(cpu_off), Some(cmds_on), Some(cmds_off), Some(longest_ms)) = (
        rows.get(WORKFLOW_FAN_IN, cpu),
        rows.get(PLAIN_FAN_IN, cpu),
        rows.get(WORKFLOW_FAN_IN, commands),
        rows.get(PLAIN_FAN_IN, commands),
        rows.get(WORKFLOW_FAN_IN, longest),
    ) else {
        return not_measured(WORKFLOW_TARGET, format_args!("{WORKFLOW_FAN_IN} and {PLAIN_FAN_IN}"));
    };
    Check {
        target: WORKFLOW_TARGET,
        measured: format!(
            "{:.2}× the Redis CPU ({cpu_on:.1} against {cpu_off:.1} µs per task) and {:.2}× the commands \
             ({cmds_on:.1} against {cmds_off:.1}) of `{PLAIN_FAN_IN}`; longest command {longest_ms:.1} ms",
            cpu_on / cpu_off,
            cmds_on / cmds_off
        ),
        met: Some(cpu_on <= 2.0 * cpu_off && cmds_on <= 2.0 * cmds_off && longest_ms < 10.0),
        context: format!(
            "{FAN_IN_MEMBERS} members and a callback, stored and run by one process at concurrency 100: \
             the workflow stores every member's result for the callback, which reads them all"
        ),
    }
}

/// Processing at concurrency 10 against the `asynq` 0.1.8 crate's (`--peer`).
pub(super) fn peer_check(rows: &Rows) -> Check {
    match (rows.get("drain-c10", tasks_per_s), rows.get("peer-drain-c10", tasks_per_s)) {
        (Some(ours), Some(peer)) => Check {
            target: "processing ≥ 10× the `asynq` 0.1.8 crate's",
            measured: format!("{:.1}× (`drain-c10` {ours:.0}/s, `peer-drain-c10` {peer:.0}/s)", ours / peer),
            met: Some(ours / peer >= 10.0),
            context: "side by side on the same Redis".to_owned(),
        },
        _ => not_measured("processing ≥ 10× the `asynq` 0.1.8 crate's", "--peer"),
    }
}

/// Processing at concurrency 10 against Go asynq's (`--go`).
pub(super) fn go_check(rows: &Rows) -> Check {
    match (rows.get("drain-c10", tasks_per_s), rows.get("go-drain-c10", tasks_per_s)) {
        (Some(ours), Some(go)) => Check {
            target: "processing ≥ 4× Go asynq's",
            measured: format!("{:.1}× (`drain-c10` {ours:.0}/s, `go-drain-c10` {go:.0}/s)", ours / go),
            met: Some(ours / go >= 4.0),
            context: "side by side on the same Redis, both at concurrency 10".to_owned(),
        },
        _ => not_measured("processing ≥ 4× Go asynq's", "--go"),
    }
}

/// The server's peak memory while draining at concurrency 100.
pub(super) fn memory_check(rows: &Rows) -> Check {
    match rows.get("drain-c100", |row| row.peak_rss_mb) {
        Some(rss) => Check {
            target: "server ≤ 50 MB RSS at concurrency 100 with 100 000 tasks pending",
            measured: format!("{rss:.1} MB"),
            met: Some(rss <= 50.0),
            context: "`drain-c100`: the peak over the whole drain".to_owned(),
        },
        None => not_measured("server ≤ 50 MB RSS at concurrency 100", "drain-c100"),
    }
}
