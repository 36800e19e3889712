//! `cargo xtask ci`: exactly what `.ci/run` runs, in the same order.
//!
//! 1. `cargo fmt --all -- --check`
//! 2. `cargo clippy --workspace --all-targets -- -D warnings`
//! 3. `cargo xtask test` (run in-process)

use crate::{cmd, step, test};

/// The cargo invocations of CI, before the test step. `.ci/run` must list the same ones; a test
/// below checks that it does.
const CARGO_STEPS: &[&[&str]] =
    &[&["fmt", "--all", "--", "--check"], &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]];

/// Runs the format check, clippy and the test suite, stopping at the first failure.
pub(crate) fn run() -> anyhow::Result<()> {
    let total = CARGO_STEPS.len() + 1;
    for (index, args) in CARGO_STEPS.iter().enumerate() {
        step(format_args!("== ci step {}/{total}: cargo {}", index + 1, args.join(" ")));
        cmd::run(&mut cmd::cargo_command(*args))?;
    }
    step(format_args!("== ci step {total}/{total}: cargo xtask test"));
    test::run(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_script_runs_the_same_steps_in_the_same_order() {
        let path = crate::workspace_root().join(".ci/run");
        let script =
            std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
        let commands: Vec<&str> = script.lines().map(str::trim).filter(|line| line.starts_with("cargo ")).collect();
        let expected: Vec<String> = CARGO_STEPS
            .iter()
            .map(|args| format!("cargo {}", args.join(" ")))
            .chain(["cargo xtask test".to_string()])
            .collect();
        assert_eq!(commands, expected, ".ci/run and `cargo xtask ci` (xtask/src/ci.rs) must run the same commands");
    }

    #[cfg(unix)]
    #[test]
    fn ci_script_is_executable() {
        use std::os::unix::fs::PermissionsExt as _;
        let path = crate::workspace_root().join(".ci/run");
        let mode = path.metadata().expect(".ci/run exists").permissions().mode();
        assert_ne!(mode & 0o111, 0, ".ci/run must be executable (chmod +x .ci/run)");
    }
}
