//! [`Progress`]: how far a running task has come, as its handler last reported it.

use crate::error::{Error, Result};
use std::fmt;
use std::time::SystemTime;

/// How far a running task has come: a fraction done and a short message, as its handler last
/// reported it (`TaskContext::progress` in `asynq-server`), with the time of the report.
///
/// The fraction is kept to a millionth, so that two reports compare exactly.
#[derive(Clone, PartialEq, Eq)]
pub struct Progress {
    millionths: u32,
    message: String,
    reported_at: SystemTime,
}

impl Progress {
    /// The longest message a report may carry, in bytes.
    pub const MAX_MESSAGE_LEN: usize = 200;

    /// A report of `fraction` done (0.0 to 1.0) with `message`, made at `reported_at`.
    ///
    /// Errors: [`Error::InvalidArgument`] for a fraction outside 0.0..=1.0 (or not a number), or
    /// a message longer than [`Progress::MAX_MESSAGE_LEN`] bytes or holding a control character.
    pub fn new(fraction: f64, message: impl Into<String>, reported_at: SystemTime) -> Result<Self> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(Error::invalid("progress", format!("fraction {fraction} is not between 0 and 1")));
        }
        let message = message.into();
        if message.len() > Self::MAX_MESSAGE_LEN {
            return Err(Error::invalid(
                "progress",
                format!("message of {} bytes is longer than {} bytes", message.len(), Self::MAX_MESSAGE_LEN),
            ));
        }
        if message.chars().any(char::is_control) {
            return Err(Error::invalid("progress", format!("message {message:?} must not contain control characters")));
        }
        Ok(Self { millionths: (fraction * 1e6).round() as u32, message, reported_at })
    }

    /// A report read back from storage: `millionths` of the work done (clamped to a million).
    pub fn from_millionths(millionths: u32, message: String, reported_at: SystemTime) -> Self {
        Self { millionths: millionths.min(1_000_000), message, reported_at }
    }

    /// The fraction done, 0.0 to 1.0.
    pub fn fraction(&self) -> f64 {
        f64::from(self.millionths) / 1e6
    }

    /// The fraction done in millionths, as stored.
    pub fn millionths(&self) -> u32 {
        self.millionths
    }

    /// The message of the report (may be empty).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// When the handler made the report.
    pub fn reported_at(&self) -> SystemTime {
        self.reported_at
    }
}

impl fmt::Display for Progress {
    /// `42%`, or `42% resizing` with a message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let percent = f64::from(self.millionths) / 1e4;
        if self.message.is_empty() { write!(f, "{percent:.0}%") } else { write!(f, "{percent:.0}% {}", self.message) }
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("fraction", &self.fraction())
            .field("message", &self.message)
            .field("reported_at", &self.reported_at)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_keeps_its_fraction_to_a_millionth_and_refuses_bad_input() {
        let at = SystemTime::UNIX_EPOCH;
        let p = Progress::new(0.4213337, "resizing", at).unwrap();
        assert_eq!((p.millionths(), p.message(), p.to_string()), (421_334, "resizing", "42% resizing".to_owned()));
        assert_eq!(Progress::new(1.0, "", at).unwrap().to_string(), "100%");
        for bad in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
            let e = Progress::new(bad, "", at).unwrap_err();
            assert!(e.to_string().contains("is not between 0 and 1"), "{e}");
        }
        assert!(Progress::new(0.5, "x".repeat(201), at).unwrap_err().to_string().contains("longer than 200"));
        assert!(Progress::new(0.5, "a\nb", at).unwrap_err().to_string().contains("control characters"));
        assert_eq!(Progress::from_millionths(2_000_000, String::new(), at).fraction(), 1.0);
    }
}
