//! The capability of sharded queues: logical queues stored as several ordinary queues.

use super::{Inspect, Manage};
use crate::Error;
use crate::error::Result;
use crate::names::QueueName;
use crate::shard::{DrainingShards, RetiredTotals, ShardedQueue, is_drained};
use async_trait::async_trait;
use std::time::SystemTime;

/// Keeps the declarations of sharded queues ([`ShardedQueue`]), which producers, workers and
/// operators read to agree on each logical queue's shards. Opt-in, through
/// [`Capabilities::as_sharded_queues`](crate::broker::Capabilities::as_sharded_queues).
#[async_trait]
pub trait ShardedQueues: Send + Sync {
    /// Declares `logical` as a queue of `count` shards, or answers its declaration when it is
    /// declared with `count` shards already. The broker names the shards (on a Redis Cluster,
    /// salted so that they land on distinct masters as evenly as it can) and registers them as
    /// queues.
    ///
    /// Errors, with nothing written: [`Error::InvalidArgument`] for a count out of
    /// 1..=[`MAX_SHARDS`](crate::shard::MAX_SHARDS) or a name holding
    /// [`SHARD_SEPARATOR`](crate::shard::SHARD_SEPARATOR); [`Error::QueueNameConflict`] when
    /// `logical` is a queue already, when a queue named `<logical>~…` exists, or when `logical`
    /// is declared with another count (which [`ShardedQueues::reshard_queue`] changes).
    async fn declare_sharded_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue>;

    /// Changes the count of the declared `logical` to `count`: a new generation of `count`
    /// shards, named as [`generation_shard_name`](crate::shard::generation_shard_name) names
    /// them and registered as queues, where producers place tasks from now on, the previous
    /// generation kept as [`DrainingShards`](crate::shard::DrainingShards) since the broker's
    /// clock's now, served until [`ShardedQueues::drop_drained_shards`] drops it. Answers the
    /// declaration as it is when its newest generation has `count` shards already. Written
    /// only if the declaration did not change since it was read, so two reshards at once make
    /// one generation, not two.
    ///
    /// Errors, with nothing written: [`Error::InvalidArgument`] for a count out of
    /// 1..=[`MAX_SHARDS`](crate::shard::MAX_SHARDS) or an invalid name;
    /// [`Error::FailedPrecondition`] when `logical` is not declared, when a previous generation
    /// still drains (one drains at a time), or when the declaration changed meanwhile;
    /// [`Error::QueueNameConflict`] when a queue the new shards would be taken for exists.
    async fn reshard_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue>;

    /// Drops the draining generation of `logical` when it is drained
    /// ([`is_drained`](crate::shard::is_drained) at the broker's clock's now): removes its
    /// shards' queues (each only if empty), then the generation from the declaration (only if
    /// the declaration did not change meanwhile). Returns whether it dropped one; `false` when
    /// `logical` is not declared, has no draining generation, or it is not drained yet.
    async fn drop_drained_shards(&self, logical: &QueueName) -> Result<bool>;

    /// The declaration of `logical`, if it is declared.
    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>>;

    /// Every declaration, in the order of their logical names.
    async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>>;
}

/// Removes the queues of `draining`, the previous generation of a sharded queue, once it is
/// drained at `now` ([`is_drained`](crate::shard::is_drained)): what a broker's
/// [`ShardedQueues::drop_drained_shards`] does before it drops the generation from the
/// declaration. Each removal is [`Manage::delete_queue`] without force, so it checks again that
/// its queue holds no task. Returns, once every shard is gone, what the removed queues had
/// processed and failed in all (for [`ShardedQueue::drained`]); `None`, with what was removed
/// left removed, when one is not drained or not empty. A shard already gone counts nothing:
/// should a server stop between removing shards and rewriting the declaration, or a second
/// server rewrite it first with a partial view, the totals of the shards it did not see are lost
/// (counts only: a shard is removed only when it holds no task).
pub async fn remove_drained_shards<B>(
    broker: &B,
    draining: &DrainingShards,
    now: SystemTime,
) -> Result<Option<RetiredTotals>>
where
    B: Inspect + Manage + ?Sized,
{
    if !draining.grace_over(now) {
        return Ok(None);
    }
    let mut infos = Vec::with_capacity(draining.shards().len());
    for shard in draining.shards() {
        match broker.queue_info(shard).await {
            Ok(info) => infos.push(info),
            Err(Error::QueueNotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if !is_drained(draining, &infos, now) {
        return Ok(None);
    }
    for shard in draining.shards() {
        match broker.delete_queue(shard, false).await {
            Ok(()) | Err(Error::QueueNotFound { .. }) => {}
            Err(Error::QueueNotEmpty { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(Some(RetiredTotals::of(&infos)))
}
