//! The targets on enqueueing: one task at a time against Go asynq, in batches, and from many
//! producers sharing one client.

use super::super::peer::go;
use super::super::report::Row;
use super::super::scenarios::{ENQUEUE_CONCURRENT, ENQUEUE_SPIN_WAIT};
use super::{Check, Rows, client_cpu, data_commands, not_measured, redis_cpu, tasks_per_s};

/// One producer enqueueing one task at a time, against Go asynq's.
const ENQUEUE_TARGET: &str = "enqueue one at a time, by default (no spin wait): ≥ 1.0× Go asynq's rate on a machine \
                              of up to 4 CPUs, ≥ 1.2× on more, at no more Redis CPU per enqueue than Go's (within 5 %), \
                              one round trip per task, no per-call queue registration";

/// The most CPUs of a machine on which one-at-a-time enqueue need only match Go's rate: on
/// such a machine the round trip, not either client, sets the pace.
const SMALL_MACHINE_CPUS: usize = 4;

/// How far our Redis CPU per enqueue may exceed Go's before the target counts it as more: the
/// spread between rounds of one run.
const REDIS_CPU_TOLERANCE: f64 = 1.05;

pub(super) fn enqueue_check(rows: &Rows, ping_rate: Option<f64>, cpus_awake: bool, cpus: usize) -> Check {
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
    let others = super::others::enqueue_context(rows);
    let Some(go_rate) = go else {
        return Check {
            target: ENQUEUE_TARGET,
            measured,
            met: None,
            context: format!("Go's rate needs `--go`{others}"),
        };
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
    let goal = if cpus <= SMALL_MACHINE_CPUS { 1.0 } else { 1.2 };
    let redis_cpu_level = rows
        .get("enqueue", redis_cpu)
        .zip(rows.get("go-enqueue", redis_cpu))
        .is_none_or(|(ours, go)| ours <= go * REDIS_CPU_TOLERANCE);
    let met = one_round_trip && rate / go_rate >= goal && redis_cpu_level;
    let context = format!("the goal on this machine of {cpus} CPUs: {goal:.1}× Go's rate; {context}{others}");
    Check { target: ENQUEUE_TARGET, measured, met: Some(met), context }
}

/// Batch enqueue, in batches of 100, against this machine's pipelined PING rate.
pub(super) fn batch_check(rows: &Rows, pipelined_rate: Option<f64>) -> Check {
    match rows.get("enqueue-batch-100", tasks_per_s) {
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
    }
}

const CONCURRENT: &str = "64 concurrent producers sharing one client ≥ 150 000 tasks/s at ≤ 8 µs Redis CPU per task";

/// 64 producers sharing one client, against one producer and Go asynq.
pub(super) fn concurrent_check(rows: &Rows) -> Check {
    match (rows.get(ENQUEUE_CONCURRENT, tasks_per_s), rows.get(ENQUEUE_CONCURRENT, redis_cpu)) {
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
    }
}
