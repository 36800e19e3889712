//! Per task type metrics: how many attempts of each task type ran, how many failed and how long
//! they took, per queue, in minute and hour buckets (Sidekiq's Metrics page).
//!
//! Servers count the attempts they run in memory and add them to the record every few seconds
//! ([`TaskMetrics::record_task_metrics`](crate::broker::TaskMetrics::record_task_metrics)); operators' tools read it back
//! ([`TaskMetrics::task_metrics`](crate::broker::TaskMetrics::task_metrics)). The record is bounded: a bucket keeps at most
//! [`MAX_METRIC_TYPES`] task types, later ones counting under [`OTHER_TYPES`], and minute
//! buckets live [`MINUTE_BUCKETS_KEPT`], hour buckets [`HOUR_BUCKETS_KEPT`]. Go asynq neither
//! writes nor reads it: tasks a Go server runs are not in it.

use crate::{Error, QueueName, Result};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most distinct task types one bucket of one queue keeps; the attempts of further types
/// count under [`OTHER_TYPES`], so a flood of random type names cannot grow the record.
pub const MAX_METRIC_TYPES: usize = 100;
/// The name under which a full bucket counts the attempts of the types it has no room for. No
/// task has it: a task type is never blank.
pub const OTHER_TYPES: &str = "";
/// How long a minute bucket is kept after its last write.
pub const MINUTE_BUCKETS_KEPT: Duration = Duration::from_secs(2 * 60 * 60);
/// How long an hour bucket is kept after its last write.
pub const HOUR_BUCKETS_KEPT: Duration = Duration::from_secs(25 * 60 * 60);
/// The most buckets one read may ask for (a day of minutes, and some).
pub const MAX_METRIC_BUCKETS_READ: u64 = 1_500;
/// The longest task type name the record keeps; a longer one counts under [`OTHER_TYPES`].
pub const MAX_METRIC_TYPE_LEN: usize = 256;

/// The width of a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum MetricsResolution {
    /// One bucket per UTC minute.
    Minute,
    /// One bucket per UTC hour.
    Hour,
}

impl MetricsResolution {
    /// Both resolutions, as every sample is recorded at each.
    pub const ALL: [MetricsResolution; 2] = [MetricsResolution::Minute, MetricsResolution::Hour];

    /// The width of a bucket in seconds.
    pub fn seconds(self) -> u64 {
        match self {
            MetricsResolution::Minute => 60,
            MetricsResolution::Hour => 3_600,
        }
    }

    /// How long a bucket of this width is kept after its last write.
    pub fn kept(self) -> Duration {
        match self {
            MetricsResolution::Minute => MINUTE_BUCKETS_KEPT,
            MetricsResolution::Hour => HOUR_BUCKETS_KEPT,
        }
    }

    /// Its name in keys and in the API: `minute` or `hour`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricsResolution::Minute => "minute",
            MetricsResolution::Hour => "hour",
        }
    }

    /// The Unix second at which the bucket holding `at` starts (0 before 1970).
    pub fn bucket_of(self, at: SystemTime) -> u64 {
        let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        secs - secs % self.seconds()
    }

    /// The starts of the buckets from the one holding `from` to the one holding `to`, in Unix
    /// seconds, oldest first.
    ///
    /// Errors: [`Error::InvalidArgument`] when `to` is before `from` or the range holds more
    /// than [`MAX_METRIC_BUCKETS_READ`] buckets.
    pub fn buckets_between(self, from: SystemTime, to: SystemTime) -> Result<Vec<u64>> {
        let (first, last) = (self.bucket_of(from), self.bucket_of(to));
        if last < first {
            return Err(Error::invalid("metrics range", "the range ends before it starts"));
        }
        let count = (last - first) / self.seconds() + 1;
        if count > MAX_METRIC_BUCKETS_READ {
            return Err(Error::invalid(
                "metrics range",
                format!("{count} {} buckets, more than {MAX_METRIC_BUCKETS_READ}", self.as_str()),
            ));
        }
        Ok((0..count).map(|i| first + i * self.seconds()).collect())
    }
}

/// What the attempts of one task type in one bucket added up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct TypeCounts {
    /// Attempts whose handler returned (succeeded, failed or revoked the task; not one that
    /// parked it).
    pub runs: u64,
    /// Of those, the attempts that count as failures.
    pub failed: u64,
    /// Their handlers' run times added up, in milliseconds.
    pub total_ms: u64,
    /// The longest of them, in milliseconds.
    pub max_ms: u64,
}

impl TypeCounts {
    /// One attempt that ran for `duration`, failed or not.
    pub fn attempt(duration: Duration, failed: bool) -> Self {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        Self { runs: 1, failed: u64::from(failed), total_ms: ms, max_ms: ms }
    }

    /// Adds `other`'s counts to these (saturating).
    pub fn add(&mut self, other: &TypeCounts) {
        self.runs = self.runs.saturating_add(other.runs);
        self.failed = self.failed.saturating_add(other.failed);
        self.total_ms = self.total_ms.saturating_add(other.total_ms);
        self.max_ms = self.max_ms.max(other.max_ms);
    }

    /// The mean run time in milliseconds; `None` without runs.
    pub fn mean_ms(&self) -> Option<f64> {
        (self.runs > 0).then(|| self.total_ms as f64 / self.runs as f64)
    }

