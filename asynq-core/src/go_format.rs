//! Go's text forms of durations, instants and strings, as Go asynq writes them into the option
//! strings of its scheduler entries (`Timeout(1m30s)`, `Deadline(Mon Jan  2 15:04:05 UTC 2006)`,
//! `Queue("critical")`) and as its inspector parses them back.

use crate::time::{civil_from_days, unix_secs};
use std::fmt::Write;
use std::time::{Duration, SystemTime};

/// `d` as Go's `time.Duration.String()` writes it: `0s`, `1.5s`, `1m30s`, `1h0m0s`, `500ms`,
/// `1.5µs`, `12ns`. Durations past Go's `int64` nanoseconds (292 years) saturate there.
pub(crate) fn go_duration(d: Duration) -> String {
    let nanos = u64::try_from(d.as_nanos()).unwrap_or(i64::MAX as u64).min(i64::MAX as u64);
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000_000_000 {
        // Below a second Go switches to the largest unit that keeps an integer part.
        let (unit, digits) = match nanos {
            n if n < 1_000 => ("ns", 0),
            n if n < 1_000_000 => ("µs", 3),
            _ => ("ms", 6),
        };
        return format!("{}{unit}", decimal(nanos, digits));
    }
    let total_secs = nanos / 1_000_000_000;
    let (hours, minutes, seconds) = (total_secs / 3600, total_secs / 60 % 60, total_secs % 60);
    let seconds = decimal(seconds * 1_000_000_000 + nanos % 1_000_000_000, 9);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

/// `value / 10^digits` with its fraction written only as far as it is non-zero, as Go's
/// `fmtFrac` does: `decimal(1_500, 3)` is `1.5`, `decimal(2_000, 3)` is `2`.
fn decimal(value: u64, digits: u32) -> String {
    let scale = 10u64.pow(digits);
    let (integer, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return integer.to_string();
    }
    let fraction = format!("{fraction:0width$}", width = digits as usize);
    format!("{integer}.{}", fraction.trim_end_matches('0'))
}

/// `t` in UTC in Go's `time.UnixDate` layout, `Mon Jan _2 15:04:05 MST 2006`, whole seconds:
/// `Sun Nov 22 00:00:00 UTC 2026`, `Mon Jan  2 15:04:05 UTC 2006` (the day padded with a space).
pub(crate) fn go_unix_date(t: SystemTime) -> String {
    const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = unix_secs(t);
    let (days, second_of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let weekday = WEEKDAYS[(days + 4).rem_euclid(7) as usize];
    let (hour, minute, second) = (second_of_day / 3600, second_of_day / 60 % 60, second_of_day % 60);
    let month = MONTHS[month as usize - 1];
    format!("{weekday} {month} {day:>2} {hour:02}:{minute:02}:{second:02} UTC {year}")
}

/// `s` quoted as Go's `%q` (`strconv.Quote`) quotes it: in double quotes, with `"` and `\`
/// escaped, control characters as `\n`, `\t`, ... or `\x1b`, other non-printable characters as
/// `\u…`; printable non-ASCII text is kept as it is.
pub(crate) fn go_quote(s: &str) -> String {
    let mut quoted = String::with_capacity(s.len() + 2);
    quoted.push('"');
    for c in s.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            c if c.is_ascii_control() => write!(quoted, "\\x{:02x}", c as u32).expect("writing to a String"),
            c if c.is_control() => write!(quoted, "\\u{:04x}", c as u32).expect("writing to a String"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::from_unix_secs;

    #[test]
    fn durations_read_as_go_writes_them() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(12), "12ns"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_micros(500), "500µs"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_micros(1_250), "1.25ms"),
            (Duration::from_secs(1), "1s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(300), "5m0s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_secs(86_400), "24h0m0s"),
            (Duration::from_secs(3_723) + Duration::from_millis(4), "1h2m3.004s"),
            (Duration::from_secs(u64::MAX), "2562047h47m16.854775807s"),
        ];
        for (d, expected) in cases {
            assert_eq!(go_duration(d), expected, "{d:?}");
        }
    }

    #[test]
    fn instants_read_as_go_unix_date() {
        assert_eq!(go_unix_date(from_unix_secs(1_136_214_245)), "Mon Jan  2 15:04:05 UTC 2006");
        assert_eq!(go_unix_date(from_unix_secs(1_795_305_600)), "Sun Nov 22 00:00:00 UTC 2026");
        assert_eq!(go_unix_date(from_unix_secs(0) + Duration::from_millis(999)), "Thu Jan  1 00:00:00 UTC 1970");
        assert_eq!(go_unix_date(from_unix_secs(-1)), "Wed Dec 31 23:59:59 UTC 1969");
    }

    #[test]
    fn strings_are_quoted_as_go_quotes_them() {
        assert_eq!(go_quote("critical"), r#""critical""#);
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(go_quote("\u{1b}\u{7f}\u{85}"), r#""\x1b\x7f\u0085""#);
        assert_eq!(go_quote("é 日本"), "\"é 日本\"");
    }

    #[test]
    fn task_options_render_as_go_option_strings() {
        use crate::TaskOptions;
        assert!(TaskOptions::new().go_option_strings().is_empty());
        let all = TaskOptions::new()
            .group("g")
            .retention(Duration::from_secs(86_400))
            .task_id("id-1")
            .unique(Duration::from_secs(3600))
            .process_in(Duration::from_secs(300))
            .deadline(from_unix_secs(1_795_305_600))
            .timeout(Duration::from_secs(90))
            .max_retry(5)
            .queue("critical");
        assert_eq!(
            all.go_option_strings(),
            [
                r#"Queue("critical")"#,
                "MaxRetry(5)",
                "Timeout(1m30s)",
                "Deadline(Sun Nov 22 00:00:00 UTC 2026)",
                "ProcessIn(5m0s)",
                "Unique(1h0m0s)",
                r#"TaskID("id-1")"#,
                "Retention(24h0m0s)",
                r#"Group("g")"#,
            ]
        );
        let at = TaskOptions::new().process_at(from_unix_secs(1_136_214_245));
        assert_eq!(at.go_option_strings(), ["ProcessAt(Mon Jan  2 15:04:05 UTC 2006)"]);
    }
}
