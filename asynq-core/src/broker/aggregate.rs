//! The capability to aggregate groups of tasks.

#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::aggregate::{AggregationLimits, AggregationSet, GroupInfo};
use crate::error::Result;
use crate::names::{GroupName, QueueName};
use crate::options::EnqueueRequest;
use async_trait::async_trait;

/// Checks groups, and hands their tasks over for aggregation. Used by the server's aggregator
/// (every method) and its recoverer ([`Aggregate::reclaim_stale_aggregation_sets`]).
///
/// The stored form follows Go asynq's (wire-format spec 5.14–5.17): a group is a set of task
/// IDs scored by the second each joined; an aggregation set keeps those scores; a queue's
/// aggregation sets are indexed by their deadline. Members of a group or of a set are in state
/// [`Aggregating`](crate::TaskState::Aggregating) until deleted.
#[async_trait]
pub trait Aggregate: Send + Sync {
    /// The groups of `queue` the aggregator looks at, sorted by name, with how many tasks wait
    /// in each (Go's `groupStats`). A group emptied by an aggregation is no longer listed; one
    /// that only received tasks forwarded from the scheduled or retry set is not listed either
    /// (Go does not register it).
    ///
    /// Errors: [`Error::Broker`] when the backend fails.
    async fn groups(&self, queue: &QueueName) -> Result<Vec<GroupInfo>>;

    /// The names of the groups [`Aggregate::groups`] lists, sorted, without their sizes: what a
    /// walk through the groups one by one needs first. Provided: from [`Aggregate::groups`];
    /// the Redis broker reads only the names, about a quarter of the work at 100 000 groups.
    ///
    /// Errors: [`Error::Broker`] when the backend fails.
    async fn group_names(&self, queue: &QueueName) -> Result<Vec<GroupName>> {
        Ok(self.groups(queue).await?.into_iter().map(|info| info.group).collect())
    }

    /// How many tasks wait in `group` of `queue` (0 for a group or queue without any), without
    /// reading the other groups: what one group's page of the dashboard shows. Provided: found
    /// in [`Aggregate::groups`]; the memory and Redis brokers read the one group (a group that
    /// only received tasks forwarded from the scheduled or retry set counts them there, though
    /// `groups` does not list it).
    ///
    /// Errors: [`Error::Broker`] when the backend fails.
    async fn group_size(&self, queue: &QueueName, group: &GroupName) -> Result<usize> {
        Ok(self.groups(queue).await?.into_iter().find(|info| info.group == *group).map_or(0, |info| info.size))
    }

    /// Up to `limit` groups of `queue` that may be ready by `limits` at the broker's clock, for
    /// the aggregator to check ([`Aggregate::aggregation_check`] stays the judge): every group
    /// [`Aggregate::groups`] lists that is ready is named, unless `limit` groups are; groups
    /// that are not ready may be named too. The groups of the max size rule come first, then
    /// those of the max delay, then those of the grace period.
    ///
    /// A backend may answer from an index of its own rather than look at every group, in
    /// bounded work per call. The Redis broker keeps one in the same step as every change of
    /// its own to a group and names exactly the ready groups while nothing else writes; a
    /// group that Go's producers, servers or CLI changed may be named early, which is harmless,
    /// or, until a reconciliation reaches it (see the Redis broker's documentation), late, never
    /// later than one grace period after the newest task the index knew of.
    ///
    /// Errors: [`Error::InvalidArgument`] for invalid `limits` (see
    /// [`AggregationLimits::validate`]); [`Error::Broker`] when the backend fails.
    async fn ready_groups(&self, queue: &QueueName, limits: AggregationLimits, limit: usize) -> Result<Vec<GroupName>>;

