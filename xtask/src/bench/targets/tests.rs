//! The targets' verdicts from made-up rows.

use super::super::peer::go;
use super::super::report::Row;
use super::super::scenarios::{
    BULK_ACTIONS, DEEP_BACKLOG_DRAINS, ENQUEUE_CONCURRENT, ENQUEUE_SPIN_WAIT, FAIL_INTO_EMPTY_ARCHIVE,
    FAIL_INTO_FULL_ARCHIVE, GROUP_READS, IDLE_AGGREGATOR, IDLE_SERVERS, MANY_QUEUES_DRAIN, MANY_QUEUES_IDLE,
    MANY_QUEUES_PICKUP, SCHEDULED_STORM, STREAMS,
};
use super::{Check, check, markdown};

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
    let checks = check(&rows, true, 16);
    assert_eq!(verdict(&checks, "Redis CPU"), Some(true));
    let redis_cpu = checks.iter().find(|c| c.target.starts_with("Redis CPU")).unwrap();
    assert!(redis_cpu.context.starts_with("3.5 µs of it is spent inside the data commands"), "{}", redis_cpu.context);
    assert!(
        redis_cpu.context.contains("a lifecycle makes 5.2 per task: 1.5 µs"),
        "1.03 + 4.13 calls at 0.30 µs: {}",
        redis_cpu.context
    );
    let mut slow_scripts = rows.clone();
    slow_scripts[1].redis_cpu_us_per_task = Some(3.0);
    assert_eq!(verdict(&check(&slow_scripts, true, 16), "Redis CPU"), Some(false), "5.0 µs is 1.43× the data commands");
    assert_eq!(verdict(&checks, "processing ≥ 10×"), Some(true));
    assert_eq!(verdict(&checks, "processing ≥ 4× Go"), Some(false), "3×");
    assert_eq!(verdict(&checks, "enqueue one at a time"), Some(false), "1.17× Go's on 16 CPUs");
    let small = check(&rows, true, 2);
    assert_eq!(verdict(&small, "enqueue one at a time"), Some(true), "1.17× Go's on 2 CPUs, Redis CPU within 5 %");
    let mut costly = rows.clone();
    costly.iter_mut().find(|r| r.scenario == "enqueue").unwrap().redis_cpu_us_per_task = Some(53.0);
    assert_eq!(verdict(&check(&costly, true, 2), "enqueue one at a time"), Some(false), "53 µs is over 1.05× Go's 50");
    let enqueue = checks.iter().find(|c| c.target.starts_with("enqueue one at a time")).unwrap();
    assert_eq!(
        enqueue.context,
        "the goal on this machine of 16 CPUs: 1.2× Go's rate; Redis CPU per enqueue: ours 52.0 µs, Go's 50.0 µs; Redis commands per enqueue: ours 5.0, Go's 4.0; \
         client CPU (the peer's: its whole process) per enqueue: ours 48.0 µs, Go's 62.0 µs"
    );
    let mut spinning = rows.clone();
    spinning.push(row(ENQUEUE_SPIN_WAIT, |r| {
        (r.tasks, r.tasks_per_s, r.redis_cpu_us_per_task, r.client_cpu_s) =
            (1_000, Some(9_000.0), Some(30.0), Some(0.055));
    }));
    let checks_spinning = check(&spinning, true, 16);
    assert_eq!(verdict(&checks_spinning, "enqueue one at a time"), Some(false), "spinning is opt-in: not counted");
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
    assert_eq!(verdict(&check(&rows[..4], true, 16), "processing ≥ 4× Go"), None, "no Go rows");
    let halting = check(&rows, false, 16);
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
            (r.redis_cpu_us_per_task, r.offered_per_s, r.tasks_per_s) = (Some(24.0), Some(19_990.0), Some(19_900.0));
        }),
        row("pickup-latency-c10", |r| {
            r.redis_cmds_per_task = Some(12.0);
            r.cmds_by_command.insert("evalsha".into(), 3.0);
            r.cmds_by_command.insert("info".into(), 0.001);
        }),
    ];
    let checks = check(&rows, true, 16);
    assert_eq!(verdict(&checks, "producers and a server streaming"), Some(true));
    assert_eq!(verdict(&checks, "an idle wake-up"), Some(true));
    let wake = checks.iter().find(|c| c.target.starts_with("an idle wake-up")).unwrap();
    assert!(wake.context.ends_with("by command: evalsha 3.00"), "{}", wake.context);
    rows[0].offered_per_s = Some(15_000.0);
    rows[1].redis_cmds_per_task = Some(24.0);
    let checks = check(&rows, true, 16);
    assert_eq!(verdict(&checks, "producers and a server streaming"), Some(false), "the load was not offered");
    assert_eq!(verdict(&checks, "an idle wake-up"), Some(false));
    assert_eq!(verdict(&check(&[], true, 16), "producers and a server streaming"), None);
    let mut with_go = rows.clone();
    with_go.push(row(&go(STREAMS[1]), |r| {
        (r.offered_per_s, r.tasks_per_s, r.redis_cpu_us_per_task) = (Some(19_990.0), Some(8_000.0), Some(60.0));
        (r.pickup_p50_ms, r.pickup_p99_ms) = (Some(420.0), Some(860.0));
    }));
    let checks = check(&with_go, true, 16);
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
    let checks = check(&rows, true, 16);
    assert_eq!(verdict(&checks, "drain with 1 000 000"), Some(true), "1.2×");
    let archive = checks.iter().find(|c| c.target.starts_with("tasks failing for good")).unwrap();
    assert_eq!(archive.met, Some(false), "1.5× and a 12.5 ms command");
    assert!(
        archive.context.contains("`EVALSHA 01234567… 10 asynq:{default}:active` in `fail-for-good-into-full-archive`")
    );
    assert!(archive.context.contains("zremrangebyrank +1.00"), "{}", archive.context);
    assert_eq!(verdict(&checks, "50 idle servers"), Some(true), "540 ≤ 550");
    assert_eq!(verdict(&checks, "a storm of scheduled"), Some(true));
    rows[6].servers_ls_ms = Some(60.0);
    rows[7].pickup_p99_ms = Some(11.0);
    rows[2].redis_cpu_us_per_task = Some(13.0);
    let checks = check(&rows, true, 16);
    assert_eq!(verdict(&checks, "drain with 1 000 000"), Some(false), "1.3×");
    assert_eq!(verdict(&checks, "50 idle servers"), Some(false), "Inspector::servers() 60 ms");
    assert_eq!(verdict(&checks, "a storm of scheduled"), Some(false), "p99 11 ms");
    let storm = checks.iter().find(|c| c.target.starts_with("a storm of scheduled")).unwrap();
    assert!(storm.context.contains("none of 1 ms or more") || storm.context.contains("asynq:{default}:scheduled"));
    rows.push(row(&go(FAIL_INTO_EMPTY_ARCHIVE), with(40.0, 1.0)));
    rows.push(row(&go(FAIL_INTO_FULL_ARCHIVE), with(60.0, 3.5)));
    let checks = check(&rows, true, 16);
    let archive = checks.iter().find(|c| c.target.starts_with("tasks failing for good")).unwrap();
    assert!(
        archive.context.ends_with("; Go asynq, side by side: 1.50× (60.0 µs against 40.0 µs), longest command 3.5 ms"),
        "{}",
        archive.context
    );
    assert_eq!(archive.met, Some(false), "Go's rows do not change our verdict");
}