    /// Checks that the counts can be those of real attempts: no more failures than runs, no
    /// attempt longer than all of them together, no time without a run.
    ///
    /// Errors: [`Error::InvalidArgument`] naming what is wrong.
    pub fn check(&self) -> Result<()> {
        if self.failed > self.runs {
            return Err(Error::invalid("task metrics", format!("{} failed of {} runs", self.failed, self.runs)));
        }
        if self.max_ms > self.total_ms {
            return Err(Error::invalid("task metrics", "the longest attempt is longer than all of them"));
        }
        if self.runs == 0 && self.total_ms > 0 {
            return Err(Error::invalid("task metrics", "run time without runs"));
        }
        Ok(())
    }
}

/// What a server adds to the record: the attempts of one task type of one queue that ended in
/// the minute holding `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskMetricsSample {
    /// The queue the tasks were taken from.
    pub queue: QueueName,
    /// Their task type.
    pub type_name: String,
    /// An instant of the minute in which they ended.
    pub at: SystemTime,
    /// What they added up to.
    pub counts: TypeCounts,
}

/// One bucket of one queue: the counts of each task type it kept, [`OTHER_TYPES`] included
/// when it was full.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskMetricsBucket {
    /// The Unix second at which the bucket starts.
    pub start: u64,
    /// Per task type, its counts.
    pub types: BTreeMap<String, TypeCounts>,
}

impl TaskMetricsBucket {
    /// When the bucket starts.
    pub fn start_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.start)
    }
}

/// The name under which a bucket holding `types` counts `type_name`: its own while the bucket
/// knows it or has room for it, [`OTHER_TYPES`] otherwise (or when the name is longer than
/// [`MAX_METRIC_TYPE_LEN`]). What both brokers apply.
pub fn recorded_type_name<'a>(types: &BTreeMap<String, TypeCounts>, type_name: &'a str) -> &'a str {
    let known = types.contains_key(type_name);
    let room = types.keys().filter(|name| name.as_str() != OTHER_TYPES).count() < MAX_METRIC_TYPES;
    if known || (room && type_name.len() <= MAX_METRIC_TYPE_LEN) { type_name } else { OTHER_TYPES }
}

/// Checks every sample of a batch before any is written.
///
/// Errors: [`Error::InvalidArgument`] for a blank task type or counts that cannot be those of
/// real attempts ([`TypeCounts::check`]).
pub fn validate_samples(samples: &[TaskMetricsSample]) -> Result<()> {
    for sample in samples {
        if sample.type_name.trim().is_empty() {
            return Err(Error::invalid("task type", "task type name cannot be empty"));
        }
        sample.counts.check()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_aligned_and_bounded() {
        let at = UNIX_EPOCH + Duration::from_secs(3_600 * 5 + 61);
        assert_eq!(MetricsResolution::Minute.bucket_of(at), 3_600 * 5 + 60);
        assert_eq!(MetricsResolution::Hour.bucket_of(at), 3_600 * 5);
        let buckets = MetricsResolution::Minute.buckets_between(at - Duration::from_secs(120), at).unwrap();
        assert_eq!(buckets, vec![3_600 * 5 - 60, 3_600 * 5, 3_600 * 5 + 60]);
        assert!(MetricsResolution::Minute.buckets_between(at, at - Duration::from_secs(60)).is_err());
        let day = Duration::from_secs(86_400 * 2);
        assert!(MetricsResolution::Minute.buckets_between(at, at + day).is_err());
        assert_eq!(MetricsResolution::Hour.buckets_between(at, at + day).unwrap().len(), 49);
    }

    #[test]
    fn a_full_bucket_counts_new_types_as_others() {
        let mut types = BTreeMap::new();
        for i in 0..MAX_METRIC_TYPES {
            types.insert(format!("t{i}"), TypeCounts::default());
        }
        assert_eq!(recorded_type_name(&types, "t3"), "t3");
        assert_eq!(recorded_type_name(&types, "new"), OTHER_TYPES);
        types.insert(OTHER_TYPES.to_owned(), TypeCounts::default());
        assert_eq!(recorded_type_name(&types, "t99"), "t99");
        types.clear();
        assert_eq!(recorded_type_name(&types, &"x".repeat(MAX_METRIC_TYPE_LEN + 1)), OTHER_TYPES);
    }

    #[test]
    fn counts_add_up_and_are_checked() {
        let mut counts = TypeCounts::attempt(Duration::from_millis(30), false);
        counts.add(&TypeCounts::attempt(Duration::from_millis(10), true));
        assert_eq!(counts, TypeCounts { runs: 2, failed: 1, total_ms: 40, max_ms: 30 });
        assert_eq!(counts.mean_ms(), Some(20.0));
        counts.check().unwrap();
        assert!(TypeCounts { runs: 1, failed: 2, ..Default::default() }.check().is_err());
        assert!(TypeCounts { runs: 1, total_ms: 1, max_ms: 2, ..Default::default() }.check().is_err());
        assert!(TypeCounts { total_ms: 1, ..Default::default() }.check().is_err());
        let sample = |name: &str| TaskMetricsSample {
            queue: QueueName::default(),
            type_name: name.to_owned(),
            at: UNIX_EPOCH,
            counts,
        };
        validate_samples(&[sample("a")]).unwrap();
        assert!(validate_samples(&[sample("a"), sample(" ")]).is_err());
    }
}