    /// Checks whether `group` of `queue` is ready to aggregate, and if so moves the tasks to
    /// aggregate into a new aggregation set and returns its ID (Go's `aggregationCheck`).
    ///
    /// The rules, tried in this order, with "now" the broker's clock in whole seconds:
    /// 1. An empty group is never ready.
    /// 2. A group holding at least `max_size` tasks is ready: the `max_size` oldest are taken
    ///    (tasks that joined in the same second count from the lowest ID).
    /// 3. A group whose oldest task joined at least `max_delay` ago is ready.
    /// 4. A group whose newest task joined at least `grace_period` ago is ready.
    ///
    /// In cases 3 and 4 the whole group is taken (it holds fewer than `max_size` tasks). The set
    /// is due [`AGGREGATION_TIMEOUT`](crate::broker::AGGREGATION_TIMEOUT) from now. A group the check empties is no longer listed by
    /// [`Aggregate::groups`]. Tasks that join afterwards start a new round. Atomic: two
    /// concurrent checks never take the same task.
    ///
    /// Go passes its aggregator's tick time as "now"; the broker's clock reads the same
    /// instant, up to how long the check waited to run.
    ///
    /// Errors: [`Error::InvalidArgument`] for invalid `limits` (see
    /// [`AggregationLimits::validate`]); nothing is moved.
    async fn aggregation_check(
        &self,
        queue: &QueueName,
        group: &GroupName,
        limits: AggregationLimits,
    ) -> Result<Option<String>>;

    /// The members of aggregation set `set_id` of `group` in `queue`, in the order they joined
    /// the group (see [`AggregationSet::messages`]), and the set's deadline. A member whose task
    /// record is missing is left out.
    ///
    /// Errors: [`Error::AggregationSetNotFound`] if the set does not exist (it was completed,
    /// deleted, or reclaimed after its deadline); [`Error::InvalidArgument`] for a blank set ID.
    async fn read_aggregation_set(&self, queue: &QueueName, group: &GroupName, set_id: &str) -> Result<AggregationSet>;

    /// Enqueues `request`, the task the set's members were aggregated into, exactly as
    /// [`Enqueue::enqueue`](crate::broker::Enqueue::enqueue) would, and deletes the set and its
    /// members, all in one atomic step: a crash leaves either the members or the aggregated
    /// task, never both and never neither. The set's members' uniqueness locks are kept until
    /// their TTL, as Go keeps them.
    ///
    /// Go enqueues the aggregated task and then deletes the set in a second call, so a crash in
    /// between, or an aggregator that finishes after the set was reclaimed, runs the members
    /// twice; here a set that no longer exists is refused and nothing is written.
    ///
    /// Errors, each leaving everything as it was (the set is reclaimed once its deadline passes):
    /// [`Error::InvalidArgument`] for a blank set ID or a request for another queue than `queue`;
    /// [`Error::AggregationSetNotFound`] if the set does not exist; [`Error::TaskIdConflict`] and
    /// [`Error::DuplicateTask`] as for an enqueue.
    async fn complete_aggregation(
        &self,
        queue: &QueueName,
        group: &GroupName,
        set_id: &str,
        request: EnqueueRequest,
    ) -> Result<()>;

    /// Deletes aggregation set `set_id` of `group` in `queue` and its members' task records, as
    /// Go's `DeleteAggregationSet` does after enqueueing the aggregated task separately. A set
    /// that does not exist is no error. The members' uniqueness locks are kept until their TTL.
    ///
    /// Errors: [`Error::InvalidArgument`] for a blank set ID.
    async fn delete_aggregation_set(&self, queue: &QueueName, group: &GroupName, set_id: &str) -> Result<()>;

    /// Puts the members of every aggregation set of `queue` whose deadline has passed back into
    /// their group, each with the score it had there, and deletes those sets; returns how many
    /// sets were reclaimed (Go's `reclaimStaleAggregationSets`, run by the recoverer).
    ///
    /// Unlike Go, the group is registered again, so that [`Aggregate::groups`] lists it and the
    /// aggregator checks it anew; Go leaves a group emptied by its check unlisted, so the
    /// reclaimed tasks wait until another task joins the group.
    ///
    /// Errors: [`Error::Broker`] when the backend fails.
    async fn reclaim_stale_aggregation_sets(&self, queue: &QueueName) -> Result<usize>;
}
