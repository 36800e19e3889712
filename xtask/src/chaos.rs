//! `cargo xtask chaos`: the chaos suite (the `asynq-chaos` crate) with its full profile, by
//! hand: real worker and producer processes against private redis-servers, faults injected,
//! one ledger line per scenario. Takes several minutes; the quick profile runs in CI as the
//! crate's integration test.

use crate::{cmd, redis, step};
use anyhow::bail;

/// What `cargo xtask chaos` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Options {
    /// `full` or `quick`.
    profile: &'static str,
    /// One scenario, or `all`.
    scenario: String,
}

/// Reads `[--quick] [--scenario NAME]`.
pub(crate) fn parse_args(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options { profile: "full", scenario: "all".to_owned() };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.profile = "quick",
            "--scenario" => match args.next() {
                Some(name) => options.scenario = name.clone(),
                None => bail!("`--scenario` needs a name"),
            },
            _ => bail!("unexpected argument `{arg}` for `chaos`; see `cargo xtask help`"),
        }
    }
    Ok(options)
}

/// Builds `asynq-chaos` in release mode and runs its orchestrator.
pub(crate) fn run(options: &Options) -> anyhow::Result<()> {
    step("step 1/2: checking for redis-server");
    let redis_server = redis::ensure()?;
    step(format_args!("step 2/2: running the chaos scenarios ({} profile)", options.profile));
    let mut command = cmd::cargo_command(["run", "--release", "-p", "asynq-chaos", "--", "run"]);
    command.args(["--profile", options.profile, "--scenario", &options.scenario]);
    if std::env::var_os(redis::BIN_ENV).is_none_or(|value| value.is_empty()) {
        command.env(redis::BIN_ENV, redis_server);
    }
    cmd::run(&mut command)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn parses_its_options() {
        assert_eq!(parse_args(&[]).unwrap(), Options { profile: "full", scenario: "all".to_owned() });
        assert_eq!(
            parse_args(&args(&["--quick", "--scenario", "sigterm"])).unwrap(),
            Options { profile: "quick", scenario: "sigterm".to_owned() }
        );
        assert!(parse_args(&args(&["--scenario"])).is_err());
        assert!(parse_args(&args(&["--fast"])).is_err());
    }
}
