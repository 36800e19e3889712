//! The archive's limits and what archiving more tasks would drop.
//!
//! Each queue's archive keeps fewer than [`ArchiveLimits::max_size`] tasks and none older than
//! [`ArchiveLimits::max_age`]: whenever a task is archived (a failure out of retries, or an
//! operator's archive), tasks archived at or before `now - max_age` are deleted, then the oldest
//! beyond the newest `max_size - 1`. The defaults are Go asynq's `maxArchiveSize` (10 000) and
//! `archivedExpirationInDays` (90 days). [`ArchiveOutlook`] says beforehand what archiving a
//! number of tasks would drop; [`ArchiveReport`] says afterwards what it did.

use crate::time::unix_secs;
use crate::{ARCHIVE_MAX_AGE, ARCHIVE_MAX_SIZE, Error, Result};
use std::fmt;
use std::time::{Duration, SystemTime};

/// The smallest [`ArchiveLimits::max_size`]: an archive that keeps at least one task.
pub const MIN_ARCHIVE_SIZE: usize = 2;
/// The largest [`ArchiveLimits::max_size`] (a billion tasks: far past any Redis's memory).
pub const MAX_ARCHIVE_SIZE: usize = 1_000_000_000;
/// The longest [`ArchiveLimits::max_age`]: 100 years.
pub const MAX_ARCHIVE_AGE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// How much a queue's archive keeps: fewer than `max_size` tasks, none archived `max_age` ago
/// or earlier. Made only by [`ArchiveLimits::new`] (checked) or [`Default`] (Go's limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArchiveLimits {
    max_size: usize,
    max_age: Duration,
}

impl Default for ArchiveLimits {
    /// Go asynq's limits: [`ARCHIVE_MAX_SIZE`] (10 000) and [`ARCHIVE_MAX_AGE`] (90 days).
    fn default() -> Self {
        Self { max_size: ARCHIVE_MAX_SIZE, max_age: ARCHIVE_MAX_AGE }
    }
}

impl ArchiveLimits {
    /// Limits keeping at most `max_size - 1` tasks, each for less than `max_age`.
    ///
    /// Errors: [`Error::InvalidArgument`] for a `max_size` outside
    /// [`MIN_ARCHIVE_SIZE`]`..=`[`MAX_ARCHIVE_SIZE`], or a `max_age` that is not a whole number
    /// of seconds from 1 s to [`MAX_ARCHIVE_AGE`].
    pub fn new(max_size: usize, max_age: Duration) -> Result<Self> {
        if !(MIN_ARCHIVE_SIZE..=MAX_ARCHIVE_SIZE).contains(&max_size) {
            return Err(Error::invalid(
                "archive_max_size",
                format!(
                    "{max_size} is not in {MIN_ARCHIVE_SIZE}..={MAX_ARCHIVE_SIZE} (the archive keeps max_size - 1 tasks; \
                     Go asynq's is {ARCHIVE_MAX_SIZE})"
                ),
            ));
        }
        if max_age.is_zero() || max_age.subsec_nanos() != 0 || max_age > MAX_ARCHIVE_AGE {
            return Err(Error::invalid(
                "archive_max_age",
                format!(
                    "{max_age:?} is not a whole number of seconds from 1s to {} days (Go asynq's is 90 days)",
                    MAX_ARCHIVE_AGE.as_secs() / 86_400
                ),
            ));
        }
        Ok(Self { max_size, max_age })
    }

    /// The size limit: the archive keeps at most `max_size - 1` tasks after a trim.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// The age limit: tasks archived this long ago or earlier are deleted at the next archive.
    pub fn max_age(&self) -> Duration {
        self.max_age
    }

    /// How many tasks the archive keeps at most after a trim: `max_size - 1`.
    pub fn kept(&self) -> usize {
        self.max_size - 1
    }

    /// The age limit in words, in the largest unit that divides it: "90 days", "1 hour".
    pub fn max_age_text(&self) -> String {
        age_text(self.max_age)
    }

    /// Whether these are Go asynq's limits.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The age cutoff at `now`, in Unix seconds: archived tasks scored at or before it are
    /// deleted by the next trim.
    pub fn cutoff_secs(&self, now: SystemTime) -> i64 {
        unix_secs(now).saturating_sub(self.max_age.as_secs() as i64)
    }

    /// What archiving `adding` more tasks into an archive that holds `archived` tasks, `expired`
    /// of them past the age limit, would drop (the trim after the archive, as both brokers do
    /// it, whether in one step or several).
    pub fn outlook(&self, archived: usize, expired: usize, adding: usize) -> ArchiveOutlook {
        let expired = expired.min(archived);
        let after = archived - expired + adding;
        ArchiveOutlook { limits: *self, archived, adding, expired, over_size: after.saturating_sub(self.kept()) }
    }
}

