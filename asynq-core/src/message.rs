//! The stored form of a task, field for field the `asynq.TaskMessage` protobuf message.

use crate::MAX_DURATION;
use crate::time::{MAX_UNIX_SECS, add_clamped, from_unix_secs, unix_secs};
use bytes::Bytes;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// A task as brokers store it: the fields of Go asynq's `TaskMessage` protobuf message, with its
/// units (seconds for durations, Unix seconds for instants, `0` or `""` for "not set").
///
/// Backends encode it in their own wire format (the Redis broker as protobuf); the server and
/// client work with it directly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskMessage {
    /// The task type name (field 1).
    pub type_name: String,
    /// The payload (field 2).
    pub payload: Bytes,
    /// Headers (field 15).
    pub headers: HashMap<String, String>,
    /// The task ID (field 3).
    pub id: String,
    /// The queue name (field 4).
    pub queue: String,
    /// How many times the task may be retried (field 5).
    pub retry: i32,
    /// How many times it has been retried so far (field 6).
    pub retried: i32,
    /// The last error message (field 7).
    pub error_msg: String,
    /// Unix seconds of the last failure, `0` if never (field 11).
    pub last_failed_at: i64,
    /// Timeout in seconds, `0` for none (field 8).
    pub timeout: i64,
    /// Deadline in Unix seconds, `0` for none (field 9).
    pub deadline: i64,
    /// The backend's uniqueness-lock key, `""` if the task is not unique (field 10).
    pub unique_key: String,
    /// The group name, `""` if not grouped (field 14).
    pub group_key: String,
    /// Retention after success in seconds (field 12).
    pub retention: i64,
    /// Unix seconds of successful completion, `0` if not completed (field 13).
    pub completed_at: i64,
}

/// [`MAX_DURATION`] in whole seconds: the longest timeout or retention a message is read as.
const MAX_SECS: i64 = MAX_DURATION.as_secs() as i64;

impl TaskMessage {
    /// The timeout, if one is set (a positive `timeout`); one longer than [`MAX_DURATION`] is
    /// read as its whole seconds, a negative one as none.
    pub fn timeout(&self) -> Option<Duration> {
        (self.timeout > 0).then(|| Duration::from_secs(self.timeout.min(MAX_SECS) as u64))
    }

    /// The deadline, if one is set, clamped to the years 1 to 9999 (see [`MAX_UNIX_SECS`]): one
    /// before 1970 is a deadline in the past, as in Go.
    pub fn deadline(&self) -> Option<SystemTime> {
        (self.deadline != 0).then(|| from_unix_secs(self.deadline))
    }

    /// The retention after success, if any (a positive `retention`); one longer than
    /// [`MAX_DURATION`] is read as its whole seconds.
    pub fn retention(&self) -> Option<Duration> {
        (self.retention > 0).then(|| Duration::from_secs(self.retention.min(MAX_SECS) as u64))
    }

    /// True when the task has used up its retries.
    pub fn retries_exhausted(&self) -> bool {
        self.retried >= self.retry
    }

