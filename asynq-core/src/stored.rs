//! The stored form of a task: what a broker keeps of it, in Rust units.

use crate::names::{GroupName, QueueName, TaskId};
use crate::time::{add_clamped, whole_secs};
use bytes::Bytes;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// A task as brokers store it, in Rust units: `Duration`s, `SystemTime`s, and `None` for
/// "not set".
///
/// It holds what Go asynq's `TaskMessage` protobuf message holds, at its precision: instants
/// and durations in whole seconds ([`resolve_enqueue`](crate::resolve_enqueue) and the methods
/// below store them so). How a backend encodes it is the backend's own business: the Redis
/// broker writes Go's message, with its units (Unix seconds, `0` or `""` for "not set"), and
/// reads a corrupt one's numbers clamped into range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTask {
    /// The task type name.
    pub type_name: String,
    /// The payload.
    pub payload: Bytes,
    /// Headers, such as a trace context.
    pub headers: HashMap<String, String>,
    /// The task ID, unique within its queue.
    pub id: TaskId,
    /// The queue it is in.
    pub queue: QueueName,
    /// How many times the task may be retried.
    pub max_retry: u32,
    /// How many times it has been retried so far.
    pub retried: u32,
    /// The error of its last failed attempt, if one failed.
    pub last_error: Option<String>,
    /// When its last attempt failed, if one did.
    pub last_failed_at: Option<SystemTime>,
    /// How long an attempt may run, if limited; with neither this nor a deadline an attempt
    /// runs for at most [`DEFAULT_TIMEOUT`](crate::DEFAULT_TIMEOUT).
    pub timeout: Option<Duration>,
    /// When every attempt must have ended, if set.
    pub deadline: Option<SystemTime>,
    /// The key of the uniqueness lock the task holds, if it is unique; the backend's own
    /// ([`Enqueue::enqueue`](crate::broker::Enqueue::enqueue) fills it in).
    pub unique_key: Option<String>,
    /// The group it aggregates in, if grouped.
    pub group: Option<GroupName>,
    /// How long it is kept as completed after success; `None` deletes it at once.
    pub retention: Option<Duration>,
    /// When it completed, once it has.
    pub completed_at: Option<SystemTime>,
}

impl StoredTask {
    /// A task of type `type_name` with an empty payload and no headers, no retries, and no
    /// other option set: the start of a task built field by field (in a test, a backend).
    pub fn new(id: TaskId, queue: QueueName, type_name: impl Into<String>) -> Self {
        StoredTask {
            type_name: type_name.into(),
            payload: Bytes::new(),
            headers: HashMap::new(),
            id,
            queue,
            max_retry: 0,
            retried: 0,
            last_error: None,
            last_failed_at: None,
            timeout: None,
            deadline: None,
            unique_key: None,
            group: None,
            retention: None,
            completed_at: None,
        }
    }

    /// True when the task has used up its retries.
    pub fn retries_exhausted(&self) -> bool {
        self.retried >= self.max_retry
    }

