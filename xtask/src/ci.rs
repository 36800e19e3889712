//! `cargo xtask ci`: exactly what `.ci/run` runs, in the same order.
//!
//! 1. `cargo fmt --all -- --check`
//! 2. `cargo clippy --workspace --all-targets -- -D warnings`
//! 3. `RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps`
//! 4. `cargo package` of every publishable crate (built from its packaged sources)
//! 5. `cargo xtask test` (run in-process)
//!
//! `.ci/run` also sets `CARGO_INCREMENTAL=0`: a clean clone gains nothing from incremental state.

use crate::{cmd, step, test};

/// One cargo invocation of CI: environment variables, then cargo's arguments.
struct CargoStep {
    env: &'static [(&'static str, &'static str)],
    args: &'static [&'static str],
}

impl CargoStep {
    /// The line as `.ci/run` writes it.
    fn line(&self) -> String {
        let env = self.env.iter().map(|(name, value)| format!("{name}={value} "));
        format!("{}cargo {}", env.collect::<String>(), self.args.join(" "))
    }
}

/// The cargo invocations of CI, before the test step. `.ci/run` must list the same ones; a test
/// below checks that it does.
const CARGO_STEPS: &[CargoStep] = &[
    CargoStep { env: &[], args: &["fmt", "--all", "--", "--check"] },
    CargoStep { env: &[], args: &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"] },
    CargoStep { env: &[("RUSTDOCFLAGS", "-Dwarnings")], args: &["doc", "--workspace", "--no-deps"] },
    // Every crate but the internal ones (`publish = false`), each built from its packaged
    // sources against the others' packages: what `cargo publish` would upload.
    CargoStep {
        env: &[],
        args: &[
            "package",
            "--workspace",
            "--exclude",
            "asynq-tests",
            "--exclude",
            "asynq-examples",
            "--exclude",
            "asynq-bench",
            "--exclude",
            "asynq-chaos",
            "--exclude",
            "xtask",
            "--allow-dirty",
        ],
    },
];

/// Runs the format check, clippy, the docs, the packaging and the test suite, stopping at the
/// first failure.
pub(crate) fn run() -> anyhow::Result<()> {
    let total = CARGO_STEPS.len() + 1;
    for (index, cargo_step) in CARGO_STEPS.iter().enumerate() {
        if cargo_step.args[0] == "package" {
            drop_unpacked_packages()?;
        }
        step(format_args!("== ci step {}/{total}: {}", index + 1, cargo_step.line()));
        let mut command = cmd::cargo_command(cargo_step.args);
        command.envs(cargo_step.env.iter().copied());
        cmd::run(&mut command)?;
    }
    step(format_args!("== ci step {total}/{total}: cargo xtask test"));
    test::run(&[])
}

/// The names of this workspace's packages start with one of these.
const PACKAGE_PREFIXES: [&str; 2] = ["asynq-", "rasynq-"];

/// Removes the copies of this workspace's packages that an earlier `cargo package` unpacked:
/// it verifies each crate against the others' packages, unpacked under
/// `$CARGO_HOME/registry/src/-<hash of the folder>/`, and reuses a copy of the same name and
/// version found there, so a second run in one folder would build against the first run's
/// sources. `.ci/run` removes the same ones.
fn drop_unpacked_packages() -> anyhow::Result<()> {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".cargo")));
    let Some(sources) = home.map(|home| home.join("registry/src")) else { return Ok(()) };
    let Ok(registries) = std::fs::read_dir(&sources) else { return Ok(()) };
    for registry in registries.flatten() {
        // Local registries only: crates.io's directory is named after its index.
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for unpacked in std::fs::read_dir(registry.path())?.flatten() {
            let name = unpacked.file_name();
            if PACKAGE_PREFIXES.iter().any(|prefix| name.to_string_lossy().starts_with(prefix)) {
                std::fs::remove_dir_all(unpacked.path())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_script_runs_the_same_steps_in_the_same_order() {
        let path = crate::workspace_root().join(".ci/run");
        let script =
            std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
        let commands: Vec<&str> = script
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with('#') && !line.starts_with("step ") && line.contains("cargo "))
            .collect();
        let expected: Vec<String> =
            CARGO_STEPS.iter().map(CargoStep::line).chain(["cargo xtask test".to_string()]).collect();
        assert_eq!(commands, expected, ".ci/run and `cargo xtask ci` (xtask/src/ci.rs) must run the same commands");
    }

    #[test]
    fn the_package_step_leaves_out_exactly_the_internal_crates() {
        let package_step = CARGO_STEPS.iter().find(|step| step.args[0] == "package").expect("a package step");
        let mut excluded: Vec<&str> =
            package_step.args.windows(2).filter(|pair| pair[0] == "--exclude").map(|pair| pair[1]).collect();
        excluded.sort_unstable();
        let packages = crate::tidy::workspace_packages();
        let mut internal: Vec<&str> =
            packages.iter().filter(|package| !package.publishable).map(|package| package.name.as_str()).collect();
        internal.sort_unstable();
        assert_eq!(excluded, internal, "the crates `cargo package` leaves out must be those with `publish = false`");
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
