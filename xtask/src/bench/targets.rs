//! The performance targets the benchmark is held to, each checked against the report's rows:
//! met, missed (with what this machine's own baselines say about the gap), or not measured in
//! this run (a scenario left out, or a peer not run: `--peer`, `--go`).

use std::fmt::Write as _;

use super::peer::go;
use super::report::Row;
use super::scenarios::{
    BULK_ACTIONS, DEEP_BACKLOG_DRAINS, DEEP_BACKLOG_SLICE, DRAIN_WITH_EVENTS, ENQUEUE_CONCURRENT, ENQUEUE_SPIN_WAIT,
    ENQUEUE_WITH_EVENTS, EVENT_CAP, FAIL_INTO_EMPTY_ARCHIVE, FAIL_INTO_FULL_ARCHIVE, FAN_IN_MEMBERS, GROUP_READS,
    IDLE_AGGREGATOR, IDLE_SERVER_COUNTS, IDLE_SERVERS, MANY_QUEUES_DRAIN, MANY_QUEUES_IDLE, MANY_QUEUES_PICKUP,
    PLAIN_FAN_IN, QUIET_BESIDE_BUSY, SCHEDULED_ON_TIME, SCHEDULED_STORM, SHARED_LIMIT_WAIT, TENANTS_IDLE,
    TENANTS_PICKUP, WORKFLOW_FAN_IN,
};
use super::scenarios::{STREAM_PRODUCERS, STREAMS};
use super::steps_target::{STEPS_DRAIN, STEPS_PLAIN_TWIN};

/// How one target fared.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Check {
    /// The target, for people.
    pub(crate) target: &'static str,
    /// What was measured, with the scenarios it comes from.
    pub(crate) measured: String,
    /// `Some(true)` met, `Some(false)` missed, `None` not measured.
    pub(crate) met: Option<bool>,
    /// What the machine's baselines say about the figure, or why it is not measured.
    pub(crate) context: String,
}

/// Looks rows up by scenario name.
struct Rows<'a>(&'a [Row]);

impl Rows<'_> {
    fn get(&self, scenario: &str, field: fn(&Row) -> Option<f64>) -> Option<f64> {
        self.0.iter().find(|row| row.scenario == scenario).and_then(field)
    }

    fn row(&self, scenario: &str) -> Option<&Row> {
        self.0.iter().find(|row| row.scenario == scenario)
    }

    /// The longest Redis command of `scenarios`, in milliseconds, with its first words.
    fn longest(&self, scenarios: &[&str]) -> Option<(f64, String)> {
        scenarios
            .iter()
            .filter_map(|scenario| {
                let row = self.row(scenario)?;
                Some((row.longest_command_ms?, row.longest_command.clone().unwrap_or_default(), *scenario))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(ms, words, scenario)| {
                let what = if words.is_empty() { "none of 1 ms or more".to_owned() } else { format!("`{words}`") };
                (ms, format!("{what} in `{scenario}`"))
            })
    }

    /// The commands that grew most per task (per second for scenarios without tasks) from
    /// `base` to `scenario` (`INFO commandstats`), as a phrase.
    fn grown_commands(&self, base: &str, scenario: &str) -> String {
        let (Some(base), Some(row)) = (self.row(base), self.row(scenario)) else { return String::new() };
        let mut grown: Vec<(&String, f64)> = row
            .cmds_by_command
            .iter()
            .map(|(command, per)| (command, per - base.cmds_by_command.get(command).copied().unwrap_or(0.0)))
            .filter(|(_, more)| *more > 0.005)
            .collect();
        grown.sort_by(|a, b| b.1.total_cmp(&a.1));
        let grown: Vec<String> = grown.iter().take(4).map(|(command, more)| format!("{command} +{more:.2}")).collect();
        let per = if row.tasks > 0 { "task" } else { "second" };
        if grown.is_empty() {
            format!("no command more per {per}")
        } else {
            format!("commands per {per} grew: {}", grown.join(", "))
        }
    }

    fn commands(&self, scenario: &str, command: &str) -> Option<f64> {
        let row = self.0.iter().find(|row| row.scenario == scenario)?;
        Some(row.cmds_by_command.get(command).copied().unwrap_or(0.0))
    }
}

fn redis_cpu(row: &Row) -> Option<f64> {
    row.redis_cpu_us_per_task
}

fn commands(row: &Row) -> Option<f64> {
    row.redis_cmds_per_task
}

fn data_commands(row: &Row) -> Option<f64> {
    row.redis_data_cmd_us_per_task
}

fn tasks_per_s(row: &Row) -> Option<f64> {
    row.tasks_per_s
}

/// The benchmark process's CPU per task, in microseconds.
fn client_cpu(row: &Row) -> Option<f64> {
    (row.tasks > 0).then_some(row.client_cpu_s? * 1e6 / row.tasks as f64)
}

/// A target this run has no rows for: `scenarios` names those it needs.
pub(crate) fn not_measured(target: &'static str, scenarios: impl std::fmt::Display) -> Check {
    Check {
        target,
        measured: "–".to_owned(),
        met: None,
        context: format!("not measured in this run (needs {scenarios})"),
    }
}