    /// The instant by which a handler started at `started` must finish: the earlier of
    /// `started + timeout` and the deadline, or `started` + 30 minutes when neither is set
    /// (Go's `computeDeadline`, at second precision).
    ///
    /// Never overflows: the result is no later than [`MAX_UNIX_SECS`](crate::time::MAX_UNIX_SECS).
    pub fn handler_deadline(&self, started: SystemTime) -> SystemTime {
        let by_timeout = self.timeout.map(|t| add_clamped(whole_secs(started), t));
        match (by_timeout, self.deadline) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => add_clamped(started, crate::DEFAULT_TIMEOUT),
        }
    }

    /// When a task completed at `now` leaves the completed set: `now` (in whole seconds) plus
    /// the retention, no later than [`MAX_UNIX_SECS`](crate::time::MAX_UNIX_SECS).
    pub fn completed_expiry(&self, now: SystemTime) -> SystemTime {
        add_clamped(whole_secs(now), self.retention.unwrap_or_default())
    }

    /// The task as it is stored after a failed attempt: its last error (none if `error` is
    /// empty) and failure time set, and `retried` incremented when the failure counts
    /// (`is_failure`).
    pub fn failed(&self, error: &str, now: SystemTime, is_failure: bool) -> StoredTask {
        let mut task = self.clone();
        if is_failure {
            task.retried = task.retried.saturating_add(1);
        }
        task.last_error = (!error.is_empty()).then(|| error.to_owned());
        task.last_failed_at = Some(whole_secs(now));
        task
    }

    /// The task as it is stored when archived: its last error and failure time set, `retried`
    /// unchanged.
    pub fn archived(&self, error: &str, now: SystemTime) -> StoredTask {
        self.failed(error, now, false)
    }

    /// The task as it is stored on completion: `completed_at` set.
    pub fn completed(&self, now: SystemTime) -> StoredTask {
        StoredTask { completed_at: Some(whole_secs(now)), ..self.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MAX_UNIX_SECS, from_unix_secs};

    fn at(secs: i64) -> SystemTime {
        from_unix_secs(secs)
    }

    fn blank() -> StoredTask {
        StoredTask::new(TaskId::from_static("a"), QueueName::default(), "t")
    }

    fn secs(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n))
    }

    #[test]
    fn handler_deadline_takes_the_earlier_of_timeout_and_deadline() {
        let task = |timeout, deadline: Option<i64>| StoredTask { timeout, deadline: deadline.map(at), ..blank() };
        assert_eq!(task(secs(60), Some(1_030)).handler_deadline(at(1_000)), at(1_030));
        assert_eq!(task(secs(20), Some(1_030)).handler_deadline(at(1_000)), at(1_020));
        assert_eq!(task(secs(20), None).handler_deadline(at(1_000)), at(1_020));
        assert_eq!(task(None, Some(5_000)).handler_deadline(at(1_000)), at(5_000));
        assert_eq!(task(None, None).handler_deadline(at(1_000)), at(1_000 + 1_800));
        // The timeout runs from the start's whole second, as Go's does.
        let started = at(1_000) + Duration::from_millis(900);
        assert_eq!(task(secs(20), None).handler_deadline(started), at(1_020));
    }

    #[test]
    fn deadlines_and_expiries_saturate_at_the_latest_instant() {
        let latest = at(MAX_UNIX_SECS);
        let longest = StoredTask { timeout: Some(Duration::MAX), retention: Some(Duration::MAX), ..blank() };
        assert_eq!(longest.handler_deadline(at(1_700_000_000)), latest);
        assert_eq!(longest.handler_deadline(latest), latest);
        assert_eq!(blank().handler_deadline(latest), latest);
        assert_eq!(longest.completed_expiry(at(1_700_000_000)), latest);
        let none = blank();
        assert_eq!(none.completed_expiry(at(1_700_000_000) + Duration::from_millis(500)), at(1_700_000_000));
        let minute = StoredTask { retention: secs(60), ..blank() };
        assert_eq!(minute.completed_expiry(at(1_700_000_000)), at(1_700_000_060));
        assert_eq!(minute.completed_expiry(at(MAX_UNIX_SECS - 10)), latest);
    }

    #[test]
    fn failures_count_only_when_they_are_failures() {
        let task = StoredTask { max_retry: 3, retried: 1, ..blank() };
        let failed = task.failed("boom", at(77) + Duration::from_millis(300), true);
        assert_eq!(
            (failed.retried, failed.last_error.as_deref(), failed.last_failed_at),
            (2, Some("boom"), Some(at(77)))
        );
        assert_eq!(task.failed("x", at(1), false).retried, 1);
        assert_eq!(task.archived("x", at(1)).retried, 1);
        assert_eq!(task.failed("", at(1), true).last_error, None);
        let worn = StoredTask { max_retry: u32::MAX, retried: u32::MAX, ..blank() };
        assert!(worn.retries_exhausted());
        assert_eq!(worn.failed("x", at(5), true).retried, u32::MAX);
    }
}