#[test]
fn bulk_actions_are_held_to_the_longest_command() {
    let bulk = |ms: f64| move |r: &mut Row| (r.tasks_per_s, r.longest_command_ms) = (Some(200_000.0), Some(ms));
    let mut rows: Vec<Row> = BULK_ACTIONS.iter().map(|name| row(name, bulk(3.0))).collect();
    assert_eq!(verdict(&check(&rows, true, 16), "bulk operator actions"), Some(true));
    rows[2].longest_command_ms = Some(12.0);
    assert_eq!(verdict(&check(&rows, true, 16), "bulk operator actions"), Some(false));
    rows.extend(BULK_ACTIONS.iter().map(|name| row(&go(name), bulk(900.0))));
    rows[BULK_ACTIONS.len()].longest_command_ms = Some(950.0);
    let checks = check(&rows, true, 16);
    let bulk_check = checks.iter().find(|c| c.target.starts_with("bulk operator actions")).unwrap();
    assert!(
        bulk_check.context.contains("Go asynq, side by side: `go-bulk-archive-all` 200000/s")
            && bulk_check.context.ends_with("longest command 950.0 ms (none of 1 ms or more in `go-bulk-archive-all`)"),
        "{}",
        bulk_check.context
    );
    assert_eq!(verdict(&checks, "bulk operator actions"), Some(false), "Go's rows do not count: ours 12 ms");
    rows.truncate(BULK_ACTIONS.len() - 1);
    assert_eq!(verdict(&check(&rows, true, 16), "bulk operator actions"), None, "one action not run");
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
    let checks = check(&rows, true, 16);
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
        let checks = check(rows, true, 16);
        checks.iter().find(|c| c.target.starts_with("1 000 queues")).unwrap().context.clone()
    };
    assert!(!context(&rows).contains("Go"));
    let mut with_go = rows.clone();
    with_go.push(row(&go(MANY_QUEUES_DRAIN), |r| r.tasks_per_s = Some(30.0)));
    with_go.push(row(&go("drain-c100"), |r| r.tasks_per_s = Some(12_000.0)));
    assert!(
        context(&with_go).ends_with("; Go asynq, side by side: 0.003× (30/s beside 999 empty queues, 12000/s alone)"),
        "{}",
        context(&with_go)
    );
}

