//! Making sure a headless Chromium and its `chromedriver` exist before the browser tests run.
//!
//! The web dashboard's end-to-end tests (`asynq-web/tests/browser.rs`) start their own
//! `chromedriver` on a free loopback port, which drives Chromium; they take the binaries from
//! `ASYNQ_CHROMEDRIVER_BIN` (default `chromedriver` on `PATH`) and `ASYNQ_CHROMIUM_BIN` (default
//! `/usr/bin/chromium`). Missing defaults are installed the way `redis-server` is: with apt on
//! Debian/Ubuntu when running as root, otherwise xtask stops with the command to run.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::tools::find_executable;
use crate::{step, tools};

/// The environment variable that names the Chromium binary the tests drive.
pub(crate) const CHROMIUM_ENV: &str = "ASYNQ_CHROMIUM_BIN";

/// The environment variable that names the `chromedriver` binary the tests start.
pub(crate) const CHROMEDRIVER_ENV: &str = "ASYNQ_CHROMEDRIVER_BIN";

/// What the tests use when the variables are unset: Debian's paths.
const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";
const DEFAULT_CHROMEDRIVER: &str = "chromedriver";

/// The apt packages: the browser, its driver (same version), and a font so that screenshots
/// show text rather than empty boxes on a minimal system.
const APT_PACKAGES: &[&str] = &["chromium", "chromium-driver", "fonts-dejavu-core"];

/// The resolved binaries, to export to the tests.
#[derive(Debug, Clone)]
pub(crate) struct Browser {
    /// Absolute path of Chromium.
    pub(crate) chromium: PathBuf,
    /// Absolute path of `chromedriver`.
    pub(crate) chromedriver: PathBuf,
}

/// Finds (installing them when possible) Chromium and `chromedriver`.
pub(crate) fn ensure() -> anyhow::Result<Browser> {
    let chromium_name = configured(CHROMIUM_ENV, DEFAULT_CHROMIUM);
    let driver_name = configured(CHROMEDRIVER_ENV, DEFAULT_CHROMEDRIVER);
    step(format_args!("looking for {} and {}", chromium_name.display(), driver_name.display()));
    let mut chromium = find_executable(&chromium_name);
    let mut chromedriver = find_executable(&driver_name);
    if chromium.is_none() || chromedriver.is_none() {
        // Install only for the defaults; binaries the user named explicitly are theirs to provide.
        for (found, env, name) in
            [(&chromium, CHROMIUM_ENV, &chromium_name), (&chromedriver, CHROMEDRIVER_ENV, &driver_name)]
        {
            if found.is_none() && is_set(env) {
                bail!("{env}={} does not name an executable file (a path, or a program on PATH)", name.display());
            }
        }
        install()?;
        chromium = find_executable(&chromium_name);
        chromedriver = find_executable(&driver_name);
    }
    let chromium = chromium.with_context(|| {
        format!("`apt-get install chromium` succeeded but {} is still missing", chromium_name.display())
    })?;
    let chromedriver = chromedriver.with_context(|| {
        format!("`apt-get install chromium-driver` succeeded but {} is still not on PATH", driver_name.display())
    })?;
    step(format_args!("using {} and {}", version_of(&chromium)?, version_of(&chromedriver)?));
    Ok(Browser { chromium, chromedriver })
}

/// Exports the resolved binaries to a child, unless the user already chose them.
pub(crate) fn set_env(command: &mut Command, browser: &Browser) {
    if !is_set(CHROMIUM_ENV) {
        command.env(CHROMIUM_ENV, &browser.chromium);
    }
    if !is_set(CHROMEDRIVER_ENV) {
        command.env(CHROMEDRIVER_ENV, &browser.chromedriver);
    }
}

/// The binary named by `env`, or `default` when it is unset or empty.
fn configured(env: &str, default: &str) -> PathBuf {
    std::env::var_os(env).filter(|value| !value.is_empty()).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

/// Whether `env` is set to something non-empty.
fn is_set(env: &str) -> bool {
    std::env::var_os(env).is_some_and(|value| !value.is_empty())
}

/// Installs the browser with apt when this is Debian or Ubuntu and we are root; otherwise stops
/// with the command to run.
fn install() -> anyhow::Result<()> {
    tools::Install {
        packages: APT_PACKAGES,
        missing: "Chromium or chromedriver not found",
        needed: "Chromium and chromedriver are needed by the browser tests",
        elsewhere: &format!(
            "Install both (the same major version) with your package manager, or set {CHROMIUM_ENV} and \
             {CHROMEDRIVER_ENV} to their paths"
        ),
        instead: &format!("set {CHROMIUM_ENV} and {CHROMEDRIVER_ENV} to their paths"),
    }
    .run()
}

/// The first line of `<binary> --version`, such as `Chromium 140.0.7339.127 built on Debian`.
fn version_of(binary: &Path) -> anyhow::Result<String> {
    let stdout = tools::version_text(binary)?;
    // chromedriver appends the commit and branch in parentheses; the version number is enough.
    let first_line = stdout.lines().next().unwrap_or_default();
    let version = first_line.split(" (").next().unwrap_or_default().trim();
    if version.is_empty() {
        bail!("`{} --version` printed no version: {}", binary.display(), stdout.trim());
    }
    Ok(version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_when_the_variables_are_unset() {
        assert_eq!(configured("ASYNQ_XTASK_SURELY_UNSET_VARIABLE", DEFAULT_CHROMIUM), Path::new(DEFAULT_CHROMIUM));
        assert!(!is_set("ASYNQ_XTASK_SURELY_UNSET_VARIABLE"));
    }
}
