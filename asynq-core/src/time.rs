//! Conversions between [`SystemTime`] and the integer units asynq's stores keep: whole Unix
//! seconds for the scores both brokers order tasks by (and Go's message fields, which only the
//! Redis broker encodes), Unix nanoseconds for `pending_since`, and UTC calendar dates for the
//! daily statistics counters.
//!
//! Instants read from stored data are clamped to [`MIN_UNIX_SECS`]..=[`MAX_UNIX_SECS`] (the
//! years 1 to 9999), so a corrupt field near the ends of `i64` neither overflows [`SystemTime`]
//! nor reaches code that formats or adds to it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The latest instant asynq handles, in Unix seconds: 9999-12-31T23:59:59Z, the last second
/// RFC 3339 can write. A stored instant beyond it is read as it; an expiry that would pass it
/// (a completed task's, a retry's) is written as it. Redis scores and Lua numbers (doubles)
/// hold it exactly.
pub const MAX_UNIX_SECS: i64 = 253_402_300_799;

/// The earliest instant asynq handles, in Unix seconds: 0001-01-01T00:00:00Z. A stored instant
/// before it is read as it.
pub const MIN_UNIX_SECS: i64 = -62_135_596_800;

/// Whole Unix seconds of `t`, rounded down (negative before 1970).
pub fn unix_secs(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => {
            let d = e.duration();
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            if d.subsec_nanos() > 0 { -secs - 1 } else { -secs }
        }
    }
}

/// Unix nanoseconds of `t`, saturating at the ends of `i64`.
pub fn unix_nanos(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map(|n| -n).unwrap_or(i64::MIN),
    }
}

/// The instant `secs` whole seconds after (or before, if negative) the Unix epoch, clamped to
/// [`MIN_UNIX_SECS`]..=[`MAX_UNIX_SECS`].
pub fn from_unix_secs(secs: i64) -> SystemTime {
    let secs = secs.clamp(MIN_UNIX_SECS, MAX_UNIX_SECS);
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

/// `t` rounded down to its whole second, the precision at which tasks store instants (clamped
/// as [`from_unix_secs`] clamps).
pub fn whole_secs(t: SystemTime) -> SystemTime {
    from_unix_secs(unix_secs(t))
}

/// `t + d`, or [`MAX_UNIX_SECS`] when that is later (or overflows [`SystemTime`]).
pub fn add_clamped(t: SystemTime, d: Duration) -> SystemTime {
    let latest = from_unix_secs(MAX_UNIX_SECS);
    t.checked_add(d).map_or(latest, |sum| sum.min(latest))
}

/// The instant `nanos` nanoseconds after (or before, if negative) the Unix epoch.
pub fn from_unix_nanos(nanos: i64) -> SystemTime {
    if nanos >= 0 {
        UNIX_EPOCH + Duration::from_nanos(nanos as u64)
    } else {
        UNIX_EPOCH - Duration::from_nanos(nanos.unsigned_abs())
    }
}

/// The UTC calendar date of `t` as `YYYY-MM-DD`, the suffix of asynq's daily counter keys.
pub fn utc_date(t: SystemTime) -> String {
    let days = unix_secs(t).div_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
/// Howard Hinnant's `civil_from_days` algorithm.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Parses a non-negative Go duration: a sequence of decimal numbers, each with an optional
/// fraction and a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), e.g. `300ms`, `1.5h`, `2h45m`;
/// `0` alone is zero.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let integer_len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (integer, after) = rest.split_at(integer_len);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => after.split_at(after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len())),
            None => ("", after),
        };
        if integer.is_empty() && fraction.is_empty() {
            return None;
        }
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let integer: u128 = if integer.is_empty() { 0 } else { integer.parse().ok()? };
        let mut nanos = integer.checked_mul(unit_nanos)?;
        if !fraction.is_empty() {
            // Digits past nanosecond precision cannot change the result.
            let digits = &fraction[..fraction.len().min(30)];
            let scale = 10u128.pow(digits.len() as u32);
            nanos = nanos.checked_add(digits.parse::<u128>().ok()?.checked_mul(unit_nanos)? / scale)?;
        }
        total = total.checked_add(nanos)?;
        rest = after;
    }
    let total = u64::try_from(total).ok().filter(|n| *n <= i64::MAX as u64)?;
    Some(Duration::from_nanos(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_as_go_parses_them() {
        let cases = [
            ("30s", Duration::from_secs(30)),
            ("1m30s", Duration::from_secs(90)),
            ("1.5h", Duration::from_secs(5_400)),
            ("500ms", Duration::from_millis(500)),
            ("2h45m10s", Duration::from_secs(9_910)),
            ("1µs", Duration::from_micros(1)),
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("+90s", Duration::from_secs(90)),
            (".5m", Duration::from_secs(30)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_go_duration(text), Some(expected), "{text}");
        }
        for bad in ["", "30", "1x", "-5s", "s", "1h 30m", "..5s", "99999999999999999999h"] {
            assert_eq!(parse_go_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn dates_match_known_calendar_days() {
        assert_eq!(utc_date(from_unix_secs(0)), "1970-01-01");
        assert_eq!(utc_date(from_unix_secs(1_795_317_896)), "2026-11-22");
        assert_eq!(utc_date(from_unix_secs(951_782_400)), "2000-02-29");
        assert_eq!(utc_date(from_unix_secs(-1)), "1969-12-31");
    }

    #[test]
    fn seconds_round_down() {
        let t = from_unix_secs(10) + Duration::from_millis(999);
        assert_eq!(unix_secs(t), 10);
        assert_eq!(unix_secs(from_unix_secs(-5) + Duration::from_millis(500)), -5);
        assert_eq!(unix_secs(from_unix_secs(-5) - Duration::from_millis(500)), -6);
        assert_eq!(unix_nanos(from_unix_nanos(1_795_317_896_236_443_862)), 1_795_317_896_236_443_862);
    }

    #[test]
    fn instants_beyond_the_years_1_to_9999_are_clamped() {
        assert_eq!(utc_date(from_unix_secs(MAX_UNIX_SECS)), "9999-12-31");
        assert_eq!(utc_date(from_unix_secs(MIN_UNIX_SECS)), "0001-01-01");
        for (secs, clamped) in [
            (i64::MAX, MAX_UNIX_SECS),
            (MAX_UNIX_SECS + 1, MAX_UNIX_SECS),
            (i64::MIN, MIN_UNIX_SECS),
            (MIN_UNIX_SECS - 1, MIN_UNIX_SECS),
            (-1, -1),
        ] {
            assert_eq!(unix_secs(from_unix_secs(secs)), clamped, "{secs}");
        }
    }

    #[test]
    fn clamped_additions_stop_at_the_latest_instant() {
        let latest = from_unix_secs(MAX_UNIX_SECS);
        assert_eq!(add_clamped(from_unix_secs(10), Duration::from_secs(5)), from_unix_secs(15));
        assert_eq!(add_clamped(from_unix_secs(10), Duration::MAX), latest);
        assert_eq!(add_clamped(latest, Duration::from_secs(1)), latest);
    }
}
