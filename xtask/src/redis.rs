//! Making sure a usable `redis-server` exists before the tests that spawn one run.
//!
//! The Redis broker's tests start their own `redis-server` processes on free loopback ports; they
//! take the binary from `ASYNQ_REDIS_SERVER_BIN` (default `redis-server`). Nothing here starts a
//! server or relies on port 6379.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

use crate::{apt, step};

/// The environment variable that names the `redis-server` binary the tests run.
pub(crate) const BIN_ENV: &str = "ASYNQ_REDIS_SERVER_BIN";

/// The oldest Redis the broker supports: its archive script uses `ZRANGE ... BYSCORE` (6.2).
const MIN_VERSION: (u32, u32) = (6, 2);

/// The apt package that provides `redis-server` on Debian and Ubuntu.
const APT_PACKAGE: &str = "redis-server";

/// Finds (installing it when possible) a `redis-server` of at least [`MIN_VERSION`], and returns
/// the path to pass to the tests in [`BIN_ENV`].
pub(crate) fn ensure() -> anyhow::Result<PathBuf> {
    let configured = std::env::var_os(BIN_ENV).filter(|value| !value.is_empty());
    let name = configured.clone().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("redis-server"));
    step(format_args!(
        "looking for {} ({})",
        name.display(),
        if configured.is_some() { format!("from {BIN_ENV}") } else { format!("{BIN_ENV} is not set") }
    ));
    let binary = match find_executable(&name) {
        Some(binary) => binary,
        // Install only the default; a binary the user named explicitly is theirs to provide.
        None if name == Path::new("redis-server") => {
            install()?;
            find_executable(&name)
                .context("`apt-get install redis-server` succeeded but `redis-server` is still not on PATH")?
        }
        None => bail!("{BIN_ENV}={} does not name an executable file (a path, or a program on PATH)", name.display()),
    };
    let version = version_of(&binary)?;
    if version < MIN_VERSION {
        bail!(
            "{} is Redis {}.{}, but the tests need Redis {}.{} or newer: the archive script uses \
             ZRANGE ... BYSCORE, added in 6.2. Install a newer Redis, or point {BIN_ENV} at one.",
            binary.display(),
            version.0,
            version.1,
            MIN_VERSION.0,
            MIN_VERSION.1
        );
    }
    step(format_args!("using {} (Redis {}.{})", binary.display(), version.0, version.1));
    Ok(binary)
}

/// Installs `redis-server` with apt when this is Debian or Ubuntu and we are root; otherwise
/// stops with the command to run.
fn install() -> anyhow::Result<()> {
    let elsewhere = format!(
        "Install Redis {}.{} or newer with your package manager (for example `brew install redis` or \
         `dnf install redis`), or set {BIN_ENV} to the path of a redis-server binary",
        MIN_VERSION.0, MIN_VERSION.1
    );
    apt::Install {
        packages: &[APT_PACKAGE],
        missing: "redis-server not found",
        needed: "redis-server is not installed",
        elsewhere: &elsewhere,
        instead: &format!("set {BIN_ENV} to the path of a redis-server binary"),
    }
    .run()
}

/// Runs `redis-server --version` and parses its version.
fn version_of(binary: &Path) -> anyhow::Result<(u32, u32)> {
    let output = Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not run `{} --version`", binary.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "`{} --version` failed ({}): {}{}",
            binary.display(),
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    parse_version(&stdout).with_context(|| {
        format!("could not read a version from `{} --version`, which printed: {}", binary.display(), stdout.trim())
    })
}

/// Reads `(major, minor)` from `redis-server --version` output such as
/// `Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=...`.
fn parse_version(output: &str) -> Option<(u32, u32)> {
    let version = output.split_whitespace().find_map(|word| word.strip_prefix("v="))?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
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

    #[test]
    fn parses_redis_server_version_output() {
        let debian = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 \
                      build=c4d4e5f5e8f8e3b1\n";
        assert_eq!(parse_version(debian), Some((7, 0)));
        assert_eq!(parse_version("Redis server v=6.2.0 sha=0"), Some((6, 2)));
        assert_eq!(parse_version("Redis server v=5.0.7 sha=0"), Some((5, 0)));
        assert_eq!(parse_version("Redis server v=8.2.1"), Some((8, 2)));
        assert_eq!(parse_version("Redis server sha=0"), None);
        assert_eq!(parse_version("Redis server v=seven"), None);
    }

    #[test]
    fn versions_compare_as_major_then_minor() {
        assert!((6, 1) < MIN_VERSION);
        assert!((5, 9) < MIN_VERSION);
        assert!((6, 2) >= MIN_VERSION);
        assert!((7, 0) >= MIN_VERSION);
    }

    #[test]
    fn finds_programs_on_path_and_rejects_missing_ones() {
        let sh = find_executable(Path::new("sh")).expect("sh is on PATH");
        assert!(sh.is_absolute());
        assert_eq!(find_executable(&sh), Some(sh.clone()));
        assert_eq!(find_executable(Path::new("surely-not-a-program-xtask")), None);
        assert_eq!(find_executable(Path::new("/surely/not/a/program/xtask")), None);
    }
}
