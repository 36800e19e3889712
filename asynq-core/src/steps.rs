//! Durable steps: the recorded results of the parts of a task that already succeeded, so that a
//! later attempt (a retry, or a run after a crash) returns them instead of doing the work again.
//!
//! A handler names each step of an attempt ([`StepName`]); when a step's body succeeds, its
//! result is recorded with the task ([`StepRecord`], through the
//! [`Steps`](crate::broker::Steps) capability) and goes when the task goes. A record is written
//! after the step's effect, so a crash between the two runs the step again: steps run at least
//! once each, and should be idempotent or keyed.

use crate::error::{Error, Result};
use crate::time::unix_nanos;
use bytes::Bytes;
use std::fmt;
use std::ops::Deref;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest step name, in bytes.
pub const MAX_STEP_NAME_LEN: usize = 200;

/// The largest recorded result of one step, in bytes: a record lives in the task's own record
/// (in Redis, a field of the task's hash), so it is meant for small values (IDs, amounts,
/// references), not for data.
pub const MAX_STEP_RESULT_LEN: usize = 256 * 1024;

/// The largest value of one signal, in bytes: a byte less than a step's result, as the wait that
/// receives it records it as its own step (kept, like a step's result, in the task's own
/// record).
pub const MAX_SIGNAL_LEN: usize = MAX_STEP_RESULT_LEN - 1;

/// Checks a signal's value before anything is written.
///
/// Errors: [`Error::TooLarge`] for a value over [`MAX_SIGNAL_LEN`] bytes.
pub fn check_signal_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_SIGNAL_LEN {
        return Err(Error::TooLarge {
            what: "signal value",
            size: value.len(),
            limit: MAX_SIGNAL_LEN,
            limit_by: "asynq_core::steps::MAX_SIGNAL_LEN",
        });
    }
    Ok(())
}

/// The JSON a signal of `value` carries (what `Client::signal` sends and
/// `TaskContext::wait_for_signal` decodes).
///
/// Errors: [`Error::InvalidArgument`] when `value` does not encode; [`Error::TooLarge`] from
/// [`check_signal_value`].
#[cfg(feature = "json")]
pub fn signal_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Bytes> {
    let bytes = serde_json::to_vec(value)
        .map_err(|e| Error::invalid("signal value", format!("cannot be encoded as JSON: {e}")))?;
    check_signal_value(&bytes)?;
    Ok(Bytes::from(bytes))
}

/// The name of a step, unique within one attempt at a task (a step in a loop puts its index in
/// its name): 1 to [`MAX_STEP_NAME_LEN`] bytes without control characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StepName(String);

impl StepName {
    /// `name`, checked.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty name, one longer than
    /// [`MAX_STEP_NAME_LEN`] bytes, or one holding a control character.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::invalid("step name", "must not be empty"));
        }
        if name.len() > MAX_STEP_NAME_LEN {
            return Err(Error::invalid(
                "step name",
                format!("{} bytes is longer than {MAX_STEP_NAME_LEN} bytes", name.len()),
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(Error::invalid("step name", format!("{name:?} must not contain control characters")));
        }
        Ok(Self(name))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for StepName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StepName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The recorded result of a step that succeeded: its name, its result's bytes (as the handler
/// encoded them) and when it was recorded, kept to the millisecond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    name: StepName,
    result: Bytes,
    recorded_at: SystemTime,
}

impl StepRecord {
    /// The record of step `name` with `result`, recorded at `recorded_at` (cut to the
    /// millisecond, as the brokers keep it).
    ///
    /// Errors: [`Error::TooLarge`] for a result over [`MAX_STEP_RESULT_LEN`] bytes.
    pub fn new(name: StepName, result: impl Into<Bytes>, recorded_at: SystemTime) -> Result<Self> {
        let result = result.into();
        if result.len() > MAX_STEP_RESULT_LEN {
            return Err(Error::TooLarge {
                what: "step result",
                size: result.len(),
                limit: MAX_STEP_RESULT_LEN,
                limit_by: "asynq_core::steps::MAX_STEP_RESULT_LEN",
            });
        }
        Ok(Self { name, result, recorded_at: to_millis(recorded_at) })
    }

    /// The step's name.
    pub fn name(&self) -> &StepName {
        &self.name
    }

    /// The step's result, as the handler encoded it (JSON for `TaskContext::step`).
    pub fn result(&self) -> &Bytes {
        &self.result
    }

    /// When the result was recorded, to the millisecond.
    pub fn recorded_at(&self) -> SystemTime {
        self.recorded_at
    }

    /// When it was recorded, in Unix milliseconds (how the brokers store it).
    pub fn recorded_at_millis(&self) -> u64 {
        self.recorded_at.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }

    /// The start of the result for a listing: up to `max` characters of its text (lossy for
    /// bytes that are not UTF-8), with `…` when cut.
    pub fn preview(&self, max: usize) -> String {
        let text = String::from_utf8_lossy(&self.result);
        let mut preview: String = text.chars().take(max).collect();
        if text.chars().count() > max {
            preview.push('…');
        }
        preview
    }
}

/// Why a handler parked its task ([`Parked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParkReason {
    /// A durable sleep (`TaskContext::sleep`): the task goes on when it is due.
    Sleep,
    /// A wait for the signal of this name (`TaskContext::wait_for_signal`): the task goes on
    /// when the signal comes, or when it is due (the wait's timeout).
    Signal(StepName),
}

