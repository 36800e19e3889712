//! Bad input on the command line: an unknown task state is a usage error (exit 2) that lists the
//! valid states, and nothing is read or written; a number past its flag's bound is a usage error
//! naming the bound, before anything is allocated or sent; and command lines generated from the
//! real command tree, with extreme numbers, always end with an exit code `asynq --help` documents,
//! never a panic.

mod common;

// The real command tree (clap types only), so the generated command lines follow it as it grows.
#[allow(dead_code, unused_imports)]
#[path = "../src/cli/mod.rs"]
mod cli;

use asynq_tests::RedisServer;
use common::{Run, asynq, asynq_at};

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

/// Asserts a usage error (exit 2) whose message names `bound`.
fn refused(run: &Run, bound: &str) {
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains(bound), "the message lacks the bound {bound:?}: {}", run.stderr);
}

#[test]
fn numbers_past_their_bounds_are_usage_errors_naming_the_bound() {
    // Refused before connecting: the address is unreachable, and nothing is allocated for them.
    let at = |args: &[&str]| {
        let mut full = vec!["-u", "127.0.0.1:1"];
        full.extend_from_slice(args);
        asynq(&full)
    };
    let ls = |flag: &str, value: &str| at(&["task", "ls", "-q", "default", "-s", "pending", flag, value]);
    refused(&at(&["queue", "history", "default", "-x", "4294967295"]), "1..=90");
    refused(&at(&["queue", "history", "default", "-x", "10000000"]), "1..=90");
    refused(&at(&["queue", "history", "default", "-x", "91"]), "1..=90");
    refused(&ls("--page", "1000001"), "1..=1000000");
    refused(&ls("--page", "18446744073709551616"), "1..=1000000");
    refused(&ls("--size", "10001"), "1..=10000");
    refused(&ls("--size", "4294967295"), "1..=10000");
    refused(&at(&["cron", "history", "entry-1", "--size", "10001"]), "1..=10000");
    refused(&at(&["cron", "history", "entry-1", "--page", "4294967295"]), "1..=1000000");
    refused(&at(&["--db", "2147483648", "stats"]), "0..=2147483647");
    refused(&at(&["--db=-1", "stats"]), "-1");
    refused(&at(&["task", "enqueue", "-t", "t", "-l", "p", "--retry", "2147483648"]), "0..=2147483647");
    refused(&at(&["dash", "--refresh", "2h"]), "maximum is 1h");
    refused(&at(&["web", "--refresh", "600h"]), "maximum is 1h");

    // At the bounds, against a server: no Lua error from huge page offsets, 90 days of history.
    let server = RedisServer::start();
    asynq_at(&server, &["task", "enqueue", "-t", "t", "-l", "p"]).ok();
    let last = ["task", "ls", "-q", "default", "-s", "pending", "--page", "1000000", "--size", "10000"];
    asynq_at(&server, &last).ok().shows(&["No pending tasks"]);
    let last = ["task", "ls", "-q", "default", "-s", "archived", "--page", "1000000", "--size", "10000"];
    asynq_at(&server, &last).ok().shows(&["No archived tasks"]);
    asynq_at(&server, &["cron", "history", "entry-1", "--page", "1000000", "--size", "10000"]).ok();
    let history = asynq_at(&server, &["queue", "history", "default", "-x", "90", "--json"]).ok().json();
    assert_eq!(history.as_array().map(Vec::len), Some(90), "{history}");
}

/// The exit codes `asynq --help` documents: the numbers opening the lines after `Exit codes:`.
fn documented_exit_codes() -> Vec<i32> {
    let help = asynq(&["--help"]).ok().stdout;
    let (_, list) = help.split_once("Exit codes:").expect("--help lists the exit codes");
    let codes: Vec<i32> = list.lines().filter_map(|line| line.split_whitespace().next()?.parse().ok()).collect();
    assert!(codes.contains(&0) && codes.contains(&5) && codes.contains(&141), "{codes:?} from:\n{list}");
    codes
}

/// A command that ends on its own: a path of subcommand names and the flags it takes.
#[derive(Debug, Clone)]
struct Leaf {
    /// Subcommand names from the root, each as one of its names or visible aliases.
    path: Vec<Vec<String>>,
    /// Its flags, each as its spellings (`--long`, `-s`) and whether it takes a value.
    flags: Vec<(Vec<String>, bool)>,
    /// Whether it takes positional arguments (queue names, task or entry IDs).
    positional: bool,
}

/// The spellings of a flag and whether it takes a value; `None` for a positional argument.
fn flag(arg: &clap::Arg) -> Option<(Vec<String>, bool)> {
    let mut spellings: Vec<String> = arg.get_long().map(|l| format!("--{l}")).into_iter().collect();
    spellings.extend(arg.get_short().map(|s| format!("-{s}")));
    (!spellings.is_empty()).then(|| (spellings, arg.get_action().takes_values()))
}

