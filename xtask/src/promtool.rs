//! Checking the Prometheus alerting rules with `promtool` (Prometheus 2.42 is the reference).
//!
//! `promtool check rules` parses `docs/prometheus/asynq-alerts.yml` and its expressions, and
//! `promtool test rules` runs the unit tests in `docs/prometheus/asynq-alerts.test.yml`; the
//! Grafana dashboard's queries (`docs/grafana/asynq-dashboard.json`), written out as recording
//! rules under `target/xtask/`, go through `promtool check rules` too, so Prometheus's own
//! parser reads each. The
//! binary comes from `ASYNQ_PROMTOOL_BIN` (default `promtool` on `PATH`). A missing default is
//! installed the way `redis-server` is: Debian's `prometheus` package, which carries `promtool`,
//! with apt on Debian/Ubuntu when running as root; otherwise xtask stops with the command to run.
//! A missing tool is never skipped, under CI or not. The package's own Prometheus service,
//! which the rule checks do not need, is stopped and disabled again where systemd started it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use crate::tools::find_executable;
use crate::{cmd, step, tools};

/// The environment variable that names the `promtool` binary.
pub(crate) const BIN_ENV: &str = "ASYNQ_PROMTOOL_BIN";

/// The apt package that provides `promtool` on Debian and Ubuntu.
const APT_PACKAGE: &str = "prometheus";

/// The alerting rules, relative to the workspace root.
pub(crate) const RULES: &str = "docs/prometheus/asynq-alerts.yml";

/// Their unit tests, relative to the workspace root.
pub(crate) const RULE_TESTS: &str = "docs/prometheus/asynq-alerts.test.yml";

/// The Grafana dashboard, relative to the workspace root.
pub(crate) const DASHBOARD: &str = "docs/grafana/asynq-dashboard.json";

/// Finds (installing it when possible) `promtool`, and returns its path.
pub(crate) fn ensure() -> anyhow::Result<PathBuf> {
    let binary = tools::find_or_install(BIN_ENV, "promtool", install)?;
    step(format_args!("using {} ({})", binary.display(), version_of(&binary)?));
    Ok(binary)
}

/// `promtool check rules` and `promtool test rules` on the repository's rules, then
/// `promtool check rules` on the dashboard's queries, from `root`.
pub(crate) fn check_rules(promtool: &Path, root: &Path) -> anyhow::Result<()> {
    cmd::run(Command::new(promtool).args(["check", "rules", RULES]).current_dir(root).stdin(Stdio::null()))?;
    cmd::run(Command::new(promtool).args(["test", "rules", RULE_TESTS]).current_dir(root).stdin(Stdio::null()))?;
    let dashboard_path = root.join(DASHBOARD);
    let dashboard = std::fs::read_to_string(&dashboard_path)
        .with_context(|| format!("could not read {}", dashboard_path.display()))?;
    let dashboard: serde_json::Value =
        serde_json::from_str(&dashboard).with_context(|| format!("{} is not JSON", dashboard_path.display()))?;
    let rules = dashboard_rules(&dashboard);
    let dir = root.join("target").join("xtask");
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    let queries = dir.join("asynq-dashboard-queries.yml");
    std::fs::write(&queries, rules).with_context(|| format!("could not write {}", queries.display()))?;
    cmd::run(Command::new(promtool).arg("check").arg("rules").arg(&queries).stdin(Stdio::null()))
}

/// The dashboard's queries (every `expr`, at any depth) as a rule file of recording rules, one
/// per query, for `promtool check rules` to parse. A JSON string is a YAML double-quoted scalar.
fn dashboard_rules(dashboard: &serde_json::Value) -> String {
    let mut exprs = Vec::new();
    collect_exprs(dashboard, &mut exprs);
    let mut rules = String::from("# The Grafana dashboard's queries, for `promtool check rules` (written by xtask).\n");
    rules.push_str("groups:\n  - name: asynq-dashboard-queries\n    rules:\n");
    for (i, expr) in exprs.iter().enumerate() {
        let quoted = serde_json::Value::String((*expr).to_owned()).to_string();
        rules.push_str(&format!("      - record: asynq_dashboard:query_{}\n        expr: {quoted}\n", i + 1));
    }
    rules
}

