//! Concurrency limits shared by every server: at most `limit` tasks counted against one key run
//! at once, across every server sharing the broker.
//!
//! A running task holds a slot of its key until it finishes or its hold expires. Holds expire
//! with the task's lease and are renewed with it, so a slot held by a worker that died comes
//! back when its lease would have run out. [`SlotKey`] names what is counted (a task type, or a
//! key the application derives from the task), [`ConcurrencySlots`](crate::broker::ConcurrencySlots) is the broker role the
//! server asks for slots. A server whose task finds every slot held waits for one
//! ([`ConcurrencySlots::wait_for_slot`](crate::broker::ConcurrencySlots::wait_for_slot)): giving a slot back wakes the waiters of its key on
//! every server, as an enqueue wakes idle servers. Time comes from the caller's clock. Go asynq has no such limit (its
//! issues #542 and #797); nothing here is read or written by Go.

use crate::{Error, Result};
use std::fmt;

/// The longest slot key, in bytes.
pub const MAX_SLOT_KEY_LEN: usize = 512;

/// What a shared concurrency limit counts: not blank, at most [`MAX_SLOT_KEY_LEN`] bytes, no
/// control characters. Checked once, where it is made.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlotKey(String);

impl SlotKey {
    /// Checks `key`.
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        if key.trim().is_empty() {
            return Err(Error::invalid("slot key", "a concurrency slot key cannot be blank"));
        }
        if key.len() > MAX_SLOT_KEY_LEN {
            return Err(Error::invalid("slot key", format!("{} bytes, more than {MAX_SLOT_KEY_LEN}", key.len())));
        }
        if key.chars().any(char::is_control) {
            return Err(Error::invalid("slot key", "a concurrency slot key cannot hold control characters"));
        }
        Ok(Self(key))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SlotKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A shared limit: the key tasks count against, and how many may hold a slot of it at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLimit {
    key: SlotKey,
    limit: u32,
}

impl SharedLimit {
    /// At most `limit` tasks counted against `key` at once.
    ///
    /// Errors: [`Error::InvalidArgument`] for a bad key or a limit of zero.
    pub fn new(key: impl Into<String>, limit: u32) -> Result<Self> {
        if limit == 0 {
            return Err(Error::invalid("limit", "a concurrency limit of zero would run nothing"));
        }
        Ok(Self { key: SlotKey::new(key)?, limit })
    }

    /// The key.
    pub fn key(&self) -> &SlotKey {
        &self.key
    }

    /// The most holders at once.
    pub fn limit(&self) -> u32 {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_keys_and_limits_are_refused() {
        for bad in ["", "  ", "a\nb"] {
            assert!(matches!(SlotKey::new(bad), Err(Error::InvalidArgument { field: "slot key", .. })), "{bad:?}");
        }
        assert!(SlotKey::new("k".repeat(MAX_SLOT_KEY_LEN + 1)).is_err());
        assert!(matches!(SharedLimit::new("type:resize", 0), Err(Error::InvalidArgument { field: "limit", .. })));
        let limit = SharedLimit::new("tenant:42", 3).unwrap();
        assert_eq!((limit.key().as_str(), limit.limit()), ("tenant:42", 3));
    }
}
