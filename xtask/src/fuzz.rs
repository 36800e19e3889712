//! `cargo xtask fuzz [--seconds N] [TARGET...]`: runs each cargo-fuzz target in `fuzz/` for a
//! bounded time and prints how many inputs each executed and whether it crashed.
//!
//! cargo-fuzz needs a nightly compiler (`-Zsanitizer`) and libFuzzer: the nightly toolchain when
//! rustup has one, otherwise the stable one with `RUSTC_BOOTSTRAP=1`. Each run's libFuzzer
//! output goes to `target/fuzz/<target>.log`; a crash leaves its input under
//! `fuzz/artifacts/<target>/`. CI runs the same properties on stable as proptests
//! (`tests/tests/fuzz_inputs.rs`), since a fresh machine has neither nightly nor cargo-fuzz.

use crate::cmd::display;
use anyhow::{Context as _, bail};
use std::process::Command;

/// The targets in `fuzz/fuzz_targets/`, in the order they run.
const TARGETS: [&str; 4] = ["task_message", "cron_spec", "go_duration", "web_request"];

/// What `cargo xtask fuzz` was asked for.
#[derive(Debug)]
pub(crate) struct Options {
    /// How long each target runs, in seconds.
    seconds: u64,
    /// The targets to run; all of them when none were named.
    targets: Vec<String>,
}

/// Parses `[--seconds N] [TARGET...]`.
pub(crate) fn parse_args(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options { seconds: 60, targets: Vec::new() };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                let value = args.next().context("--seconds needs a number")?;
                options.seconds = value.parse().with_context(|| format!("--seconds {value:?} is not a number"))?;
                if options.seconds == 0 {
                    bail!("--seconds must be at least 1");
                }
            }
            target if TARGETS.contains(&target) => options.targets.push(target.to_owned()),
            other => bail!("unknown fuzz argument {other:?}; the targets are {}", TARGETS.join(", ")),
        }
    }
    if options.targets.is_empty() {
        options.targets = TARGETS.map(String::from).to_vec();
    }
    Ok(options)
}

/// One target's bounded run.
#[derive(Debug)]
struct Outcome {
    target: String,
    /// Inputs executed, as libFuzzer's closing `Done N runs` line says.
    runs: Option<u64>,
    crashed: bool,
}

/// Runs every requested target for `options.seconds` each; fails if one crashed.
pub(crate) fn run(options: &Options) -> anyhow::Result<()> {
    let toolchain = toolchain()?;
    let log_dir = crate::workspace_root().join("target").join("fuzz");
    std::fs::create_dir_all(&log_dir).with_context(|| format!("cannot create {}", log_dir.display()))?;
    let mut outcomes = Vec::new();
    for target in &options.targets {
        let mut command = fuzz_command(&toolchain);
        command.args(["fuzz", "run", target.as_str(), "--"]);
        command.arg(format!("-max_total_time={}", options.seconds));
        let shown = display(&command);
        crate::step(format_args!("running `{shown}`"));
        let output = command.output().with_context(|| format!("could not start `{shown}`"))?;
        let log = log_dir.join(format!("{target}.log"));
        let mut text = output.stdout;
        text.extend_from_slice(&output.stderr);
        std::fs::write(&log, &text).with_context(|| format!("cannot write {}", log.display()))?;
        let text = String::from_utf8_lossy(&text);
        let runs = text.lines().rev().find_map(|line| {
            line.strip_prefix("Done ").and_then(|rest| rest.split_whitespace().next()).and_then(|n| n.parse().ok())
        });
        let crashed = !output.status.success();
        if crashed && runs.is_none() && !text.contains("==ERROR") && !text.contains("panicked") {
            bail!("`{shown}` failed before fuzzing (see {}):\n{}", log.display(), tail(&text, 20));
        }
        outcomes.push(Outcome { target: target.clone(), runs, crashed });
    }
    for o in &outcomes {
        let runs = o.runs.map_or_else(|| "?".to_owned(), |n| n.to_string());
        let verdict = if o.crashed { "CRASHED (input under fuzz/artifacts/)" } else { "no crash" };
        println!("{:<14} {runs:>12} runs in {}s  {verdict}", o.target, options.seconds);
    }
    if outcomes.iter().any(|o| o.crashed) {
        bail!("a fuzz target crashed; its log is in {}", log_dir.display());
    }
    Ok(())
}

/// How to reach a nightly compiler: `+nightly` when rustup has it, else stable with
/// `RUSTC_BOOTSTRAP=1`. Fails with an install hint when cargo-fuzz is missing.
fn toolchain() -> anyhow::Result<Option<&'static str>> {
    let nightly = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.starts_with("nightly")));
    let toolchain = nightly.then_some("+nightly");
    let probe = fuzz_command(&toolchain).args(["fuzz", "--version"]).output();
    match probe {
        Ok(o) if o.status.success() => Ok(toolchain),
        _ => bail!("cargo-fuzz is not installed: run `cargo install cargo-fuzz`"),
    }
}

/// `cargo [+nightly]` through the rustup proxy, run from the workspace root.
fn fuzz_command(toolchain: &Option<&'static str>) -> Command {
    let mut command = Command::new("cargo");
    command.current_dir(crate::workspace_root());
    match toolchain {
        Some(toolchain) => {
            command.arg(toolchain);
        }
        None => {
            command.env("RUSTC_BOOTSTRAP", "1");
        }
    }
    command
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
