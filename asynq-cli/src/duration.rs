//! Go's duration syntax (`time.ParseDuration`) for flags such as `--timeout 1m30s` and
//! `--refresh 8s`, and RFC 3339 times for `--deadline` and `--process_at`.

use crate::error::CliError;
use asynq_core::time::parse_go_duration;
use std::time::{Duration, SystemTime};

/// The duration flag `--<flag>`, or a usage error saying what is expected.
pub(crate) fn duration_flag(flag: &str, text: &str) -> Result<Duration, CliError> {
    parse_go_duration(text).ok_or_else(|| {
        CliError::usage(format!("invalid --{flag} {text:?}: expected a Go duration such as 30s, 1m30s or 2h"))
    })
}

/// The time flag `--<flag>` in RFC 3339, or a usage error saying what is expected.
pub(crate) fn time_flag(flag: &str, text: &str) -> Result<SystemTime, CliError> {
    chrono::DateTime::parse_from_rfc3339(text).map(SystemTime::from).map_err(|e| {
        CliError::usage(format!("invalid --{flag} {text:?} ({e}): expected RFC 3339, such as 2024-12-14T01:23:45Z"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339() {
        let t = time_flag("deadline", "2026-11-22T03:24:56Z").unwrap();
        assert_eq!(asynq_core::time::unix_secs(t), 1_795_317_896);
        assert!(time_flag("deadline", "tomorrow").unwrap_err().to_string().contains("RFC 3339"));
    }
}
