//! How `asynq` fails: exit codes and the hints on stderr for an unknown queue or task, a bad or
//! unreachable URI, and bad flags; and that a password is never printed.

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
