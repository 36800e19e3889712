//! Bad input on the command line: an unknown task state is a usage error (exit 2) that lists the
//! valid states, and nothing is read or written; random command lines never panic.

mod common;

use asynq_tests::RedisServer;
use common::asynq_at;

#[test]
fn an_unknown_state_exits_2_and_lists_the_valid_ones() {
    let server = RedisServer::start();
    for command in [["task", "ls"], ["task", "runall"], ["task", "archiveall"], ["task", "deleteall"]] {
        let run = asynq_at(&server, &[command[0], command[1], "-q", "default", "-s", "bogus"]);
        assert_eq!(run.code, 2, "{run:#?}");
        assert!(run.stderr.contains("\"bogus\""), "{}", run.stderr);
        for state in ["active", "pending", "scheduled", "retry", "archived", "completed", "aggregating"] {
            assert!(run.stderr.contains(state), "{state} missing from: {}", run.stderr);
        }
    }
    let keys = server.command(&["DBSIZE"]).unwrap();
    assert_eq!(keys.as_int(), Some(0), "nothing was written");
}

/// Random command lines from the CLI's own words and arbitrary values, against a server with a
/// few tasks: each ends with one of the documented exit codes, never a panic. (`dash`, `web`
/// and `metrics` run until stopped, so they are left out.)
#[test]
fn random_command_lines_end_with_a_documented_exit_code() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    const COMMANDS: [&[&str]; 20] = [
        &["stats"],
        &["queue", "ls"],
        &["queue", "inspect"],
        &["queue", "history"],
        &["queue", "pause"],
        &["queue", "unpause"],
        &["queue", "remove"],
        &["task", "ls"],
        &["task", "inspect"],
        &["task", "cancel"],
        &["task", "archive"],
        &["task", "delete"],
        &["task", "run"],
        &["task", "enqueue"],
        &["task", "runall"],
        &["task", "archiveall"],
        &["group", "ls"],
        &["server", "ls"],
        &["cron", "ls"],
        &["cron", "history"],
    ];
    const FLAGS: [&str; 16] = [
        "-q",
        "--queue",
        "-s",
        "--state",
        "-i",
        "--id",
        "-t",
        "-l",
        "--page",
        "--size",
        "--json",
        "--force",
        "-n",
        "--days",
        "--process_in",
        "--retry",
    ];
    let server = RedisServer::start();
    for args in [["task", "enqueue", "-t", "t", "-l", "p"], ["task", "enqueue", "-t", "u", "-l", "q"]] {
        asynq_at(&server, &args).ok();
    }
    let value = prop_oneof![
        proptest::sample::select(&["default", "pending", "archived", "1", "0", "-1", "99999999999999999999", "1h"][..])
            .prop_map(str::to_owned),
        "[ -~]{0,12}",
        any::<String>().prop_map(|s| s.chars().filter(|c| *c != '\0').take(12).collect()),
    ];
    let word = prop_oneof![2 => proptest::sample::select(&FLAGS[..]).prop_map(str::to_owned), 3 => value];
    let line = (proptest::sample::select(&COMMANDS[..]), proptest::collection::vec(word, 0..6));
    let mut runner = TestRunner::new(Config { cases: 64, failure_persistence: None, ..Config::default() });
    runner
        .run(&line, |(command, words)| {
            let mut args: Vec<&str> = command.to_vec();
            args.extend(words.iter().map(String::as_str));
            let run = asynq_at(&server, &args);
            prop_assert!((0..=5).contains(&run.code), "exit {} for {args:?}: {run:#?}", run.code);
            prop_assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
            Ok(())
        })
        .unwrap();
}