/// Every leaf command under `command`, but those that serve until stopped (`dash` needs a
/// terminal, `metrics` and `web` listen).
fn leaves(command: &clap::Command, path: &[Vec<String>], out: &mut Vec<Leaf>) {
    for sub in command.get_subcommands() {
        if ["dash", "metrics", "web"].contains(&sub.get_name()) {
            continue;
        }
        let mut names = vec![sub.get_name().to_owned()];
        names.extend(sub.get_visible_aliases().map(str::to_owned));
        let mut path = path.to_vec();
        path.push(names);
        if sub.has_subcommands() {
            leaves(sub, &path, out);
            continue;
        }
        let flags = sub.get_arguments().filter_map(flag).collect();
        let positional = sub.get_arguments().any(clap::Arg::is_positional);
        out.push(Leaf { path, flags, positional });
    }
}

/// Random command lines from the real command tree (every leaf command, its names and aliases,
/// its flags, and the global `--json` and `--db`), with values chosen to hit bounds and types:
/// 0, negatives, `u32::MAX`, `u64::MAX` and past them, queue names, states, durations, times,
/// and arbitrary text. Against a server with a few tasks, each run ends with a documented exit
/// code, not a panic nor a signal; never with exit 5 (Redis is reachable, so a 5 would be a
/// misclassified failure); and no raw Lua error reaches the user.
#[test]
fn command_lines_from_the_command_tree_end_with_a_documented_exit_code() {
    use clap::CommandFactory;
    use proptest::prelude::*;
    use proptest::sample::select;
    use proptest::test_runner::{Config, TestRunner};

    const NUMBERS: &[&str] = &[
        "0",
        "1",
        "-1",
        "30",
        "90",
        "91",
        "10000",
        "10001",
        "1000000",
        "1000001",
        "2147483647",
        "2147483648",
        "4294967295",
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "1e9",
        "1.5",
    ];
    const WORDS: &[&str] = &[
        "default",
        "critical",
        "nosuch",
        "pending",
        "active",
        "scheduled",
        "retry",
        "archived",
        "completed",
        "aggregating",
        "g1",
        "",
        "1s",
        "500ms",
        "2562047h",
        "25d",
        "-5s",
        "2026-11-22T03:24:56Z",
        "9999-12-31T23:59:59Z",
    ];

    let root = cli::Cli::command();
    let mut all = Vec::new();
    leaves(&root, &[], &mut all);
    assert!(all.len() >= 20, "the tree has its commands: {all:#?}");
    let globals: Vec<_> =
        root.get_arguments().filter(|a| ["json", "db"].contains(&a.get_id().as_str())).filter_map(flag).collect();
    assert_eq!(globals.len(), 2, "--json and --db are global flags");

    let value = || {
        prop_oneof![
            4 => select(NUMBERS).prop_map(str::to_owned),
            4 => select(WORDS).prop_map(str::to_owned),
            1 => "[ -~]{0,12}",
            1 => any::<String>().prop_map(|s| s.chars().filter(|c| *c != '\0').take(12).collect()),
        ]
    };
    // A flag, present with probability `p`, with its value as a word of its own or after `=` (so
    // negative numbers reach the flag's parser).
    let with_value = move |(spellings, takes_value): (Vec<String>, bool), p: f64| {
        let present = (select(spellings), value(), any::<bool>()).prop_map(move |(spelling, value, joined)| {
            match (takes_value, joined) {
                (false, _) => vec![spelling],
                (true, true) => vec![format!("{spelling}={value}")],
                (true, false) => vec![spelling, value],
            }
        });
        proptest::option::weighted(p, present).prop_map(Option::unwrap_or_default)
    };
    let line = select(all).prop_flat_map(move |leaf| {
        let path = leaf.path.iter().cloned().map(select).collect::<Vec<_>>();
        let flags = leaf.flags.iter().map(|f| with_value(f.clone(), 0.7)).collect::<Vec<_>>();
        let global = globals.iter().map(|f| with_value(f.clone(), 0.25)).collect::<Vec<_>>();
        let positional = proptest::collection::vec(value(), if leaf.positional { 1..3 } else { 0..1 });
        // Now and then a stray word, which only commands taking positional arguments accept.
        let noise = proptest::option::weighted(0.1, value());
        (path, flags, global, positional, noise).prop_map(|(path, flags, global, positional, noise)| {
            let mut args = path;
            args.extend(flags.into_iter().flatten());
            args.extend(positional);
            args.extend(global.into_iter().flatten());
            args.extend(noise);
            args
        })
    });

    let documented = documented_exit_codes();
    let server = RedisServer::start();
    for args in [["task", "enqueue", "-t", "t", "-l", "p"], ["task", "enqueue", "-t", "u", "-l", "q"]] {
        asynq_at(&server, &args).ok();
    }
    let mut runner = TestRunner::new(Config { cases: 96, failure_persistence: None, ..Config::default() });
    runner
        .run(&line, |args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = asynq_at(&server, &args);
            prop_assert!(documented.contains(&run.code), "undocumented exit {} for {args:?}: {run:#?}", run.code);
            prop_assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
            prop_assert!(run.code != 5, "Redis is reachable, yet exit 5 for {args:?}: {}", run.stderr);
            prop_assert!(!run.stderr.contains("user_script"), "a raw Lua error for {args:?}: {}", run.stderr);
            Ok(())
        })
        .unwrap();
}