impl fmt::Display for ArchiveLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at most {} tasks, for less than {}", self.kept(), age_text(self.max_age))
    }
}

/// A duration in days, hours, minutes or seconds, whichever divides it.
fn age_text(age: Duration) -> String {
    let secs = age.as_secs();
    let (n, name) = [(86_400, "day"), (3_600, "hour"), (60, "minute"), (1, "second")]
        .into_iter()
        .find(|(unit, _)| secs.is_multiple_of(*unit))
        .map_or((secs, "second"), |(unit, name)| (secs / unit, name));
    format!("{n} {name}{}", if n == 1 { "" } else { "s" })
}

/// What archiving some more tasks into a queue's archive would drop, from
/// [`ArchiveLimits::outlook`] or the brokers' `Manage::archive_outlook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ArchiveOutlook {
    /// The archive's limits.
    pub limits: ArchiveLimits,
    /// How many tasks the archive holds now.
    pub archived: usize,
    /// How many tasks would be archived.
    pub adding: usize,
    /// How many archived tasks are past the age limit: the next archive deletes them.
    pub expired: usize,
    /// How many tasks the size limit would drop, oldest first (the tasks being archived too,
    /// when they alone are more than the archive keeps).
    pub over_size: usize,
}

impl ArchiveOutlook {
    /// Every task the archive would drop: those past the age limit and those over the size
    /// limit.
    pub fn dropped(&self) -> usize {
        self.expired + self.over_size
    }

    /// Whether archiving would drop nothing.
    pub fn drops_nothing(&self) -> bool {
        self.dropped() == 0
    }
}

impl fmt::Display for ArchiveOutlook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "archiving {} tasks would drop {} archived tasks ({} over the size limit of {}, {} past the age limit of {}); \
             the archive holds {}",
            self.adding,
            self.dropped(),
            self.over_size,
            self.limits.max_size,
            self.expired,
            age_text(self.limits.max_age),
            self.archived
        )
    }
}

/// What a bulk archive did: how many tasks it archived and how many the archive's trim dropped,
/// as the backend counted them while trimming.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ArchiveReport {
    /// Tasks archived.
    pub archived: usize,
    /// Archived tasks deleted for being past the age limit.
    pub trimmed_by_age: usize,
    /// Archived tasks deleted for being over the size limit (possibly some just archived).
    pub trimmed_by_size: usize,
}

impl ArchiveReport {
    /// A report of `archived` tasks archived and the trims' counts.
    pub fn new(archived: usize, trimmed_by_age: usize, trimmed_by_size: usize) -> Self {
        Self { archived, trimmed_by_age, trimmed_by_size }
    }

    /// Every task the trims deleted.
    pub fn trimmed(&self) -> usize {
        self.trimmed_by_age + self.trimmed_by_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked_and_default_to_gos() {
        let go = ArchiveLimits::default();
        assert_eq!((go.max_size(), go.max_age(), go.kept()), (10_000, Duration::from_secs(90 * 86_400), 9_999));
        assert!(go.is_default());
        for size in [0, 1, MAX_ARCHIVE_SIZE + 1] {
            let err = ArchiveLimits::new(size, ARCHIVE_MAX_AGE).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument { field: "archive_max_size", .. }), "{err}");
        }
        for age in [Duration::ZERO, Duration::from_millis(1500), MAX_ARCHIVE_AGE + Duration::from_secs(1)] {
            let err = ArchiveLimits::new(10, age).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument { field: "archive_max_age", .. }), "{err}");
        }
        let small = ArchiveLimits::new(5, Duration::from_secs(3600)).unwrap();
        assert_eq!(small.to_string(), "at most 4 tasks, for less than 1 hour");
    }

    #[test]
    fn the_outlook_counts_what_the_trim_drops() {
        let limits = ArchiveLimits::new(5, Duration::from_secs(60)).unwrap();
        // Room left: nothing dropped.
        assert!(limits.outlook(1, 0, 3).drops_nothing());
        // One over the 4 kept.
        let o = limits.outlook(2, 0, 3);
        assert_eq!((o.over_size, o.expired, o.dropped()), (1, 0, 1));
        // Expired ones go first and make room.
        let o = limits.outlook(4, 3, 3);
        assert_eq!((o.over_size, o.expired, o.dropped()), (0, 3, 3));
        // More added than the archive keeps: the added ones are dropped too.
        let o = limits.outlook(0, 0, 10);
        assert_eq!(o.dropped(), 6);
        assert!(o.to_string().contains("would drop 6 archived tasks"), "{o}");
    }
}