/// Issue 20's item 2: one producer enqueueing one task at a time, against Go asynq's.
const ENQUEUE_TARGET: &str = "enqueue one at a time ≥ 1.2× Go asynq's rate (by default, or waiting busy with \
                              `Client::with_spin_wait`), one round trip per task, no per-call queue registration";

fn enqueue_check(rows: &Rows, ping_rate: Option<f64>, cpus_awake: bool) -> Check {
    let Some(rate) = rows.get("enqueue", tasks_per_s) else {
        return not_measured(ENQUEUE_TARGET, "enqueue");
    };
    let calls = rows.commands("enqueue", "evalsha").unwrap_or(0.0);
    let registrations = rows.commands("enqueue", "sadd").unwrap_or(0.0);
    let go = rows.get("go-enqueue", tasks_per_s);
    let spinning = rows.get(ENQUEUE_SPIN_WAIT, tasks_per_s);
    let one_round_trip = (calls - 1.0).abs() < 0.05 && registrations < 0.01;
    let against_go =
        |rate: f64| go.map(|go| format!(" ({:.2}× `go-enqueue` {go:.0}/s)", rate / go)).unwrap_or_default();
    let mut measured = format!("`enqueue` {rate:.0}/s{}", against_go(rate));
    if let Some(spinning) = spinning {
        measured += &format!("; `{ENQUEUE_SPIN_WAIT}` {spinning:.0}/s{}", against_go(spinning));
    }
    measured += &format!("; {calls:.2} script calls and {registrations:.2} SADD per task");
    let best = spinning.map_or(rate, |spinning| spinning.max(rate));
    let Some(go_rate) = go else {
        return Check { target: ENQUEUE_TARGET, measured, met: None, context: "Go's rate needs `--go`".to_owned() };
    };
    let versus_go = [
        ("Redis CPU", redis_cpu as fn(&Row) -> Option<f64>, " µs"),
        ("Redis commands", |row: &Row| row.redis_cmds_per_task, ""),
        ("client CPU (the peer's: its whole process)", client_cpu, " µs"),
    ]
    .into_iter()
    .filter_map(|(what, field, unit)| {
        let (ours, go) = rows.get("enqueue", field).zip(rows.get("go-enqueue", field))?;
        Some(format!("{what} per enqueue: ours {ours:.1}{unit}, Go's {go:.1}{unit}"))
    });
    let spin_wait = spinning.map(|_| {
        let cost = |field: fn(&Row) -> Option<f64>| {
            rows.get(ENQUEUE_SPIN_WAIT, field).map_or_else(|| "–".to_owned(), |value| format!("{value:.1} µs"))
        };
        format!(
            "`{ENQUEUE_SPIN_WAIT}` is one producer on a current-thread runtime with `Client::with_spin_wait` (200 µs), \
             waiting busy for its replies as Go's runtime does: Redis CPU {}, client CPU {} per enqueue",
            cost(redis_cpu),
            cost(client_cpu)
        )
    });
    let context = versus_go
        .chain(ping_rate.map(|ping| {
            format!("`enqueue` makes {:.0} % of the PING round-trip rate (`baseline-redis-ping`)", rate / ping * 100.0)
        }))
        .chain(spin_wait)
        .chain((!cpus_awake).then(|| {
            "idle CPUs were free to halt, so each round trip also paid their wake-ups, which Go's scheduler partly \
             avoids by spinning; `--awake` measures without them"
                .to_owned()
        }))
        .collect::<Vec<_>>()
        .join("; ");
    Check { target: ENQUEUE_TARGET, measured, met: Some(one_round_trip && best / go_rate >= 1.2), context }
}

/// Issue 20's item 4: what Redis spends on a task from a batched enqueue to its acknowledgement
/// in a drain at concurrency 100, against the data commands it needs.
const LIFECYCLE_TARGET: &str = "Redis CPU per task lifecycle ≤ 8 µs, within 1.2× of its data commands";

/// The scenario measuring what one `redis.call` from a script costs beyond the command itself.
const CALL_FROM_LUA: &str = "baseline-redis-call-from-lua";

