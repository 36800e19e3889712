//! The capability of sharded queues: logical queues stored as several ordinary queues.

#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::error::Result;
use crate::names::QueueName;
use crate::shard::ShardedQueue;
use async_trait::async_trait;

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
    /// is declared with another count (changing the count is not supported yet).
    async fn declare_sharded_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue>;

    /// The declaration of `logical`, if it is declared.
    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>>;

    /// Every declaration, in the order of their logical names.
    async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>>;
}
