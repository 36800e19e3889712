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

    /// Drops what of `logical` is drained. First the strays named as shards of generations
    /// dropped already ([`ShardedQueue::is_dropped_shard`]) that hold no task: their queues
    /// removed ([`remove_dropped_strays`]). Then the draining generation, when it is drained
    /// ([`is_drained`](crate::shard::is_drained) at the broker's clock's now): records what its
    /// shards processed and failed in the declaration ([`drained_totals`]), removes its shards'
    /// queues (each only if empty), then drops the generation from the declaration, its totals
    /// added to [`ShardedQueue::retired`] (each write only if the declaration did not change
    /// meanwhile). Returns whether it removed or dropped anything; `false` when `logical` is not
    /// declared, or nothing of it is drained.
    async fn drop_drained_shards(&self, logical: &QueueName) -> Result<bool>;

    /// The declaration of `logical`, if it is declared.
    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>>;

    /// Every declaration, in the order of their logical names.
    async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>>;
}

/// What the previous generation of a sharded queue, `draining`, had processed and failed, if it
/// may be dropped at `now` ([`is_drained`](crate::shard::is_drained)): the first half of a
/// broker's [`ShardedQueues::drop_drained_shards`], which records the totals in the declaration
/// ([`ShardedQueue::with_drained_totals`]) before [`remove_shard_queues`] removes anything, so
/// that a drop cut short (its process stopped, or another server's drop ahead of it) and taken
/// up again still counts every shard. The totals are read from the shards while they all exist;
/// once one is gone, a drop began: those it recorded stand.
pub async fn drained_totals<B>(broker: &B, draining: &DrainingShards, now: SystemTime) -> Result<Option<RetiredTotals>>
where
    B: Inspect + ?Sized,
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
    let read = RetiredTotals::of(&infos);
    Ok(Some(match draining.totals() {
        Some(recorded) if infos.len() < draining.shards().len() => recorded,
        _ => read,
    }))
}

/// Removes the queues of `draining`, the previous generation of a sharded queue found drained by
/// [`drained_totals`]: the second half of [`ShardedQueues::drop_drained_shards`], before it drops
/// the generation from the declaration. Each removal is [`Manage::delete_queue`] without force,
/// so it checks again that its queue holds no task. Returns whether every shard is gone; `false`,
/// with what was removed left removed, when one holds a task again.
pub async fn remove_shard_queues<B>(broker: &B, draining: &DrainingShards) -> Result<bool>
where
    B: Manage + ?Sized,
{
    for shard in draining.shards() {
        match broker.delete_queue(shard, false).await {
            Ok(()) | Err(Error::QueueNotFound { .. }) => {}
            Err(Error::QueueNotEmpty { .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Removes the strays of `sharded` named as shards of generations dropped already
/// ([`ShardedQueue::is_dropped_shard`]) among `registered`, the registered queues read before
/// the declaration `sharded` (so that no shard of a generation made meanwhile is taken for a
/// stray), each only once it holds no task ([`Manage::delete_queue`] without force, which checks
/// again). Returns whether it removed any. What a stray processed is not added to the logical
/// queue's totals: the counters it shows are its name's, which a removal keeps (as Go's does),
/// so they hold its dropped generation's counts again.
pub async fn remove_dropped_strays<B>(broker: &B, sharded: &ShardedQueue, registered: &[QueueName]) -> Result<bool>
where
    B: Inspect + Manage + ?Sized,
{
    let mut removed = false;
    for stray in registered.iter().filter(|queue| sharded.is_dropped_shard(queue)) {
        let info = match broker.queue_info(stray).await {
            Ok(info) => info,
            Err(Error::QueueNotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        if info.sum_of_states() != 0 || info.size != 0 {
            continue;
        }
        match broker.delete_queue(stray, false).await {
            Ok(()) => removed = true,
            Err(Error::QueueNotFound { .. } | Error::QueueNotEmpty { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}
