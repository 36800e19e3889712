//! Names that carry their rules: a [`QueueName`], a [`TaskId`] and a [`GroupName`] are checked
//! once, when they are made, so the code that takes one never checks it again.
//!
//! Each dereferences to `str`, compares with strings, and prints as the bare name.
//!
//! ```
//! use asynq_core::{QueueName, TaskId};
//!
//! let queue = QueueName::new("critical")?;
//! assert_eq!(queue, "critical");
//! assert!(QueueName::new("tenant{7}").is_err()); // would break the Redis Cluster hash tag
//! assert!(TaskId::new(" ").is_err());
//! # Ok::<(), asynq_core::Error>(())
//! ```

use crate::error::{Error, Result};
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

/// What is wrong with `name` as a `what`, if anything: the rules every name shares (not blank,
/// no control characters), then `forbidden` characters.
fn check(what: &str, name: &str, forbidden: &[char]) -> std::result::Result<(), String> {
    if name.trim().is_empty() {
        return Err(format!("{what} cannot be empty"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("{what} {name:?} must not contain control characters (found {c:?})"));
    }
    if let Some(c) = name.chars().find(|c| forbidden.contains(c)) {
        return Err(format!("{what} {name:?} must not contain {c:?}"));
    }
    Ok(())
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $field:literal, $what:literal, $forbidden:expr) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Checks `name` against the rules above.
            ///
            /// Errors: [`Error::InvalidArgument`] naming the rule it breaks.
            pub fn new(name: impl Into<String>) -> Result<Self> {
                let name = name.into();
                check($what, &name, $forbidden).map_err(|reason| Error::invalid($field, reason))?;
                Ok(Self(name))
            }

            /// A name known to be valid, such as a literal in a test or an example.
            ///
            /// # Panics
            /// If `name` breaks the rules.
            #[track_caller]
            pub fn from_static(name: &'static str) -> Self {
                match Self::new(name) {
                    Ok(name) => name,
                    Err(e) => panic!("{e}"),
                }
            }

            /// The name.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The name, as an owned string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(name: &str) -> Result<Self> {
                Self::new(name)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = Error;
            fn try_from(name: &str) -> Result<Self> {
                Self::new(name)
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(name: String) -> Result<Self> {
                Self::new(name)
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> String {
                name.0
            }
        }

        impl From<&$name> for String {
            fn from(name: &$name) -> String {
                name.0.clone()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

name_type!(
    /// A queue name: not blank, without control characters, and without `{` or `}`, which would
    /// break the Redis Cluster hash tag every key of a queue carries (Go does not check this).
    QueueName,
    "queue",
    "queue name",
    &['{', '}']
);

name_type!(
    /// A task ID, unique within its queue: not blank and without control characters.
    TaskId,
    "task ID",
    "task ID",
    &[]
);

name_type!(
    /// A group name, the key under which tasks aggregate: not blank and without control
    /// characters.
    GroupName,
    "group",
    "group name",
    &[]
);

name_type!(
    /// A workflow's ID, unique among workflows: not blank and without control characters.
    WorkflowId,
    "workflow ID",
    "workflow ID",
    &[]
);

impl Default for QueueName {
    /// The [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE), `default`.
    fn default() -> Self {
        QueueName(crate::DEFAULT_QUEUE.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason<T: fmt::Debug>(made: Result<T>) -> (&'static str, String) {
        match made {
            Err(Error::InvalidArgument { field, reason }) => (field, reason),
            other => panic!("expected an invalid argument, got {other:?}"),
        }
    }

    #[test]
    fn names_state_the_rule_they_break() {
        assert_eq!(reason(QueueName::new("")), ("queue", "queue name cannot be empty".to_owned()));
        assert_eq!(reason(QueueName::new(" \t")).0, "queue");
        assert_eq!(reason(QueueName::new("a{b}")), ("queue", "queue name \"a{b}\" must not contain '{'".to_owned()));
        assert_eq!(reason(QueueName::new("b}")).1, "queue name \"b}\" must not contain '}'");
        let (field, why) = reason(QueueName::new("q\n"));
        assert_eq!(
            (field, why.as_str()),
            ("queue", "queue name \"q\\n\" must not contain control characters (found '\\n')")
        );
        assert_eq!(reason(TaskId::new("  ")), ("task ID", "task ID cannot be empty".to_owned()));
        assert_eq!(reason(TaskId::new("a\u{7f}")).0, "task ID");
        assert_eq!(reason(GroupName::new("")), ("group", "group name cannot be empty".to_owned()));
        assert_eq!(reason(GroupName::new("g\0")).0, "group");
        // Braces are fine outside queue names; so is any printable Unicode.
        assert!(TaskId::new("a{b}").is_ok() && GroupName::new("a{b}").is_ok());
        assert!(QueueName::new("tenant:7 critical ✓").is_ok());
    }

    #[test]
    fn names_read_as_their_strings() {
        let queue = QueueName::from_static("critical");
        assert_eq!(queue, "critical");
        assert_eq!("critical", queue);
        assert_eq!(queue.len(), 8);
        assert_eq!(format!("{queue} {queue:?}"), "critical \"critical\"");
        assert_eq!("critical".parse::<QueueName>().unwrap(), queue);
        assert_eq!(String::from(queue.clone()), "critical");
        assert_eq!(QueueName::default(), crate::DEFAULT_QUEUE);
        let set: std::collections::HashSet<QueueName> = [queue].into();
        assert!(set.contains("critical"));
    }

    #[test]
    #[should_panic(expected = "invalid task ID: task ID cannot be empty")]
    fn from_static_panics_on_a_name_that_breaks_the_rules() {
        TaskId::from_static("");
    }
}