/// Every string under an `expr` key of `value`, in document order.
fn collect_exprs<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match value {
                    serde_json::Value::String(expr) if key == "expr" => found.push(expr),
                    other => collect_exprs(other, found),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_exprs(item, found)),
        _ => {}
    }
}

/// Installs `prometheus` with apt when this is Debian or Ubuntu and we are root, then stops its
/// service; otherwise stops with the command to run.
fn install() -> anyhow::Result<()> {
    tools::Install {
        packages: &[APT_PACKAGE],
        missing: "promtool not found",
        needed: "promtool is needed to check the Prometheus alerting rules",
        elsewhere: &format!(
            "Install Prometheus 2.42 or newer (its release archive carries promtool), or set {BIN_ENV} to \
             the path of a promtool binary"
        ),
        instead: &format!("set {BIN_ENV} to the path of a promtool binary"),
    }
    .run()?;
    stop_service();
    Ok(())
}

/// Stops and disables the Prometheus service the package may have started: only `promtool` is
/// needed. Best effort: without systemd there is no service to stop.
fn stop_service() {
    let Some(systemctl) = find_executable(Path::new("systemctl")) else { return };
    let stopped = Command::new(systemctl)
        .args(["disable", "--now", "prometheus"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if stopped {
        step("stopped and disabled the prometheus service the package started (only promtool is needed)");
    }
}

/// `promtool --version`'s version, such as `2.42.0+ds`.
fn version_of(binary: &Path) -> anyhow::Result<String> {
    let stdout = tools::version_text(binary)?;
    parse_version(&stdout).map(str::to_owned).with_context(|| {
        format!("could not read a version from `{} --version`, which printed: {}", binary.display(), stdout.trim())
    })
}

/// The version in `promtool --version` output (`promtool, version 2.42.0+ds (branch: ...)`).
fn parse_version(output: &str) -> Option<&str> {
    let first_line = output.lines().next()?;
    let version = first_line.strip_prefix("promtool, version ")?.split_whitespace().next()?;
    Some(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_promtool_version_output() {
        let debian = "promtool, version 2.42.0+ds (branch: debian/sid, revision: 2.42.0+ds-5+deb12u1)\n  \
                      build user:       team+pkg-go@tracker.debian.org\n";
        assert_eq!(parse_version(debian), Some("2.42.0+ds"));
        assert_eq!(parse_version("promtool, version 2.53.1 (branch: HEAD)"), Some("2.53.1"));
        assert_eq!(parse_version("something else"), None);
        assert_eq!(parse_version(""), None);
    }

    #[test]
    fn the_rules_their_tests_and_the_dashboard_are_in_the_repository() {
        let root = crate::workspace_root();
        for file in [RULES, RULE_TESTS, DASHBOARD] {
            assert!(root.join(file).is_file(), "{file} is missing");
        }
    }

    #[test]
    fn every_dashboard_query_becomes_a_recording_rule() {
        let dashboard = serde_json::json!({
            "panels": [
                { "targets": [{ "expr": "max by (queue) (asynq_queue_size{queue=~\"$queue\"})" }] },
                { "targets": [{ "expr": "asynq_up" }, { "legendFormat": "{{instance}}" }] }
            ]
        });
        assert_eq!(
            dashboard_rules(&dashboard),
            "# The Grafana dashboard's queries, for `promtool check rules` (written by xtask).\n\
             groups:\n  - name: asynq-dashboard-queries\n    rules:\n\
             \x20     - record: asynq_dashboard:query_1\n\
             \x20       expr: \"max by (queue) (asynq_queue_size{queue=~\\\"$queue\\\"})\"\n\
             \x20     - record: asynq_dashboard:query_2\n\
             \x20       expr: \"asynq_up\"\n"
        );
        let ours = std::fs::read_to_string(crate::workspace_root().join(DASHBOARD)).unwrap();
        let rules = dashboard_rules(&serde_json::from_str(&ours).unwrap());
        assert!(rules.matches("- record: ").count() >= 10, "{rules}");
    }
}
