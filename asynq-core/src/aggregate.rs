//! Groups and their aggregation: the broker side of Go asynq's `Group` option and its
//! aggregator.
//!
//! A task enqueued with [`TaskOptions::group`](crate::TaskOptions::group) waits, aggregating, in
//! its group. The server's aggregator checks each group ([`Aggregate::aggregation_check`](crate::broker::Aggregate::aggregation_check)); once
//! the group is ready, the check moves the tasks to aggregate into an *aggregation set* with a
//! deadline ([`AGGREGATION_TIMEOUT`] from now). The aggregator reads the set, combines its tasks
//! into one, and [completes](Aggregate::complete_aggregation) the set: the combined task is
//! enqueued and the members deleted in one atomic step. A set whose aggregator died is
//! [reclaimed](Aggregate::reclaim_stale_aggregation_sets) once its deadline has passed: its
//! members go back to their group and are aggregated again.

use crate::error::{Error, Result};
use crate::names::{GroupName, QueueName};
use crate::stored::StoredTask;
use std::time::{Duration, SystemTime};

/// How long an aggregator has to finish with an aggregation set before the recoverer reclaims
/// it (Go's `aggregationTimeout`).
pub const AGGREGATION_TIMEOUT: Duration = Duration::from_secs(2 * 60);

/// The grace period of a group when none is configured (Go's default `GroupGracePeriod`).
pub const DEFAULT_GROUP_GRACE_PERIOD: Duration = Duration::from_secs(60);

/// One group of a queue and how many tasks wait in it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupInfo {
    /// The group name.
    pub group: GroupName,
    /// How many tasks wait in the group (not counting those already taken into an aggregation
    /// set).
    pub size: usize,
}

impl GroupInfo {
    /// Group `group` holding `size` tasks.
    pub fn new(group: GroupName, size: usize) -> Self {
        Self { group, size }
    }
}

/// When a group is ready to be aggregated. The limits count in whole seconds, as Go's do.
///
/// ```
/// use asynq_core::broker::AggregationLimits;
/// use std::time::Duration;
///
/// let limits = AggregationLimits { max_size: Some(100), ..AggregationLimits::default() };
/// assert_eq!(limits.grace_period, Duration::from_secs(60));
/// assert!(limits.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregationLimits {
    /// A group is ready once its newest task has waited this long, i.e. once no task joined it
    /// for this long. At least one second. Default: one minute.
    pub grace_period: Duration,
    /// A group is ready once its oldest task has waited this long, however often tasks join.
    /// At least one second; `None` (the default) for no limit.
    pub max_delay: Option<Duration>,
    /// A group is ready once it holds this many tasks, and an aggregation takes at most this
    /// many. At least one; `None` (the default) for no limit.
    pub max_size: Option<usize>,
}

impl Default for AggregationLimits {
    fn default() -> Self {
        Self { grace_period: DEFAULT_GROUP_GRACE_PERIOD, max_delay: None, max_size: None }
    }
}

impl AggregationLimits {
    /// Checks the limits: a grace period and a max delay of at least one second (Go refuses a
    /// shorter grace period, and would silently turn a shorter max delay into no limit), and a
    /// max size of at least one.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the limit at fault.
    pub fn validate(&self) -> Result<()> {
        if self.grace_period < Duration::from_secs(1) {
            return Err(Error::invalid("group grace period", format!("{:?} is less than 1s", self.grace_period)));
        }
        if let Some(max_delay) = self.max_delay
            && max_delay < Duration::from_secs(1)
        {
            return Err(Error::invalid(
                "group max delay",
                format!("{max_delay:?} is less than 1s; use no max delay for no limit"),
            ));
        }
        if self.max_size == Some(0) {
            return Err(Error::invalid("group max size", "0 tasks; use no max size for no limit"));
        }
        Ok(())
    }
}

/// The tasks of one aggregation set, as [`Aggregate::read_aggregation_set`](crate::broker::Aggregate::read_aggregation_set) returns them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregationSet {
    /// The members' stored messages, in the order they joined the group (to the second; tasks
    /// that joined in the same second in the order of their IDs).
    pub messages: Vec<StoredTask>,
    /// When the set becomes stale: after it, the recoverer may put its members back in their
    /// group.
    pub deadline: SystemTime,
}

/// Checks the ID of an aggregation set (its queue and group are checked by their types): not
/// blank.
pub fn validate_aggregation_set(set_id: &str) -> Result<()> {
    if set_id.trim().is_empty() {
        return Err(Error::invalid("aggregation set ID", "aggregation set ID cannot be empty"));
    }
    Ok(())
}

/// Checks a request to complete an aggregation: the set's ID (as [`validate_aggregation_set`])
/// and that the aggregated task goes to the group's own queue.
pub fn validate_aggregation_completion(queue: &QueueName, set_id: &str, request: &crate::EnqueueRequest) -> Result<()> {
    validate_aggregation_set(set_id)?;
    if request.message.queue != *queue {
        return Err(Error::invalid(
            "queue",
            format!("the aggregated task is for queue {:?}, not the group's queue {queue:?}", request.message.queue),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::InvalidArgument { field, .. }) => field,
            other => panic!("expected an invalid argument, got {other:?}"),
        }
    }

    #[test]
    fn limits_below_go_minimums_are_refused() {
        let secs = Duration::from_secs;
        let limits = |grace_period, max_delay, max_size| AggregationLimits { grace_period, max_delay, max_size };
        assert!(limits(secs(1), Some(secs(1)), Some(1)).validate().is_ok());
        assert!(AggregationLimits::default().validate().is_ok());
        assert_eq!(field(limits(Duration::from_millis(999), None, None).validate()), "group grace period");
        assert_eq!(field(limits(secs(5), Some(Duration::from_millis(500)), None).validate()), "group max delay");
        assert_eq!(field(limits(secs(5), None, Some(0)).validate()), "group max size");
    }

    #[test]
    fn aggregation_sets_need_an_id() {
        assert!(validate_aggregation_set("set").is_ok());
        assert_eq!(field(validate_aggregation_set(" ")), "aggregation set ID");
    }
}
