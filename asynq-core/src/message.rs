//! The stored form of a task, field for field the `asynq.TaskMessage` protobuf message.

use crate::time::{from_unix_secs, unix_secs};
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

impl TaskMessage {
    /// The timeout, if one is set.
    pub fn timeout(&self) -> Option<Duration> {
        (self.timeout > 0).then(|| Duration::from_secs(self.timeout as u64))
    }

    /// The deadline, if one is set.
    pub fn deadline(&self) -> Option<SystemTime> {
        (self.deadline != 0).then(|| from_unix_secs(self.deadline))
    }

    /// The retention after success, if any.
    pub fn retention(&self) -> Option<Duration> {
        (self.retention > 0).then(|| Duration::from_secs(self.retention as u64))
    }

    /// True when the task has used up its retries.
    pub fn retries_exhausted(&self) -> bool {
        self.retried >= self.retry
    }

    /// The instant by which a handler started at `started` must finish: the earlier of
    /// `started + timeout` and the deadline, or `started` + 30 minutes when neither is set
    /// (Go's `computeDeadline`, at second precision).
    pub fn handler_deadline(&self, started: SystemTime) -> SystemTime {
        let by_timeout = self.timeout().map(|t| from_unix_secs(unix_secs(started)) + t);
        match (by_timeout, self.deadline()) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => started + crate::DEFAULT_TIMEOUT,
        }
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
    fn failures_count_only_when_they_are_failures() {
        let msg = TaskMessage { retry: 3, retried: 1, ..Default::default() };
        let failed = msg.failed("boom", at(77), true);
        assert_eq!((failed.retried, failed.error_msg.as_str(), failed.last_failed_at), (2, "boom", 77));
        assert_eq!(msg.failed("x", at(1), false).retried, 1);
        assert_eq!(msg.archived("x", at(1)).retried, 1);
    }
}
