//! `cargo xtask test`: set up what the suite needs, then run all of it.
//!
//! Steps:
//!
//! 1. make sure `redis-server` (6.2 or newer) is available, installing it on Debian/Ubuntu when
//!    running as root, and export its absolute path as `ASYNQ_REDIS_SERVER_BIN` unless that is
//!    already set; likewise Chromium and `chromedriver` for the web dashboard's browser tests
//!    (`ASYNQ_CHROMIUM_BIN`, `ASYNQ_CHROMEDRIVER_BIN`); and `promtool` (Debian's `prometheus`
//!    package, `ASYNQ_PROMTOOL_BIN`);
//! 2. `promtool check rules` and `promtool test rules` on the Prometheus alerting rules in
//!    `docs/prometheus/` and their unit tests, and `promtool check rules` on the Grafana
//!    dashboard's queries;
//! 3. `cargo test --workspace --doc`, since nextest does not run doctests;
//! 4. `cargo build -p asynq-examples --examples`, since the examples' tests run the examples'
//!    binaries and a test build compiles examples only as test harnesses; then
//!    `cargo nextest run --workspace --all-targets ARGS` when cargo-nextest is installed,
//!    otherwise `cargo test --workspace --all-targets ARGS`. It runs last so that its summary
//!    closes the log.
//!
//! Under CI (`CI=true`) step 4 also gets `--no-fail-fast`, and the doctests and tests run even
//! when an earlier check failed, so one run reports every failure. A missing tool is an error,
//! under CI or not, once xtask could not install it.
//!
//! When `ARGS` select packages (`-p`, `--package`), `--workspace` is left out so the selection
//! takes effect, and the doctest step gets the same selection.

use std::process::Stdio;

use anyhow::bail;

use crate::{browser, cmd, promtool, redis, step};

/// Parses the arguments after `test`: nothing, or `--` followed by arguments for the test runner.
pub(crate) fn parse_args(args: &[String]) -> anyhow::Result<Vec<String>> {
    match args.split_first() {
        None => Ok(Vec::new()),
        Some((first, rest)) if first == "--" => Ok(rest.to_vec()),
        Some((first, _)) => bail!(
            "unexpected argument `{first}` for `test`; pass test-runner arguments after `--`, \
             as in `cargo xtask test -- -p asynq-core`"
        ),
    }
}

/// Runs the whole suite, with `extra` passed to the test runner.
pub(crate) fn run(extra: &[String]) -> anyhow::Result<()> {
    step("step 1/4: checking for redis-server");
    let redis_server = redis::ensure()?;
    if std::env::var_os(redis::BIN_ENV).is_none_or(|value| value.is_empty()) {
        step(format_args!("setting {}={} for the tests", redis::BIN_ENV, redis_server.display()));
    }
    step("step 1/4: checking for Chromium and chromedriver (the web dashboard's browser tests)");
    let browser = browser::ensure()?;
    step("step 1/4: checking for promtool (the Prometheus alerting rules' checks)");
    let promtool_bin = promtool::ensure()?;
    let keep_going = in_ci() || extra.iter().any(|arg| arg == "--no-fail-fast");

    step("step 2/4: checking the alerting rules, running their unit tests, parsing the dashboard's queries");
    let rules_result = promtool::check_rules(&promtool_bin, &crate::workspace_root());
    if rules_result.is_err() && !keep_going {
        return rules_result;
    }

    let selection = package_selection(extra);
    // `--workspace` would override `-p`; `--exclude` on the other hand needs it.
    let names_packages = names_a_package(&selection);
    let scope: &[&str] = if names_packages { &[] } else { &["--workspace"] };

    // Doctests first, so that the test runner's summary is the last thing the log shows.
    let doc_selection = without_bin_only_packages(&selection);
    let doctests_result = if names_packages && !names_a_package(&doc_selection) {
        step("step 3/4: skipping the doctests: the selected packages have no library");
        Ok(())
    } else {
        step("step 3/4: running the doctests (nextest does not run them)");
        let mut doctests = cmd::cargo_command(["test"]);
        doctests.args(scope).arg("--doc").args(&doc_selection);
        set_redis_env(&mut doctests, &redis_server);
        browser::set_env(&mut doctests, &browser);
        cmd::run(&mut doctests)
    };
    if doctests_result.is_err() && !keep_going {
        return doctests_result;
    }

    let examples_result = if selects_package(&selection, EXAMPLES_PACKAGE) {
        step("step 4/4: building the examples, whose tests run their binaries");
        let mut examples = cmd::cargo_command(["build", "-p", EXAMPLES_PACKAGE, "--examples"]);
        examples.args(profile_args(extra));
        cmd::run(&mut examples)
    } else {
        Ok(())
    };
    if examples_result.is_err() && !keep_going {
        return examples_result;
    }

    let mut tests = if nextest_available() {
        step("step 4/4: running the tests with cargo nextest");
        cmd::cargo_command(["nextest", "run"])
    } else {
        step("step 4/4: cargo-nextest is not installed; running the tests with cargo test");
        cmd::cargo_command(["test"])
    };
    tests.args(scope).arg("--all-targets");
    if in_ci() && !extra.iter().any(|arg| arg == "--no-fail-fast") {
        step("CI is set: adding --no-fail-fast so the log shows every failure");
        tests.arg("--no-fail-fast");
    }
    tests.args(extra);
    set_redis_env(&mut tests, &redis_server);
    browser::set_env(&mut tests, &browser);
    let tests_result = cmd::run(&mut tests);

    // Report the first failure; with --no-fail-fast the tests ran anyway.
    rules_result.and(doctests_result).and(examples_result).and(tests_result)?;
    step("all tests passed");
    Ok(())
}