#[test]
fn the_other_queues_are_held_to_their_targets_and_join_enqueue_and_pickup_as_context() {
    use super::super::others::{APALIS_ENQUEUE, APALIS_PICKUP, SIDEKIQ_ENQUEUE, SIDEKIQ_PICKUP};
    let pickup = |name: &str, p50: f64, p99: f64| {
        row(name, |r| (r.pickup_p50_ms, r.pickup_p99_ms, r.tasks) = (Some(p50), Some(p99), 200))
    };
    let enqueue = |name: &str, rate: f64| {
        row(name, |r| {
            (r.tasks_per_s, r.redis_cpu_us_per_task, r.redis_cmds_per_task) = (Some(rate), Some(9.5), Some(1.0))
        })
    };
    let context =
        |checks: &[Check], start: &str| checks.iter().find(|c| c.target.starts_with(start)).unwrap().context.clone();
    let without = check(&[enqueue("enqueue", 9_000.0), pickup("pickup-latency-c10", 0.5, 1.5)], true, 2);
    assert_eq!(verdict(&without, "enqueue one at a time: ≥ 1.0× apalis's"), None);
    assert_eq!(verdict(&without, "pickup with idle workers: p99 below rusty-sidekiq's"), None);
    assert_eq!(context(&without, "enqueue one at a time, by default"), "Go's rate needs `--go`");
    assert_eq!(context(&without, "pickup with idle workers: p50"), "woken by push (`pickup-latency-c10`)");

    let rows = vec![
        enqueue("enqueue", 9_000.0),
        pickup("pickup-latency-c10", 0.5, 1.5),
        enqueue(APALIS_ENQUEUE, 6_000.0),
        enqueue(SIDEKIQ_ENQUEUE, 3_000.0),
        pickup(APALIS_PICKUP, 0.45, 29_939.3),
        pickup(SIDEKIQ_PICKUP, 0.78, 3.89),
    ];
    let checks = check(&rows, true, 2);
    assert_eq!(verdict(&checks, "enqueue one at a time: ≥ 1.0× apalis's"), Some(true));
    assert_eq!(verdict(&checks, "pickup with idle workers: p99 below rusty-sidekiq's"), Some(true));
    assert_eq!(
        context(&checks, "enqueue one at a time, by default"),
        "Go's rate needs `--go`; side by side: apalis 6000/s (`apalis-enqueue`, ours 1.50×; Redis CPU 9.5 µs, 1.0 \
         commands per enqueue), rusty-sidekiq 3000/s (`sidekiq-enqueue`, ours 3.00×; Redis CPU 9.5 µs, 1.0 commands \
         per enqueue)"
    );
    assert_eq!(
        context(&checks, "pickup with idle workers: p50"),
        "woken by push (`pickup-latency-c10`); side by side: apalis p50 0.45 ms, p99 29939.30 ms (200 samples, \
         `apalis-pickup-latency-c10`), rusty-sidekiq p50 0.78 ms, p99 3.89 ms (200 samples, `sidekiq-pickup-latency-c10`)"
    );

    let slower = check(
        &[
            enqueue("enqueue", 5_000.0),
            pickup("pickup-latency-c10", 0.5, 4.0),
            enqueue(APALIS_ENQUEUE, 6_000.0),
            pickup(SIDEKIQ_PICKUP, 0.78, 3.89),
        ],
        true,
        2,
    );
    assert_eq!(verdict(&slower, "enqueue one at a time: ≥ 1.0× apalis's"), Some(false));
    assert_eq!(verdict(&slower, "pickup with idle workers: p99 below rusty-sidekiq's"), Some(false));
}
