//! Conversions between [`SystemTime`] and the integer units asynq stores: Unix seconds for scores
//! and message fields, Unix nanoseconds for `pending_since`, and UTC calendar dates for the daily
//! statistics counters.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// The instant `secs` whole seconds after (or before, if negative) the Unix epoch.
pub fn from_unix_secs(secs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
