//! Installing what the test suite needs with apt, the one way xtask installs anything: on Debian
//! or Ubuntu, as root. Elsewhere, or as another user, xtask stops and says what to do instead.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

use crate::{cmd, step};

/// Packages to install, and the words an installer's messages need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Install<'a> {
    /// The apt packages.
    pub(crate) packages: &'a [&'a str],
    /// What was not found, for the progress line: "redis-server not found".
    pub(crate) missing: &'a str,
    /// What needs it, opening the messages that stop: "redis-server is not installed".
    pub(crate) needed: &'a str,
    /// What to do on a system that is not Debian or Ubuntu: "Install Redis 6.2 or newer ...".
    pub(crate) elsewhere: &'a str,
    /// What to do instead of installing as root: "set ... to the path of a redis-server binary".
    pub(crate) instead: &'a str,
}

impl Install<'_> {
    /// Installs the packages with apt when this is Debian or Ubuntu and we are root; otherwise
    /// stops with the command to run.
    pub(crate) fn run(&self) -> anyhow::Result<()> {
        if let Some(refusal) = self.refusal(Path::new("/etc/debian_version").exists(), is_root()?) {
            bail!(refusal);
        }
        step(format_args!("{}; installing {} with apt-get (running as root)", self.missing, self.packages.join(" ")));
        cmd::run(apt_get().arg("update"))?;
        cmd::run(apt_get().args(["install", "-y", "--no-install-recommends"]).args(self.packages))?;
        Ok(())
    }

    /// Why xtask cannot install the packages itself, if it cannot: not Debian or Ubuntu, or not
    /// root (then with the command to run as root).
    fn refusal(&self, debian: bool, root: bool) -> Option<String> {
        let packages = self.packages.join(" ");
        if !debian {
            return Some(format!(
                "{}, and this is not Debian/Ubuntu, so xtask cannot install {packages}. {}, then run \
                 `cargo xtask test` again.",
                self.needed, self.elsewhere
            ));
        }
        if !root {
            let apt_command = format!(
                "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {packages}"
            );
            return Some(format!(
                "{}, and installing {packages} needs root. Run:\n\n    sudo sh -c '{apt_command}'\n\nthen run \
                 `cargo xtask test` again (or {}).",
                self.needed, self.instead
            ));
        }
        None
    }
}

/// `apt-get`, non-interactive and without stdin (CI has none).
fn apt_get() -> Command {
    let mut command = Command::new("apt-get");
    command.env("DEBIAN_FRONTEND", "noninteractive").stdin(Stdio::null());
    command
}

/// Whether we run as root, asked of `id -u`.
fn is_root() -> anyhow::Result<bool> {
    let output = Command::new("id").arg("-u").stdin(Stdio::null()).output().context("could not run `id -u`")?;
    Ok(output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BROWSER: Install<'static> = Install {
        packages: &["chromium", "chromium-driver"],
        missing: "Chromium not found",
        needed: "Chromium is needed by the browser tests",
        elsewhere: "Install it with your package manager",
        instead: "set ASYNQ_CHROMIUM_BIN to its path",
    };

    #[test]
    fn an_install_xtask_cannot_do_says_what_to_do_instead() {
        let elsewhere = BROWSER.refusal(false, true).expect("not Debian");
        assert_eq!(
            elsewhere,
            "Chromium is needed by the browser tests, and this is not Debian/Ubuntu, so xtask cannot install \
             chromium chromium-driver. Install it with your package manager, then run `cargo xtask test` again."
        );
        let not_root = BROWSER.refusal(true, false).expect("not root");
        assert!(
            not_root.contains(
                "sudo sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
                 --no-install-recommends chromium chromium-driver'"
            ),
            "{not_root}"
        );
        assert!(not_root.ends_with("(or set ASYNQ_CHROMIUM_BIN to its path)."), "{not_root}");
        assert_eq!(BROWSER.refusal(true, true), None);
    }
}
