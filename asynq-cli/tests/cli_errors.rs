//! How `asynq` fails: exit codes and the hints on stderr for an unknown queue or task (from every
//! command that takes a queue), a bad or unreachable URI, a database Redis does not have, and
//! bad flags; and that a password is never printed.

mod common;

use asynq_tests::RedisServer;
use common::{asynq, asynq_at};

#[test]
fn unknown_queues_and_tasks_exit_3_with_a_hint() {
    let server = RedisServer::start();
    let queue = asynq_at(&server, &["queue", "inspect", "nosuch"]);
    assert_eq!(queue.code, 3, "{queue:#?}");
    assert!(queue.stderr.contains("queue not found") && queue.stderr.contains("asynq queue ls"), "{}", queue.stderr);
    // As in Go, a queue may be paused before it exists, with a warning here.
    let pause = asynq_at(&server, &["queue", "pause", "nosuch"]).ok();
    assert!(pause.stderr.contains("does not exist"), "{}", pause.stderr);
    let task = asynq_at(&server, &["task", "enqueue", "-t", "t", "-l", "p", "--queue", "q1"]).ok();
    assert!(task.stdout.contains("q1"));
    let missing = asynq_at(&server, &["task", "inspect", "-q", "q1", "-i", "nosuch"]);
    assert_eq!(missing.code, 3, "{missing:#?}");
    assert!(missing.stderr.contains("asynq task ls"), "{}", missing.stderr);
}

/// Every command that reads or changes one queue, given the queue `nosuch`.
const ON_A_MISSING_QUEUE: [&[&str]; 17] = [
    &["queue", "inspect", "nosuch"],
    &["queue", "history", "nosuch"],
    &["queue", "unpause", "nosuch"],
    &["queue", "rm", "nosuch"],
    &["queue", "rm", "--force", "nosuch"],
    &["task", "ls", "-q", "nosuch", "-s", "pending"],
    &["task", "ls", "-q", "nosuch", "-s", "completed"],
    &["task", "ls", "-q", "nosuch", "-s", "aggregating", "-g", "g1"],
    &["task", "inspect", "-q", "nosuch", "-i", "t-1"],
    &["task", "archive", "-q", "nosuch", "-i", "t-1"],
    &["task", "delete", "-q", "nosuch", "-i", "t-1"],
    &["task", "run", "-q", "nosuch", "-i", "t-1"],
    &["task", "archiveall", "-q", "nosuch", "-s", "pending"],
    &["task", "deleteall", "-q", "nosuch", "-s", "archived"],
    &["task", "runall", "-q", "nosuch", "-s", "scheduled"],
    &["group", "ls", "-q", "nosuch"],
    &["group", "ls", "-q", "nosuch", "--json"],
];

#[test]
fn every_command_on_a_missing_queue_exits_3() {
    let server = RedisServer::start();
    asynq_at(&server, &["task", "enqueue", "-t", "t", "-l", "p", "--id", "t-1"]).ok();
    for command in ON_A_MISSING_QUEUE {
        let run = asynq_at(&server, command);
        assert_eq!(run.code, 3, "{command:?}: {run:#?}");
        assert!(run.stderr.contains("queue not found: \"nosuch\""), "{command:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{command:?} prints no result: {}", run.stdout);
    }
    let queues = asynq_at(&server, &["queue", "ls", "--json"]).ok().json();
    assert_eq!(queues, serde_json::json!([{"queue": "default"}]), "nothing created the queue");
    // A queue that exists is found, with or without groups.
    asynq_at(&server, &["group", "ls", "-q", "default"]).ok().shows(&["No groups found"]);
    // Several queues: each is reported, and a missing one decides the exit code.
    let mixed = asynq_at(&server, &["queue", "inspect", "default", "nosuch"]);
    assert_eq!(mixed.code, 3, "{mixed:#?}");
    mixed.shows(&["Name:    default"]);

    // The exception, as in Go: a queue may be paused before it exists (with a warning), and
    // resumed again; a missing queue that is not paused cannot be resumed.
    let paused = asynq_at(&server, &["queue", "pause", "later"]).ok();
    assert!(paused.stderr.contains("does not exist"), "{}", paused.stderr);
    asynq_at(&server, &["queue", "unpause", "later"]).ok().shows(&["Successfully unpaused queue \"later\""]);
    assert_eq!(asynq_at(&server, &["queue", "unpause", "later"]).code, 3);
    // An existing queue that is not paused is a failed precondition, not a missing queue.
    assert_eq!(asynq_at(&server, &["queue", "unpause", "default"]).code, 4);
}