fn lifecycle_check(rows: &Rows, ping_cpu: Option<f64>) -> Check {
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

/// Checks every target against `rows`, from a run that kept idle CPUs awake or not.
pub(crate) fn check(rows: &[Row], cpus_awake: bool) -> Vec<Check> {
    let rows = Rows(rows);
    let ping_cpu = rows.get("baseline-redis-ping", redis_cpu);
    let ping_rate = rows.get("baseline-redis-ping", tasks_per_s);
    let pipelined_rate = rows.get("baseline-redis-ping-pipelined-100", tasks_per_s);
    let mut checks = Vec::new();

    checks.push(lifecycle_check(&rows, ping_cpu));

    const EVENTS_TARGET: &str = "a queue's event log costs at most a quarter more Redis CPU per task lifecycle";
    let lifecycle = |enqueue: &str, drain: &str| Some(rows.get(enqueue, redis_cpu)? + rows.get(drain, redis_cpu)?);
    let lifecycle_commands =
        |enqueue: &str, drain: &str| Some(rows.get(enqueue, commands)? + rows.get(drain, commands)?);
    checks.push(
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
        },
    );

    checks.push(workflow_check(&rows));
    checks.push(super::limit_target::check(rows.row(SHARED_LIMIT_WAIT)));
    checks.push(super::schedule_target::check(rows.row(SCHEDULED_ON_TIME)));
    checks.push(super::steps_target::check(rows.row(STEPS_DRAIN), rows.row(STEPS_PLAIN_TWIN)));

    checks.push(match (rows.get("drain-c10", tasks_per_s), rows.get("peer-drain-c10", tasks_per_s)) {
        (Some(ours), Some(peer)) => Check {
            target: "processing ≥ 10× the `asynq` 0.1.8 crate's",
            measured: format!("{:.1}× (`drain-c10` {ours:.0}/s, `peer-drain-c10` {peer:.0}/s)", ours / peer),
            met: Some(ours / peer >= 10.0),
            context: "side by side on the same Redis".to_owned(),
        },
        _ => not_measured("processing ≥ 10× the `asynq` 0.1.8 crate's", "--peer"),
    });

    checks.push(match (rows.get("drain-c10", tasks_per_s), rows.get("go-drain-c10", tasks_per_s)) {
        (Some(ours), Some(go)) => Check {
            target: "processing ≥ 4× Go asynq's",
            measured: format!("{:.1}× (`drain-c10` {ours:.0}/s, `go-drain-c10` {go:.0}/s)", ours / go),
            met: Some(ours / go >= 4.0),
            context: "side by side on the same Redis, both at concurrency 10".to_owned(),
        },
        _ => not_measured("processing ≥ 4× Go asynq's", "--go"),
    });

    checks.push(enqueue_check(&rows, ping_rate, cpus_awake));

    checks.push(match rows.get("enqueue-batch-100", tasks_per_s) {
        Some(rate) => Check {
            target: "batch enqueue (batches of 100) ≥ 500 000 tasks/s",
            measured: format!("{rate:.0}/s"),
            met: Some(rate >= 500_000.0),
            context: [
                rows.get("enqueue-batch-100", data_commands).map(|us| {
                    format!(
                        "the data commands alone (the task hash's HSET among them) take {us:.2} µs of Redis per task \
                         (`INFO commandstats`), a ceiling of {:.0} tasks/s on one Redis core before any script or \
                         request handling",
                        1e6 / us
                    )
                }),
                pipelined_rate.map(|pipelined| {
                    format!(
                        "{:.0} % of this machine's pipelined PING rate ({pipelined:.0}/s, \
                         `baseline-redis-ping-pipelined-100`); 500 000/s is 18–25 % of the 2–2.8 million/s a \
                         typical machine pipelines",
                        rate / pipelined * 100.0
                    )
                }),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; "),
        },
        None => not_measured("batch enqueue (batches of 100) ≥ 500 000 tasks/s", "enqueue-batch-100"),
    });

    const CONCURRENT: &str =
        "64 concurrent producers sharing one client ≥ 150 000 tasks/s at ≤ 8 µs Redis CPU per task";
    checks.push(match (rows.get(ENQUEUE_CONCURRENT, tasks_per_s), rows.get(ENQUEUE_CONCURRENT, redis_cpu)) {
        (Some(rate), Some(cpu)) => Check {
            target: CONCURRENT,
            measured: format!("{rate:.0}/s at {cpu:.1} µs"),
            met: Some(rate >= 150_000.0 && cpu <= 8.0),
            context: rows
                .get("enqueue", tasks_per_s)
                .map(|alone| format!("{:.1}× one producer's rate (`enqueue`, {alone:.0}/s)", rate / alone))
                .into_iter()
                .chain(rows.get(&go(ENQUEUE_CONCURRENT), tasks_per_s).map(|go_rate| {
                    format!(
                        "Go asynq, side by side: {go_rate:.0}/s at {} µs (each enqueue its own round trip)",
                        rows.get(&go(ENQUEUE_CONCURRENT), redis_cpu)
                            .map_or("–".to_owned(), |cpu| format!("{cpu:.1}"))
                    )
                }))
                .collect::<Vec<_>>()
                .join("; "),
        },
        _ => not_measured(CONCURRENT, ENQUEUE_CONCURRENT),
    });

    let pickup = |field: fn(&Row) -> Option<f64>| rows.get("pickup-latency-c10", field);
    checks.push(match (pickup(|row| row.pickup_p50_ms), pickup(|row| row.pickup_p99_ms)) {
        (Some(p50), Some(p99)) => Check {
            target: "pickup with idle workers: p50 ≤ 2 ms, p99 ≤ 10 ms",
            measured: format!("p50 {p50:.2} ms, p99 {p99:.2} ms"),
            met: Some(p50 <= 2.0 && p99 <= 10.0),
            context: format!("woken by push (`pickup-latency-c10`){}", go_pickup(&rows, "pickup-latency-c10")),
        },
        _ => not_measured("pickup with idle workers: p50 ≤ 2 ms, p99 ≤ 10 ms", "pickup-latency-c10"),
    });

    checks.extend(streaming_checks(&rows));

    checks.push(match rows.get("idle-3-queues", |row| row.redis_cmds_per_s) {
        Some(rate) => Check {
            target: "idle server with 3 queues ≤ 20 Redis commands/s",
            measured: format!("{rate:.1} commands/s"),
            met: Some(rate <= 20.0),
            context: format!("`idle-3-queues`, scripts' commands included{}", go_idle(&rows, &["idle-3-queues"])),
        },
        None => not_measured("idle server with 3 queues ≤ 20 Redis commands/s", "idle-3-queues"),
    });

    const MANY: &str = "1 000 queues: one busy queue drains at ≥ ½ its rate alone, idle ≤ 50 Redis commands/s, \
                        pickup p99 ≤ 2 ms";
    let many = (
        rows.get(MANY_QUEUES_DRAIN, tasks_per_s),
        rows.get("drain-c100", tasks_per_s),
        rows.get(MANY_QUEUES_IDLE, |row| row.redis_cmds_per_s),
        rows.get(MANY_QUEUES_PICKUP, |row| row.pickup_p99_ms),
    );
    checks.push(match many {
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
                go_many_queues(&rows)
            ),
        },
        _ => not_measured(
            MANY,
            "drain-c100, drain-c100-beside-999-empty, idle-1000-queues and pickup-latency-c10-beside-999-empty",
        ),
    });

    const TENANTS: &str = "10 000 tenant queues served by a pattern: idle ≤ 50 Redis commands/s; a quiet tenant \
                           beside a busy one's backlog is not starved: pickup p99 ≤ 100 ms";
    let tenants = (
        rows.get(TENANTS_IDLE, |row| row.redis_cmds_per_s),
        rows.get(TENANTS_PICKUP, |row| row.pickup_p50_ms),
        rows.get(TENANTS_PICKUP, |row| row.pickup_p99_ms),
        rows.get(QUIET_BESIDE_BUSY, |row| row.pickup_p50_ms),
        rows.get(QUIET_BESIDE_BUSY, |row| row.pickup_p99_ms),
    );
    checks.push(match tenants {
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
    });

    checks.extend(size_axis_checks(&rows));
    checks.extend(group_checks(&rows));

    checks.push(match rows.get("drain-c100", |row| row.peak_rss_mb) {
        Some(rss) => Check {
            target: "server ≤ 50 MB RSS at concurrency 100 with 100 000 tasks pending",
            measured: format!("{rss:.1} MB"),
            met: Some(rss <= 50.0),
            context: "`drain-c100`: the peak over the whole drain".to_owned(),
        },
        None => not_measured("server ≤ 50 MB RSS at concurrency 100", "drain-c100"),
    });
    checks
}

