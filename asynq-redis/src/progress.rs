//! How a [`Progress`] report is stored in a task hash's `progress` field (ours; Go asynq
//! neither reads nor writes it): `<millionths done>:<reported at, Unix milliseconds>:<message>`.

use asynq_core::Progress;
use std::time::{Duration, UNIX_EPOCH};

/// The field's value for `progress`.
pub(crate) fn encode(progress: &Progress) -> String {
    let millis = progress.reported_at().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
    format!("{}:{millis}:{}", progress.millionths(), progress.message())
}

/// The report in a field's value; `None` for a value this module did not write.
pub(crate) fn decode(value: &[u8]) -> Option<Progress> {
    let text = std::str::from_utf8(value).ok()?;
    let mut parts = text.splitn(3, ':');
    let millionths = parts.next()?.parse().ok()?;
    let millis: u64 = parts.next()?.parse().ok()?;
    let message = parts.next()?.to_owned();
    let reported_at = UNIX_EPOCH.checked_add(Duration::from_millis(millis))?;
    Some(Progress::from_millionths(millionths, message, reported_at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_and_garbage_reads_as_none() {
        let at = UNIX_EPOCH + Duration::from_millis(1_764_000_000_123);
        let report = Progress::new(0.25, "step 2: a:b", at).unwrap();
        assert_eq!(encode(&report), "250000:1764000000123:step 2: a:b");
        assert_eq!(decode(encode(&report).as_bytes()), Some(report));
        for garbage in [&b""[..], b"x:1:m", b"1", b"1:x:m", b"\xff"] {
            assert_eq!(decode(garbage), None, "{garbage:?}");
        }
    }
}
