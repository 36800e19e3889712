//! Task priorities within a queue: which of a queue's pending tasks runs first.

use crate::error::{Error, Result};
use std::fmt;

/// A task's priority within its queue ([`TaskOptions::priority`](crate::TaskOptions::priority)):
/// an integer from [`TaskPriority::MIN`] (−10) to [`TaskPriority::MAX`] (10), higher first,
/// first in first out among tasks of one priority. The default, 0, is Go asynq's: such a task
/// waits in Go's pending list, where Go's servers take it too.
///
/// A queue's pending tasks are dequeued in this order: those above the default, highest first;
/// then those of the default priority (Go's pending list); then those below the default,
/// highest first. A priority orders tasks within one queue only: which queue a server takes
/// from next is its queue weights' business, as before. A task keeps its priority through
/// scheduling, retries, requeues and an operator's run, and [`TaskInfo::priority`](crate::TaskInfo::priority)
/// shows it.
///
/// ```
/// use asynq_core::{Error, TaskPriority};
///
/// assert_eq!(TaskPriority::new(3)?.get(), 3);
/// assert!(TaskPriority::new(3)? > TaskPriority::DEFAULT);
/// assert!(matches!(TaskPriority::new(11), Err(Error::InvalidArgument { field: "priority", .. })));
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskPriority(i8);

impl TaskPriority {
    /// The lowest priority, −10: dequeued after every other pending task of its queue.
    pub const MIN: TaskPriority = TaskPriority(-10);
    /// The highest priority, 10: dequeued before every other pending task of its queue.
    pub const MAX: TaskPriority = TaskPriority(10);
    /// The default priority, 0: Go asynq's pending list.
    pub const DEFAULT: TaskPriority = TaskPriority(0);

    /// Checks `n`: [`Error::InvalidArgument`] (field `"priority"`) unless it is from
    /// [`TaskPriority::MIN`] to [`TaskPriority::MAX`].
    pub fn new(n: i32) -> Result<Self> {
        match i8::try_from(n) {
            Ok(n) if (Self::MIN.0..=Self::MAX.0).contains(&n) => Ok(Self(n)),
            _ => Err(Error::invalid(
                "priority",
                format!("{n} is out of range: a priority is from {} to {}", Self::MIN, Self::MAX),
            )),
        }
    }

    /// The priority as a number.
    pub const fn get(self) -> i8 {
        self.0
    }

    /// Whether this is the default priority, whose tasks wait in Go's pending list.
    pub const fn is_default(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for TaskPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_is_minus_ten_to_ten_and_nothing_else() {
        for n in -10..=10 {
            assert_eq!(i32::from(TaskPriority::new(n).unwrap().get()), n);
        }
        for n in [-11, 11, 127, -128, 128, i32::MAX, i32::MIN] {
            let Err(Error::InvalidArgument { field, reason }) = TaskPriority::new(n) else { panic!("{n} accepted") };
            assert_eq!(field, "priority");
            assert!(reason.contains(&n.to_string()) && reason.contains("-10") && reason.contains("10"), "{reason}");
        }
        assert_eq!(TaskPriority::default(), TaskPriority::DEFAULT);
        assert!(TaskPriority::DEFAULT.is_default() && !TaskPriority::MAX.is_default());
        assert!(TaskPriority::MIN < TaskPriority::DEFAULT && TaskPriority::DEFAULT < TaskPriority::MAX);
        assert_eq!(TaskPriority::MIN.to_string(), "-10");
    }
}
