//! Making sure a usable `redis-server` exists before the tests that spawn one run.
//!
//! The Redis broker's tests start their own `redis-server` processes on free loopback ports; they
//! take the binary from `ASYNQ_REDIS_SERVER_BIN` (default `redis-server`). Nothing here starts a
//! server or relies on port 6379.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::{step, tools};

/// The environment variable that names the `redis-server` binary the tests run.
pub(crate) const BIN_ENV: &str = "ASYNQ_REDIS_SERVER_BIN";

/// The oldest Redis the broker supports: its archive script uses `ZRANGE ... BYSCORE` (6.2).
const MIN_VERSION: (u32, u32) = (6, 2);

/// The apt package that provides `redis-server` on Debian and Ubuntu.
const APT_PACKAGE: &str = "redis-server";

/// Finds (installing it when possible) a `redis-server` of at least [`MIN_VERSION`], and returns
/// the path to pass to the tests in [`BIN_ENV`].
pub(crate) fn ensure() -> anyhow::Result<PathBuf> {
    let binary = tools::find_or_install(BIN_ENV, "redis-server", install)?;
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
    tools::Install {
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
    let stdout = tools::version_text(binary)?;
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
}