/// Exports the resolved `redis-server` to a child, unless the user already chose one.
fn set_redis_env(command: &mut std::process::Command, redis_server: &std::path::Path) {
    if std::env::var_os(redis::BIN_ENV).is_none_or(|value| value.is_empty()) {
        command.env(redis::BIN_ENV, redis_server);
    }
}

/// Workspace packages without a library target: `cargo test --doc -p` refuses them.
const BIN_ONLY_PACKAGES: &[&str] = &["xtask"];

/// The package whose tests run the binaries of its examples.
const EXAMPLES_PACKAGE: &str = "asynq-examples";

/// Whether the test run covers `package`: the whole workspace unless `selection` names packages
/// without it or excludes it.
fn selects_package(selection: &[String], package: &str) -> bool {
    let named = |flag: &str, joined: &str| {
        selection.windows(2).any(|pair| pair[0] == flag && pair[1] == package)
            || selection.iter().any(|arg| arg.strip_prefix(joined) == Some(package))
    };
    if named("--exclude", "--exclude=") {
        return false;
    }
    !names_a_package(selection) || named("-p", "-p") || named("--package", "--package=")
}

/// The test runner's arguments that choose a build profile, spelled for `cargo build`
/// (nextest's `--cargo-profile NAME` is cargo's `--profile NAME`; nextest's own `--profile` is a
/// configuration profile, not a build profile).
fn profile_args(extra: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut args = extra.iter().take_while(|arg| *arg != "--");
    while let Some(arg) = args.next() {
        if arg == "--release" || arg == "-r" {
            kept.push("--release".to_owned());
        } else if arg == "--cargo-profile" {
            kept.push("--profile".to_owned());
            kept.extend(args.next().cloned());
        } else if let Some(name) = arg.strip_prefix("--cargo-profile=") {
            kept.push(format!("--profile={name}"));
        }
    }
    kept
}

/// Whether `selection` contains `-p`/`--package` (as opposed to only `--exclude`).
fn names_a_package(selection: &[String]) -> bool {
    selection.iter().any(|arg| arg.starts_with("-p") || arg.starts_with("--package"))
}

/// `selection` without the `-p`/`--package` arguments that name a [`BIN_ONLY_PACKAGES`] package.
fn without_bin_only_packages(selection: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut args = selection.iter();
    while let Some(arg) = args.next() {
        if arg == "-p" || arg == "--package" {
            let name = args.next();
            if !name.is_some_and(|name| BIN_ONLY_PACKAGES.contains(&name.as_str())) {
                kept.push(arg.clone());
                kept.extend(name.cloned());
            }
            continue;
        }
        let joined =
            arg.strip_prefix("--package=").or_else(|| arg.strip_prefix("-p").filter(|_| !arg.starts_with("--")));
        if !joined.is_some_and(|name| BIN_ONLY_PACKAGES.contains(&name)) {
            kept.push(arg.clone());
        }
    }
    kept
}

