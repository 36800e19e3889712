//! Where the output goes: a reader that closed stdout (`asynq ... | head`) ends any command
//! quietly with exit 141, as documented in `asynq --help`; a stdout that cannot be written (a
//! full disk) is a failure (exit 1) that says so; neither is a panic.

mod common;

use asynq_tests::RedisServer;
use common::{asynq_at, asynq_with_stdout};

/// Commands that print tables, headings, lines or JSON, and clap's help and version.
const PRINTING: [&[&str]; 14] = [
    &["stats"],
    &["queue", "ls"],
    &["queue", "inspect", "default"],
    &["queue", "history", "default", "-x", "90"],
    &["queue", "history", "default", "--json"],
    &["task", "ls", "-q", "default", "-s", "pending"],
    &["task", "ls", "-q", "default", "-s", "pending", "--json"],
    &["task", "inspect", "-q", "default", "-i", "t-1"],
    &["group", "ls", "-q", "default"],
    &["server", "ls"],
    &["cron", "ls", "--json"],
    &["version"],
    &["--help"],
    &["task", "ls", "--help"],
];

/// A server with one pending task `t-1` in queue `default`.
fn server() -> RedisServer {
    let server = RedisServer::start();
    asynq_at(&server, &["task", "enqueue", "-t", "t", "-l", "p", "--id", "t-1"]).ok();
    server
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_141() {
    let server = server();
    let addr = server.addr();
    for command in PRINTING {
        let mut args = vec!["-u", addr.as_str()];
        args.extend_from_slice(command);
        // The reading end is closed before the command starts, so its first write fails with
        // EPIPE, whatever the timing.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let run = asynq_with_stdout(&args, writer);
        assert_eq!(run.code, 141, "{command:?}: {run:#?}");
        assert!(run.stderr.is_empty(), "{command:?} ends quietly: {}", run.stderr);
    }
    // What a command does before printing is done: the task was run, only the report is lost.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let args = ["-u", addr.as_str(), "task", "archive", "-q", "default", "-i", "t-1"];
    assert_eq!(asynq_with_stdout(&args, writer).code, 141);
    let json = asynq_at(&server, &["task", "inspect", "-q", "default", "-i", "t-1", "--json"]).ok().json();
    assert_eq!(json["state"], "archived");
}

#[test]
fn a_full_stdout_is_a_failure_that_says_so() {
    let server = server();
    let addr = server.addr();
    for command in PRINTING {
        let mut args = vec!["-u", addr.as_str()];
        args.extend_from_slice(command);
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("Linux's /dev/full");
        let run = asynq_with_stdout(&args, full);
        assert_eq!(run.code, 1, "{command:?}: {run:#?}");
        assert!(run.stderr.contains("cannot write to stdout"), "{command:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{command:?}: {}", run.stderr);
    }
}
