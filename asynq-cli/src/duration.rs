//! Go's duration syntax (`time.ParseDuration`) for flags such as `--timeout 1m30s` and
//! `--refresh 8s`, and RFC 3339 times for `--deadline` and `--process-at`.

use crate::error::CliError;
use asynq_core::time::parse_go_duration;
use std::time::{Duration, SystemTime};

/// The duration flag `--<flag>`, or a usage error saying what is expected.
pub(crate) fn duration_flag(flag: &str, text: &str) -> Result<Duration, CliError> {
    parse_go_duration(text).ok_or_else(|| {
        CliError::usage(format!("invalid --{flag} {text:?}: expected a Go duration such as 30s, 1m30s or 2h"))
    })
}

/// The shortest `--refresh` of `asynq dash` and `asynq web`, as in Go's tool.
pub(crate) const MIN_REFRESH: Duration = Duration::from_secs(1);
/// The longest `--refresh`: a dashboard refreshed less often shows stale data; and the web
/// page's `setInterval` would fire at once for intervals past 2^31 ms (about 24.8 days).
pub(crate) const MAX_REFRESH: Duration = Duration::from_secs(3600);

/// The `--refresh` interval of a dashboard, from 1s to 1h, or a usage error naming the bound.
pub(crate) fn refresh_flag(text: &str) -> Result<Duration, CliError> {
    let refresh = duration_flag("refresh", text)?;
    if refresh < MIN_REFRESH {
        return Err(CliError::usage(format!("--refresh {text} is too short: the minimum is 1s")));
    }
    if refresh > MAX_REFRESH {
        return Err(CliError::usage(format!("--refresh {text} is too long: the maximum is 1h")));
    }
    Ok(refresh)
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

    #[test]
    fn refresh_intervals_run_from_a_second_to_an_hour() {
        assert_eq!(refresh_flag("1s").unwrap(), MIN_REFRESH);
        assert_eq!(refresh_flag("1h").unwrap(), MAX_REFRESH);
        assert!(refresh_flag("999ms").unwrap_err().to_string().contains("minimum is 1s"));
        assert!(refresh_flag("1h0m1s").unwrap_err().to_string().contains("maximum is 1h"));
        assert!(refresh_flag("2562047h").unwrap_err().to_string().contains("maximum is 1h"));
    }
}