/// A task its handler parked: scheduled until `until` without holding a worker, charged
/// nothing. Shown by the inspector ([`TaskInfo::parked`](crate::TaskInfo)) while the task is
/// scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    /// Why.
    pub reason: ParkReason,
    /// When it goes on at the latest, to the millisecond.
    pub until: SystemTime,
}

impl Parked {
    /// A task parked for `reason` until `until` (cut to the millisecond).
    pub fn new(reason: ParkReason, until: SystemTime) -> Self {
        Self { reason, until: to_millis(until) }
    }

    /// `until` in Unix milliseconds.
    pub fn until_millis(&self) -> u64 {
        self.until.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

impl fmt::Display for Parked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            ParkReason::Sleep => f.write_str("sleeping"),
            ParkReason::Signal(name) => write!(f, "waiting for signal {:?}", name.as_str()),
        }
    }
}

/// `t` cut to the millisecond.
fn to_millis(t: SystemTime) -> SystemTime {
    let millis = u64::try_from(unix_nanos(t) / 1_000_000).unwrap_or(0);
    UNIX_EPOCH + Duration::from_millis(millis)
}

/// The refusal to replace the waiting task `id` by its ID ([`Replace::Waiting`](crate::Replace)),
/// or to update its payload, once it has started: its handler recorded a step, or parked it and
/// has not gone on since. Its handler goes on from its records, made from the message it has, so
/// the task keeps that message: [`Error::FailedPrecondition`]. (A debounce leaves such a task
/// alone and stores its new task beside it.)
pub fn started_task_refused(id: &crate::TaskId) -> Error {
    Error::FailedPrecondition(format!(
        "task {id} has started (its handler parked it or recorded a step): only a task that has not started can be \
         replaced or edited"
    ))
}

/// Records in the order a listing shows them: by when they were recorded, then by name.
pub fn sort_step_records(records: &mut [StepRecord]) {
    records.sort_by(|a, b| a.recorded_at.cmp(&b.recorded_at).then_with(|| a.name.cmp(&b.name)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(StepName::new("charge").unwrap().as_str(), "charge");
        assert_eq!(StepName::new("ship:3").unwrap().to_string(), "ship:3");
        for bad in [String::new(), "a\nb".to_owned(), "x".repeat(MAX_STEP_NAME_LEN + 1)] {
            assert!(matches!(StepName::new(bad), Err(Error::InvalidArgument { field: "step name", .. })));
        }
        assert!(StepName::new("x".repeat(MAX_STEP_NAME_LEN)).is_ok());
    }

    #[test]
    fn a_result_over_the_limit_is_refused_and_times_are_cut_to_the_millisecond() {
        let name = StepName::new("s").unwrap();
        let at = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
        let record = StepRecord::new(name.clone(), vec![b'x'; MAX_STEP_RESULT_LEN], at).unwrap();
        assert_eq!(record.recorded_at_millis(), 1_700_000_000_123);
        assert_eq!(record.recorded_at(), UNIX_EPOCH + Duration::from_millis(1_700_000_000_123));
        let refused = StepRecord::new(name, vec![b'x'; MAX_STEP_RESULT_LEN + 1], at);
        assert!(matches!(refused, Err(Error::TooLarge { what: "step result", .. })));
    }

    #[test]
    fn previews_are_cut() {
        let record = StepRecord::new(StepName::new("s").unwrap(), "\"abcdef\"", UNIX_EPOCH).unwrap();
        assert_eq!(record.preview(3), "\"ab…");
        assert_eq!(record.preview(100), "\"abcdef\"");
    }
}
