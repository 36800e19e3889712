//! Finding the programs the test suite needs (named by an environment variable, or a default on
//! `PATH`), asking their versions, and installing them with apt, the one way xtask installs
//! anything: on Debian or Ubuntu, as root. Elsewhere, or as another user, xtask stops and says
//! what to do instead.

use std::path::{Path, PathBuf};
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

/// The program named by `env` (from `default` when it is unset or empty), as an absolute path;
/// when the default is missing, `install` runs first. A program the user named is theirs to
/// provide: xtask installs only the default.
pub(crate) fn find_or_install(
    env: &str,
    default: &str,
    install: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<PathBuf> {
    let configured = std::env::var_os(env).filter(|value| !value.is_empty());
    let name = configured.clone().map_or_else(|| PathBuf::from(default), PathBuf::from);
    step(format_args!(
        "looking for {} ({})",
        name.display(),
        if configured.is_some() { format!("from {env}") } else { format!("{env} is not set") }
    ));
    match find_executable(&name) {
        Some(binary) => Ok(binary),
        None if configured.is_none() => {
            install()?;
            find_executable(&name)
                .with_context(|| format!("installing {default} succeeded but it is still not on PATH"))
        }
        None => bail!("{env}={} does not name an executable file (a path, or a program on PATH)", name.display()),
    }
}

/// What `<binary> --version` prints; an error when it cannot run or fails.
pub(crate) fn version_text(binary: &Path) -> anyhow::Result<String> {
    let output = Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not run `{} --version`", binary.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "`{} --version` failed ({}): {}{}",
            binary.display(),
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(stdout)
}

/// Resolves `name` to an absolute path the way a shell would: as a path when it contains a
/// separator, otherwise by searching `PATH`. Symlinks are kept as they are: Debian's
/// `/usr/bin/redis-server` is a link to `redis-check-rdb`, which acts on the name it was run by.
pub(crate) fn find_executable(name: &Path) -> Option<PathBuf> {
    if name.components().count() > 1 {
        if !is_executable(name) {
            return None;
        }
        return std::path::absolute(name).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .and_then(|found| std::path::absolute(found).ok())
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file() || path.with_extension(std::env::consts::EXE_EXTENSION).is_file()
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

    #[test]
    fn finds_programs_on_path_and_rejects_missing_ones() {
        let sh = find_executable(Path::new("sh")).expect("sh is on PATH");
        assert!(sh.is_absolute());
        assert_eq!(find_executable(&sh), Some(sh.clone()));
        assert_eq!(find_executable(Path::new("surely-not-a-program-xtask")), None);
        assert_eq!(find_executable(Path::new("/surely/not/a/program/xtask")), None);
    }

    #[test]
    #[cfg(unix)]
    fn a_version_is_what_the_program_prints_and_a_failure_says_so() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("xtask-version-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let program = |name: &str, script: &str| {
            let path = dir.join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let tool = program("tool", r#"echo "tool $1 1.2""#);
        let broken = program("broken", "echo out; echo err >&2; exit 3");
        assert_eq!(version_text(&tool).unwrap(), "tool --version 1.2\n");
        let err = version_text(&broken).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(err, format!("`{} --version` failed (exit status: 3): outerr", broken.display()));
    }
}