/// Whether we run under CI (`CI` set to anything but empty, `0` or `false`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "0" | "false"))
}

/// Whether `cargo nextest --version` works.
fn nextest_available() -> bool {
    cmd::cargo_command(["nextest", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The package-selection arguments within `args` (`-p X`, `-pX`, `--package X`, `--package=X`,
/// and the same for `--exclude`), to be repeated for the doctest step.
fn package_selection(args: &[String]) -> Vec<String> {
    let mut selection = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        // Everything after a second `--` belongs to the test binaries, not to cargo.
        if arg == "--" {
            break;
        }
        if matches!(arg.as_str(), "-p" | "--package" | "--exclude") {
            selection.push(arg.clone());
            selection.extend(args.next().cloned());
        } else if (arg.starts_with("-p") && arg.len() > 2)
            || arg.starts_with("--package=")
            || arg.starts_with("--exclude=")
        {
            selection.push(arg.clone());
        }
    }
    selection
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| arg.to_string()).collect()
    }

    #[test]
    fn test_takes_runner_arguments_after_a_double_dash() {
        assert_eq!(parse_args(&[]).unwrap(), Vec::<String>::new());
        assert_eq!(
            parse_args(&strings(&["--", "-p", "asynq-core", "lease"])).unwrap(),
            strings(&["-p", "asynq-core", "lease"])
        );
        assert!(parse_args(&strings(&["-p", "asynq-core"])).is_err());
    }

    #[test]
    fn the_examples_are_built_when_the_run_covers_their_package_in_its_profile() {
        assert!(selects_package(&[], EXAMPLES_PACKAGE));
        assert!(selects_package(&strings(&["-p", "asynq-examples"]), EXAMPLES_PACKAGE));
        assert!(selects_package(&strings(&["--package=asynq-examples"]), EXAMPLES_PACKAGE));
        assert!(!selects_package(&strings(&["-p", "asynq-core"]), EXAMPLES_PACKAGE));
        assert!(!selects_package(&strings(&["--exclude", "asynq-examples"]), EXAMPLES_PACKAGE));
        assert!(selects_package(&strings(&["--exclude", "asynq-core"]), EXAMPLES_PACKAGE));
        assert!(profile_args(&strings(&["lease", "--no-fail-fast"])).is_empty());
        assert_eq!(profile_args(&strings(&["--release", "--", "-r"])), strings(&["--release"]));
        assert_eq!(profile_args(&strings(&["--cargo-profile", "ci"])), strings(&["--profile", "ci"]));
        assert_eq!(profile_args(&strings(&["--profile", "ci"])), Vec::<String>::new());
    }

    #[test]
    fn package_selection_is_picked_out_of_runner_arguments() {
        assert!(package_selection(&strings(&["lease", "--no-fail-fast"])).is_empty());
        assert_eq!(
            package_selection(&strings(&["-p", "asynq-core", "lease", "--package=asynq-client"])),
            strings(&["-p", "asynq-core", "--package=asynq-client"])
        );
        assert_eq!(package_selection(&strings(&["-pasynq-core", "--", "-p", "x"])), strings(&["-pasynq-core"]));
        assert_eq!(
            package_selection(&strings(&["--exclude", "asynq-redis", "--no-fail-fast"])),
            strings(&["--exclude", "asynq-redis"])
        );
    }

    #[test]
    fn doctests_leave_out_packages_without_a_library() {
        let selection = strings(&["-p", "xtask", "--package=xtask", "-pxtask", "-p", "asynq-core"]);
        assert_eq!(without_bin_only_packages(&selection), strings(&["-p", "asynq-core"]));
        assert!(!names_a_package(&without_bin_only_packages(&strings(&["-p", "xtask"]))));
        assert!(!names_a_package(&strings(&["--exclude", "xtask"])));
    }
}