#[test]
fn a_database_redis_does_not_have_is_a_usage_error_naming_it() {
    let server = RedisServer::start();
    let url = format!("redis://{}/16", server.addr());
    let runs = [
        (asynq_at(&server, &["--db", "99999", "stats"]), "99999"),
        (asynq_at(&server, &["-n", "16", "queue", "ls"]), "16"),
        (asynq(&["-u", &url, "queue", "ls"]), "16"),
    ];
    for (run, db) in &runs {
        assert_eq!(run.code, 2, "{run:#?}");
        assert!(run.stderr.contains(&format!("Redis refused to select database {db}")), "{}", run.stderr);
        assert!(run.stderr.contains("DB index is out of range"), "{}", run.stderr);
        assert!(!run.stderr.contains("cannot connect"), "Redis was reachable: {}", run.stderr);
    }
    asynq_at(&server, &["--db", "15", "queue", "ls"]).ok();
}

#[test]
fn bad_uris_are_usage_errors_and_unreachable_ones_exit_5() {
    let bad = asynq(&["-u", "nohost:notaport", "-p", "hunter2", "queue", "ls"]);
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(bad.stderr.contains("expected host:port"), "{}", bad.stderr);
    let scheme = asynq(&["-u", "ftp://127.0.0.1:1", "queue", "ls"]);
    assert_eq!(scheme.code, 2, "{scheme:#?}");
    assert!(scheme.stderr.contains("unknown scheme"), "{}", scheme.stderr);

    let unreachable = asynq(&["-u", "127.0.0.1:1", "-p", "hunter2", "stats"]);
    assert_eq!(unreachable.code, 5, "{unreachable:#?}");
    assert!(unreachable.stderr.contains("cannot connect to Redis"), "{}", unreachable.stderr);
    for run in [&bad, &unreachable] {
        assert!(!run.stderr.contains("hunter2") && !run.stdout.contains("hunter2"), "{run:#?}");
    }
}

#[test]
fn bad_flags_exit_2_before_connecting() {
    let short = asynq(&["-u", "127.0.0.1:1", "dash", "--refresh", "500ms"]);
    assert_eq!(short.code, 2, "{short:#?}");
    assert!(short.stderr.contains("minimum is 1s"), "{}", short.stderr);
    let page = asynq(&["task", "ls", "-q", "q", "-s", "pending", "--page", "0"]);
    assert_eq!(page.code, 2, "{page:#?}");
    let missing = asynq(&["task", "inspect", "-q", "q"]);
    assert_eq!(missing.code, 2, "{missing:#?}");
    let help = asynq(&["--help"]).ok();
    help.shows(&["Exit codes:", "5  cannot connect to Redis", "base64"]);
}

#[test]
fn a_password_never_shows_whether_it_is_right_or_wrong() {
    let server = RedisServer::start();
    let password = "Canary-Pa55-cli-41c";
    let rule = ["ACL", "SETUSER", "canary", "on", &format!(">{password}"), "~*", "&*", "+@all"];
    assert!(server.command(&rule).unwrap().is_ok());
    let addr = server.addr();
    let url = format!("redis://canary:{password}@{addr}");
    let wrong_url = format!("redis://canary:{password}-wrong@{addr}");
    let runs = [
        asynq(&["-u", &addr, "--username", "canary", "-p", password, "stats"]).ok(),
        asynq(&["-u", &url, "queue", "ls", "--json"]).ok(),
        asynq(&["-u", &url, "server", "ls"]).ok(),
        asynq(&["-u", &addr, "--username", "canary", "-p", &format!("{password}-wrong"), "stats"]),
        asynq(&["-u", &wrong_url, "queue", "ls", "--json"]),
        asynq(&["-u", &wrong_url, "task", "ls", "-q", "default", "-s", "pending"]),
    ];
    for run in &runs[3..] {
        assert_eq!(run.code, 5, "a wrong password cannot connect: {run:#?}");
        assert!(run.stderr.to_lowercase().contains("auth"), "{run:#?}");
    }
    for run in &runs {
        assert!(!run.stdout.contains(password) && !run.stderr.contains(password), "{run:#?}");
    }
}