    /// The instant by which a handler started at `started` must finish: the earlier of
    /// `started + timeout` and the deadline, or `started` + 30 minutes when neither is set
    /// (Go's `computeDeadline`, at second precision).
    ///
    /// Never overflows: the timeout is read through [`TaskMessage::timeout`] and the deadline
    /// through [`TaskMessage::deadline`], and the result is no later than [`MAX_UNIX_SECS`].
    pub fn handler_deadline(&self, started: SystemTime) -> SystemTime {
        let started_secs = from_unix_secs(unix_secs(started));
        let by_timeout = self.timeout().map(|t| add_clamped(started_secs, t));
        match (by_timeout, self.deadline()) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => add_clamped(started, crate::DEFAULT_TIMEOUT),
        }
    }

    /// When a task completed at `now` leaves the completed set, in Unix seconds (the set's
    /// score): `now + retention`, no later than [`MAX_UNIX_SECS`], and `now` for a retention
    /// that is not positive.
    pub fn completed_expiry(&self, now: SystemTime) -> i64 {
        let retention = self.retention().map_or(0, |r| r.as_secs() as i64);
        unix_secs(now).saturating_add(retention).min(MAX_UNIX_SECS)
    }

    /// The message as it is stored after a failed attempt: `error_msg` and `last_failed_at` set,
    /// and `retried` incremented when the failure counts (`is_failure`).
    pub fn failed(&self, error: &str, now: SystemTime, is_failure: bool) -> TaskMessage {
        let mut msg = self.clone();
        if is_failure {
            msg.retried = msg.retried.saturating_add(1);
        }
        msg.error_msg = error.to_owned();
        msg.last_failed_at = unix_secs(now);
        msg
    }

    /// The message as it is stored when archived: `error_msg` and `last_failed_at` set,
    /// `retried` unchanged.
    pub fn archived(&self, error: &str, now: SystemTime) -> TaskMessage {
        self.failed(error, now, false)
    }

    /// The message as it is stored on completion: `completed_at` set.
    pub fn completed(&self, now: SystemTime) -> TaskMessage {
        TaskMessage { completed_at: unix_secs(now), ..self.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> SystemTime {
        from_unix_secs(secs)
    }

    #[test]
    fn handler_deadline_takes_the_earlier_of_timeout_and_deadline() {
        let msg = TaskMessage { timeout: 60, deadline: 1_030, ..Default::default() };
        assert_eq!(msg.handler_deadline(at(1_000)), at(1_030));
        let msg = TaskMessage { timeout: 20, deadline: 1_030, ..Default::default() };
        assert_eq!(msg.handler_deadline(at(1_000)), at(1_020));
        let msg = TaskMessage { timeout: 20, ..Default::default() };
        assert_eq!(msg.handler_deadline(at(1_000)), at(1_020));
        let msg = TaskMessage { deadline: 5_000, ..Default::default() };
        assert_eq!(msg.handler_deadline(at(1_000)), at(5_000));
        let msg = TaskMessage::default();
        assert_eq!(msg.handler_deadline(at(1_000)), at(1_000 + 1_800));
    }

    #[test]
    fn corrupt_timeouts_and_deadlines_give_a_deadline_without_overflowing() {
        let latest = at(MAX_UNIX_SECS);
        let now = at(1_700_000_000);
        let longest = now + Duration::from_secs(MAX_SECS as u64);
        let cases = [
            // A timeout beyond Go's longest duration is read as it.
            (i64::MAX, 0, longest),
            (i64::MAX - 1, 0, longest),
            (MAX_SECS, 0, longest),
            // A negative timeout is none: the default applies.
            (i64::MIN, 0, now + crate::DEFAULT_TIMEOUT),
            (-1, 0, now + crate::DEFAULT_TIMEOUT),
            // A deadline past the year 9999 is read as its end; one before 1970 is in the past.
            (0, i64::MAX, latest),
            (0, i64::MIN, at(crate::time::MIN_UNIX_SECS)),
            (0, -1, at(-1)),
            (i64::MAX, i64::MAX, longest),
            (60, i64::MAX, now + Duration::from_secs(60)),
            (i64::MAX, 1_700_000_030, at(1_700_000_030)),
            (i64::MAX, i64::MIN, at(crate::time::MIN_UNIX_SECS)),
            (i64::MIN, i64::MIN, at(crate::time::MIN_UNIX_SECS)),
        ];
        for (timeout, deadline, expected) in cases {
            let msg = TaskMessage { timeout, deadline, ..Default::default() };
            assert_eq!(msg.handler_deadline(now), expected, "timeout {timeout}, deadline {deadline}");
        }
        // A start near the end of time stops there, whatever the timeout.
        for timeout in [0, 1, i64::MAX] {
            let msg = TaskMessage { timeout, ..Default::default() };
            assert_eq!(msg.handler_deadline(latest), latest, "timeout {timeout}");
        }
    }

    #[test]
    fn durations_past_gos_longest_are_read_as_it() {
        let msg = TaskMessage { timeout: i64::MAX, retention: i64::MAX, ..Default::default() };
        let longest = Duration::from_secs(MAX_SECS as u64);
        assert_eq!((msg.timeout(), msg.retention()), (Some(longest), Some(longest)));
        assert!(longest <= MAX_DURATION);
        let msg = TaskMessage { timeout: -5, retention: i64::MIN, ..Default::default() };
        assert_eq!((msg.timeout(), msg.retention()), (None, None));
    }

    #[test]
    fn completed_expiry_saturates_at_the_latest_instant() {
        let now = at(1_700_000_000);
        let expiry = |retention| TaskMessage { retention, ..Default::default() }.completed_expiry(now);
        assert_eq!(expiry(60), 1_700_000_060);
        assert_eq!(expiry(0), 1_700_000_000);
        assert_eq!(expiry(-60), 1_700_000_000);
        assert_eq!(expiry(i64::MIN), 1_700_000_000);
        assert_eq!(expiry(MAX_SECS), 1_700_000_000 + MAX_SECS);
        assert_eq!(expiry(i64::MAX), 1_700_000_000 + MAX_SECS);
        let late = TaskMessage { retention: i64::MAX, ..Default::default() };
        assert_eq!(late.completed_expiry(at(MAX_UNIX_SECS - 10)), MAX_UNIX_SECS);
        assert_eq!(late.completed_expiry(at(i64::MAX)), MAX_UNIX_SECS);
    }

    #[test]
    fn corrupt_counts_and_instants_never_overflow() {
        let msg = TaskMessage { retry: i32::MAX, retried: i32::MAX, last_failed_at: i64::MIN, ..Default::default() };
        assert!(msg.retries_exhausted());
        assert_eq!(msg.failed("x", at(5), true).retried, i32::MAX);
        let msg = TaskMessage { retry: i32::MIN, retried: i32::MIN, ..Default::default() };
        assert!(msg.retries_exhausted());
        assert_eq!(msg.failed("x", at(5), true).retried, i32::MIN + 1);
        let msg = TaskMessage { completed_at: i64::MAX, last_failed_at: i64::MIN, ..Default::default() };
        let info = crate::TaskInfo::new(&msg, crate::TaskState::Completed, Some(at(i64::MAX)), None);
        assert_eq!(info.completed_at, Some(at(MAX_UNIX_SECS)));
        assert_eq!(info.last_failed_at, Some(at(crate::time::MIN_UNIX_SECS)));
        assert_eq!(info.next_process_at, Some(at(MAX_UNIX_SECS)));
    }

    #[test]
    fn failures_count_only_when_they_are_failures() {
        let msg = TaskMessage { retry: 3, retried: 1, ..Default::default() };
        let failed = msg.failed("boom", at(77), true);
        assert_eq!((failed.retried, failed.error_msg.as_str(), failed.last_failed_at), (2, "boom", 77));
        assert_eq!(msg.failed("x", at(1), false).retried, 1);
        assert_eq!(msg.archived("x", at(1)).retried, 1);
    }
}