const STREAM_TARGET: &str = "producers and a server streaming at 20 000 tasks/s: ≤ 25 µs Redis CPU per task";
const WAKE_TARGET: &str = "an idle wake-up costs ≤ 12 Redis commands per task";

/// The checks of streaming (issue 20, item 3): Redis CPU per task at an offered 20 000
/// tasks/s, and the commands one task costs when it wakes an idle server.
fn streaming_checks(rows: &Rows) -> Vec<Check> {
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

/// The longest Redis command any size-axis scenario may run, in milliseconds.
const LONGEST_COMMAND_MS: f64 = 10.0;

const DEEP_TARGET: &str = "drain with 1 000 000 tasks pending: Redis CPU per task ≤ 1.25× that with 10 000 \
                           pending, no Redis command of 10 ms";
const ARCHIVE_TARGET: &str = "tasks failing for good into an archive at its cap (10 000): Redis CPU per task ≤ \
                              1.25× into an empty archive, no Redis command of 10 ms";
const SERVERS_TARGET: &str = "50 idle servers: Redis commands/s ≤ 50 × one server's × 1.1, `Inspector::servers()` \
                              ≤ 50 ms";
const STORM_TARGET: &str = "a storm of scheduled tasks falling due at once: no Redis command of 10 ms, pickup p99 \
                            of new work during it ≤ 10 ms";

const IDLE_AGGREGATOR_TARGET: &str = "an idle group aggregator on a queue of 100 000 groups, none ready: Redis CPU \
                                      ≤ 1 % of one CPU, no Redis command of 10 ms";
const GROUP_READS_TARGET: &str = "operator reads of a queue of 100 000 groups: queue info (`asynq stats`, `queue ls`, \
                                  `queue inspect`, a metrics scrape) ≤ 10 ms, no Redis command of 10 ms";

/// The checks of the group scenarios (issue 20, item 5): an idle aggregator and operator reads
/// over many groups.
fn group_checks(rows: &Rows) -> Vec<Check> {
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

const BULK_TARGET: &str = "bulk operator actions (`archiveall`, `deleteall`, `runall`, `queue rm --force`) on a \
                           large queue: no Redis command of 10 ms";

/// The checks of the costs that must stay flat as work grows (issue 20, item 5).
fn size_axis_checks(rows: &Rows) -> Vec<Check> {
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

/// Go asynq's reads of the same queue of many groups, as a sentence to append, when the run has
/// their twin.
fn go_reads(rows: &Rows) -> String {
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
fn go_many_queues(rows: &Rows) -> String {
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
fn go_growth(rows: &Rows, small: &str, large: &str) -> String {
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
fn go_pickup(rows: &Rows, scenario: &str) -> String {
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
fn go_idle(rows: &Rows, scenarios: &[&str]) -> String {
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
fn go_bulk(rows: &Rows) -> String {
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

/// The checks as a Markdown table.
pub(crate) fn markdown(checks: &[Check]) -> String {
    let mut md = String::from("| target | measured | verdict | context |\n|---|---|---|---|\n");
    for check in checks {
        let verdict = match check.met {
            Some(true) => "met",
            Some(false) => "missed",
            None => "not measured",
        };
        let _ = writeln!(md, "| {} | {} | {verdict} | {} |", check.target, check.measured, check.context);
    }
    md
}

/// The workflow issue's scale target: a fan-out of 10 000 tasks with one fan-in callback costs
/// at most twice a plain task's Redis CPU and commands per member, and no command blocks Redis
/// for 10 ms.
const WORKFLOW_TARGET: &str = "a 10 000-member fan-out with a fan-in callback: ≤ 2× a plain task's Redis CPU and \
     commands per member, no Redis command of 10 ms";

fn workflow_check(rows: &Rows) -> Check {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(scenario: &str, edit: impl FnOnce(&mut Row)) -> Row {
        let mut row = Row {
            scenario: scenario.to_owned(),
            runs: 1,
            concurrency: None,
            tasks: 1,
            tasks_per_s: None,
            pickup_p50_ms: None,
            pickup_p99_ms: None,
            offered_per_s: None,
            redis_cpu_us_per_task: None,
            redis_cmds_per_task: None,
            redis_cmds_per_s: None,
            client_cpu_s: None,
            peak_rss_mb: None,
            longest_command_ms: None,
            redis_main_thread_cpu_us_per_task: None,
            redis_data_cmd_us_per_task: None,
            cmds_by_command: Default::default(),
            servers_ls_ms: None,
            max_running: None,
            redis_cpu_pct: None,
            reads_ms: Default::default(),
            longest_command: None,
        };
        edit(&mut row);
        row
    }

    fn verdict(checks: &[Check], target_start: &str) -> Option<bool> {
        checks.iter().find(|c| c.target.starts_with(target_start)).expect("a check").met
    }

    #[test]
    fn each_target_is_met_missed_or_not_measured_from_the_rows() {
        let rows = vec![
            row("enqueue-batch-100", |r| {
                (r.redis_cpu_us_per_task, r.tasks_per_s) = (Some(2.0), Some(120_000.0));
                (r.redis_data_cmd_us_per_task, r.redis_cmds_per_task) = (Some(1.5), Some(1.04));
                r.cmds_by_command.insert("evalsha".into(), 0.01);
            }),
            row("drain-c100", |r| {
                (r.redis_cpu_us_per_task, r.peak_rss_mb) = (Some(2.1), Some(12.0));
                (r.redis_data_cmd_us_per_task, r.redis_cmds_per_task) = (Some(2.0), Some(4.15));
                r.cmds_by_command.insert("evalsha".into(), 0.02);
            }),
            row("baseline-redis-call-from-lua", |r| {
                (r.redis_cpu_us_per_task, r.redis_data_cmd_us_per_task) = (Some(0.38), Some(0.08));
            }),
            row("drain-c10", |r| r.tasks_per_s = Some(30_000.0)),
            row("peer-drain-c10", |r| r.tasks_per_s = Some(2_500.0)),
            row("go-drain-c10", |r| r.tasks_per_s = Some(10_000.0)),
            row("go-enqueue", |r| {
                (r.tasks, r.tasks_per_s, r.redis_cpu_us_per_task) = (1_000, Some(6_000.0), Some(50.0));
                (r.client_cpu_s, r.redis_cmds_per_task) = (Some(0.062), Some(4.0));
            }),
            row("enqueue", |r| {
                (r.tasks, r.tasks_per_s, r.redis_cpu_us_per_task) = (1_000, Some(7_000.0), Some(52.0));
                (r.client_cpu_s, r.redis_cmds_per_task) = (Some(0.048), Some(5.0));
                r.cmds_by_command.insert("evalsha".into(), 1.0);
            }),
            row("pickup-latency-c10", |r| (r.pickup_p50_ms, r.pickup_p99_ms) = (Some(0.6), Some(12.0))),
        ];
        let checks = check(&rows, true);
        assert_eq!(verdict(&checks, "Redis CPU"), Some(true));
        let redis_cpu = checks.iter().find(|c| c.target.starts_with("Redis CPU")).unwrap();
        assert!(
            redis_cpu.context.starts_with("3.5 µs of it is spent inside the data commands"),
            "{}",
            redis_cpu.context
        );
        assert!(
            redis_cpu.context.contains("a lifecycle makes 5.2 per task: 1.5 µs"),
            "1.03 + 4.13 calls at 0.30 µs: {}",
            redis_cpu.context
        );
        let mut slow_scripts = rows.clone();
        slow_scripts[1].redis_cpu_us_per_task = Some(3.0);
        assert_eq!(verdict(&check(&slow_scripts, true), "Redis CPU"), Some(false), "5.0 µs is 1.43× the data commands");
        assert_eq!(verdict(&checks, "processing ≥ 10×"), Some(true));
        assert_eq!(verdict(&checks, "processing ≥ 4× Go"), Some(false), "3×");
        assert_eq!(verdict(&checks, "enqueue one at a time"), Some(false), "1.17× Go's, and no spinning row");
        let enqueue = checks.iter().find(|c| c.target.starts_with("enqueue one at a time")).unwrap();
        assert_eq!(
            enqueue.context,
            "Redis CPU per enqueue: ours 52.0 µs, Go's 50.0 µs; Redis commands per enqueue: ours 5.0, Go's 4.0; \
             client CPU (the peer's: its whole process) per enqueue: ours 48.0 µs, Go's 62.0 µs"
        );
        let mut spinning = rows.clone();
        spinning.push(row(ENQUEUE_SPIN_WAIT, |r| {
            (r.tasks, r.tasks_per_s, r.redis_cpu_us_per_task, r.client_cpu_s) =
                (1_000, Some(9_000.0), Some(30.0), Some(0.055));
        }));
        let checks_spinning = check(&spinning, true);
        assert_eq!(verdict(&checks_spinning, "enqueue one at a time"), Some(true), "1.5× Go's when spinning");
        let enqueue = checks_spinning.iter().find(|c| c.target.starts_with("enqueue one at a time")).unwrap();
        assert_eq!(
            enqueue.measured,
            "`enqueue` 7000/s (1.17× `go-enqueue` 6000/s); `enqueue-spin-wait` 9000/s (1.50× `go-enqueue` 6000/s); \
             1.00 script calls and 0.00 SADD per task"
        );
        assert!(enqueue.context.ends_with("Redis CPU 30.0 µs, client CPU 55.0 µs per enqueue"), "{}", enqueue.context);
        assert_eq!(verdict(&checks, "batch enqueue"), Some(false));
        assert_eq!(verdict(&checks, "pickup"), Some(false), "p99 over 10 ms");
        assert_eq!(verdict(&checks, "idle"), None);
        assert_eq!(verdict(&checks, "server ≤ 50 MB"), Some(true));
        assert_eq!(verdict(&check(&rows[..4], true), "processing ≥ 4× Go"), None, "no Go rows");
        let halting = check(&rows, false);
        let enqueue = halting.iter().find(|c| c.target.starts_with("enqueue one at a time")).unwrap();
        assert!(enqueue.context.ends_with("`--awake` measures without them"), "{}", enqueue.context);
        for target in ["drain with 1 000 000", "tasks failing for good", "50 idle servers", "a storm of scheduled"] {
            assert_eq!(verdict(&checks, target), None, "{target}: no rows");
        }
        let table = markdown(&checks);
        assert_eq!(table.lines().count(), checks.len() + 2);
        assert!(table.contains("| missed |") && table.contains("| not measured |"));
    }

    #[test]
    fn streaming_targets_are_met_or_missed_from_their_rows() {
        let mut rows = vec![
            row(STREAMS[1], |r| {
                (r.redis_cpu_us_per_task, r.offered_per_s, r.tasks_per_s) =
                    (Some(24.0), Some(19_990.0), Some(19_900.0));
            }),
            row("pickup-latency-c10", |r| {
                r.redis_cmds_per_task = Some(12.0);
                r.cmds_by_command.insert("evalsha".into(), 3.0);
                r.cmds_by_command.insert("info".into(), 0.001);
            }),
        ];
        let checks = check(&rows, true);
        assert_eq!(verdict(&checks, "producers and a server streaming"), Some(true));
        assert_eq!(verdict(&checks, "an idle wake-up"), Some(true));
        let wake = checks.iter().find(|c| c.target.starts_with("an idle wake-up")).unwrap();
        assert!(wake.context.ends_with("by command: evalsha 3.00"), "{}", wake.context);
        rows[0].offered_per_s = Some(15_000.0);
        rows[1].redis_cmds_per_task = Some(24.0);
        let checks = check(&rows, true);
        assert_eq!(verdict(&checks, "producers and a server streaming"), Some(false), "the load was not offered");
        assert_eq!(verdict(&checks, "an idle wake-up"), Some(false));
        assert_eq!(verdict(&check(&[], true), "producers and a server streaming"), None);
        let mut with_go = rows.clone();
        with_go.push(row(&go(STREAMS[1]), |r| {
            (r.offered_per_s, r.tasks_per_s, r.redis_cpu_us_per_task) = (Some(19_990.0), Some(8_000.0), Some(60.0));
            (r.pickup_p50_ms, r.pickup_p99_ms) = (Some(420.0), Some(860.0));
        }));
        let checks = check(&with_go, true);
        let streaming = checks.iter().find(|c| c.target.starts_with("producers and a server streaming")).unwrap();
        assert!(
            streaming.context.contains(
                "`go-stream-20000`: offered 19990/s, ran 8000/s, 60.0 µs and – commands per task, pickup p50/p99 \
                 420.00/860.00 ms"
            ),
            "{}",
            streaming.context
        );
    }

    #[test]
    fn size_axis_targets_are_met_or_missed_from_their_rows() {
        let longest = |ms: f64, words: &'static str| {
            move |r: &mut Row| {
                r.longest_command_ms = Some(ms);
                r.longest_command = (!words.is_empty()).then(|| words.to_owned());
            }
        };
        let with = |cpu: f64, ms: f64| {
            move |r: &mut Row| {
                (r.redis_cpu_us_per_task, r.tasks_per_s, r.longest_command_ms) = (Some(cpu), Some(50_000.0), Some(ms));
            }
        };
        let mut rows = vec![
            row(DEEP_BACKLOG_DRAINS[0], with(10.0, 0.0)),
            row(DEEP_BACKLOG_DRAINS[1], with(11.0, 0.0)),
            row(DEEP_BACKLOG_DRAINS[2], with(12.0, 2.0)),
            row(FAIL_INTO_EMPTY_ARCHIVE, with(20.0, 0.0)),
            row(FAIL_INTO_FULL_ARCHIVE, |r| {
                with(30.0, 0.0)(r);
                longest(12.5, "EVALSHA 01234567… 10 asynq:{default}:active")(r);
                r.cmds_by_command.insert("zremrangebyrank".into(), 1.0);
            }),
            row(IDLE_SERVERS[0], |r| (r.redis_cmds_per_s, r.servers_ls_ms) = (Some(10.0), Some(0.5))),
            row(IDLE_SERVERS[2], |r| (r.redis_cmds_per_s, r.servers_ls_ms) = (Some(540.0), Some(20.0))),
            row(SCHEDULED_STORM, |r| {
                (r.pickup_p50_ms, r.pickup_p99_ms, r.tasks_per_s) = (Some(1.0), Some(4.0), Some(100_000.0));
                longest(1.5, "EVALSHA 89abcdef… 5 asynq:{default}:scheduled")(r);
            }),
        ];
        let checks = check(&rows, true);
        assert_eq!(verdict(&checks, "drain with 1 000 000"), Some(true), "1.2×");
        let archive = checks.iter().find(|c| c.target.starts_with("tasks failing for good")).unwrap();
        assert_eq!(archive.met, Some(false), "1.5× and a 12.5 ms command");
        assert!(
            archive
                .context
                .contains("`EVALSHA 01234567… 10 asynq:{default}:active` in `fail-for-good-into-full-archive`")
        );
        assert!(archive.context.contains("zremrangebyrank +1.00"), "{}", archive.context);
        assert_eq!(verdict(&checks, "50 idle servers"), Some(true), "540 ≤ 550");
        assert_eq!(verdict(&checks, "a storm of scheduled"), Some(true));
        rows[6].servers_ls_ms = Some(60.0);
        rows[7].pickup_p99_ms = Some(11.0);
        rows[2].redis_cpu_us_per_task = Some(13.0);
        let checks = check(&rows, true);
        assert_eq!(verdict(&checks, "drain with 1 000 000"), Some(false), "1.3×");
        assert_eq!(verdict(&checks, "50 idle servers"), Some(false), "Inspector::servers() 60 ms");
        assert_eq!(verdict(&checks, "a storm of scheduled"), Some(false), "p99 11 ms");
        let storm = checks.iter().find(|c| c.target.starts_with("a storm of scheduled")).unwrap();
        assert!(storm.context.contains("none of 1 ms or more") || storm.context.contains("asynq:{default}:scheduled"));
        rows.push(row(&go(FAIL_INTO_EMPTY_ARCHIVE), with(40.0, 1.0)));
        rows.push(row(&go(FAIL_INTO_FULL_ARCHIVE), with(60.0, 3.5)));
        let checks = check(&rows, true);
        let archive = checks.iter().find(|c| c.target.starts_with("tasks failing for good")).unwrap();
        assert!(
            archive
                .context
                .ends_with("; Go asynq, side by side: 1.50× (60.0 µs against 40.0 µs), longest command 3.5 ms"),
            "{}",
            archive.context
        );
        assert_eq!(archive.met, Some(false), "Go's rows do not change our verdict");
    }

    #[test]
    fn bulk_actions_are_held_to_the_longest_command() {
        let bulk = |ms: f64| move |r: &mut Row| (r.tasks_per_s, r.longest_command_ms) = (Some(200_000.0), Some(ms));
        let mut rows: Vec<Row> = BULK_ACTIONS.iter().map(|name| row(name, bulk(3.0))).collect();
        assert_eq!(verdict(&check(&rows, true), "bulk operator actions"), Some(true));
        rows[2].longest_command_ms = Some(12.0);
        assert_eq!(verdict(&check(&rows, true), "bulk operator actions"), Some(false));
        rows.extend(BULK_ACTIONS.iter().map(|name| row(&go(name), bulk(900.0))));
        rows[BULK_ACTIONS.len()].longest_command_ms = Some(950.0);
        let checks = check(&rows, true);
        let bulk_check = checks.iter().find(|c| c.target.starts_with("bulk operator actions")).unwrap();
        assert!(
            bulk_check.context.contains("Go asynq, side by side: `go-bulk-archive-all` 200000/s")
                && bulk_check
                    .context
                    .ends_with("longest command 950.0 ms (none of 1 ms or more in `go-bulk-archive-all`)"),
            "{}",
            bulk_check.context
        );
        assert_eq!(verdict(&checks, "bulk operator actions"), Some(false), "Go's rows do not count: ours 12 ms");
        rows.truncate(BULK_ACTIONS.len() - 1);
        assert_eq!(verdict(&check(&rows, true), "bulk operator actions"), None, "one action not run");
    }

    #[test]
    fn go_twins_join_the_producer_and_group_targets_as_context_only() {
        let rows = vec![
            row(ENQUEUE_CONCURRENT, |r| (r.tasks_per_s, r.redis_cpu_us_per_task) = (Some(160_000.0), Some(5.0))),
            row(&go(ENQUEUE_CONCURRENT), |r| (r.tasks_per_s, r.redis_cpu_us_per_task) = (Some(40_000.0), Some(30.0))),
            row(IDLE_AGGREGATOR, |r| {
                (r.redis_cpu_pct, r.redis_cmds_per_s, r.longest_command_ms) = (Some(0.2), Some(56.0), Some(1.2));
            }),
            row(&go(IDLE_AGGREGATOR), |r| {
                (r.redis_cpu_pct, r.redis_cmds_per_s, r.longest_command_ms) = (Some(35.0), Some(900.0), Some(310.0));
            }),
            row(GROUP_READS, |r| {
                r.reads_ms = [("queue_info".to_owned(), 0.5), ("queues_and_info".to_owned(), 0.9)].into();
                r.longest_command_ms = Some(2.9);
            }),
            row(&go(GROUP_READS), |r| {
                r.reads_ms = [("queue_info".to_owned(), 460.0), ("groups".to_owned(), 240.0)].into();
                r.longest_command_ms = Some(455.0);
            }),
        ];
        let checks = check(&rows, true);
        let context = |start: &str| checks.iter().find(|c| c.target.starts_with(start)).unwrap().context.clone();
        assert_eq!(verdict(&checks, "64 concurrent producers"), Some(true));
        assert!(
            context("64 concurrent")
                .ends_with("Go asynq, side by side: 40000/s at 30.0 µs (each enqueue its own round trip)")
        );
        assert_eq!(verdict(&checks, "an idle group aggregator"), Some(true), "Go's 310 ms is context, not ours");
        assert!(
            context("an idle group aggregator")
                .ends_with("; Go asynq, side by side: Redis CPU 35.00 %, 900 commands/s, longest command 310.0 ms")
        );
        assert_eq!(verdict(&checks, "operator reads"), Some(true));
        assert!(
            context("operator reads").ends_with("`Groups`): 460.0 ms, –, 240.0 ms; longest command 455.0 ms"),
            "{}",
            context("operator reads")
        );
    }

    #[test]
    fn the_many_queues_target_sets_go_beside_ours_when_the_run_has_it() {
        let rows = vec![
            row(MANY_QUEUES_DRAIN, |r| r.tasks_per_s = Some(40_000.0)),
            row("drain-c100", |r| r.tasks_per_s = Some(50_000.0)),
            row(MANY_QUEUES_IDLE, |r| r.redis_cmds_per_s = Some(2.5)),
            row(MANY_QUEUES_PICKUP, |r| r.pickup_p99_ms = Some(1.5)),
        ];
        let context = |rows: &[Row]| {
            let checks = check(rows, true);
            checks.iter().find(|c| c.target.starts_with("1 000 queues")).unwrap().context.clone()
        };
        assert!(!context(&rows).contains("Go"));
        let mut with_go = rows.clone();
        with_go.push(row(&go(MANY_QUEUES_DRAIN), |r| r.tasks_per_s = Some(30.0)));
        with_go.push(row(&go("drain-c100"), |r| r.tasks_per_s = Some(12_000.0)));
        assert!(
            context(&with_go)
                .ends_with("; Go asynq, side by side: 0.003× (30/s beside 999 empty queues, 12000/s alone)"),
            "{}",
            context(&with_go)
        );
    }
}
