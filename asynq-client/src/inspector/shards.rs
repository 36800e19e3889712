//! Sharded queues as an operator sees them ([`asynq_core::shard`]): the declarations, and a
//! logical queue's info summed over its shards.

use super::Inspector;
use asynq_core::shard::{ShardedQueue, logical_queue_info};
use asynq_core::{Error, QueueInfo, QueueName, Result};

impl Inspector {
    /// The sharded queues declared, by logical name; none on a broker without sharded queues.
    /// Each shard is also an ordinary queue of [`Inspector::queues`].
    pub async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>> {
        match self.broker.clone().as_sharded_queues() {
            Some(shards) => shards.sharded_queues().await,
            None => Ok(Vec::new()),
        }
    }

    /// Declares `logical` as a sharded queue of `count` shards, or answers its declaration when it
    /// is declared with `count` shards already
    /// ([`ShardedQueues::declare_sharded_queue`](asynq_core::broker::ShardedQueues::declare_sharded_queue)).
    ///
    /// Errors, with nothing written: [`Error::InvalidArgument`] for an invalid name or a count out
    /// of 1..=[`MAX_SHARDS`](asynq_core::shard::MAX_SHARDS); [`Error::QueueNameConflict`] when a
    /// queue of that name, or one its shards would be taken for, exists, or when it is declared
    /// with another count (which [`Inspector::reshard_queue`] changes); [`Error::Unsupported`] on
    /// a broker without sharded queues.
    pub async fn declare_sharded_queue(&self, logical: &str, count: usize) -> Result<ShardedQueue> {
        let logical = QueueName::new(logical)?;
        let shards =
            self.broker.clone().as_sharded_queues().ok_or(Error::Unsupported { capability: "sharded queues" })?;
        shards.declare_sharded_queue(&logical, count).await
    }

    /// The info of the queue named `queue` itself: for a sharded queue's logical name, the plain
    /// queue of that name alone, not the sum [`Inspector::queue_info`] answers. What a reader of
    /// every queue of [`Inspector::queues`] wants, so that no task is counted twice.
    ///
    /// Errors: [`Error::InvalidArgument`] for an invalid name, [`Error::QueueNotFound`].
    pub async fn own_queue_info(&self, queue: &str) -> Result<QueueInfo> {
        self.broker.queue_info(&QueueName::new(queue)?).await
    }

    /// Changes the count of the sharded queue `logical` to `count` shards
    /// ([`ShardedQueues::reshard_queue`](asynq_core::broker::ShardedQueues::reshard_queue)): a
    /// new generation of shards where producers place tasks from now on, the previous one
    /// draining, still served, until the servers drop it
    /// ([`DRAIN_GRACE`](asynq_core::shard::DRAIN_GRACE) after the reshard at the earliest, once
    /// its shards are empty). Answers the declaration as it is when it has `count` shards.
    ///
    /// Errors, with nothing written: [`Error::InvalidArgument`] for an invalid name or a count out
    /// of 1..=[`MAX_SHARDS`](asynq_core::shard::MAX_SHARDS); [`Error::FailedPrecondition`] when
    /// `logical` is no sharded queue or a previous generation still drains;
    /// [`Error::QueueNameConflict`] when a queue the new shards would be taken for exists;
    /// [`Error::Unsupported`] on a broker without sharded queues.
    pub async fn reshard_queue(&self, logical: &str, count: usize) -> Result<ShardedQueue> {
        let logical = QueueName::new(logical)?;
        let shards =
            self.broker.clone().as_sharded_queues().ok_or(Error::Unsupported { capability: "sharded queues" })?;
        shards.reshard_queue(&logical, count).await
    }

    /// The info of `queue` if it is a sharded queue's logical name: the infos of its shards (of
    /// both generations while one drains after a reshard), of the plain queue of its name (where
    /// producers that do not place tasks on shards put them, and which its servers also serve)
    /// and of its strays (registered queues named as its shards but not declared, which its
    /// servers serve too, listed among the draining shards; their tasks counted, not their
    /// statistics) summed ([`logical_queue_info`]), one removed or never made counting as empty.
    /// `None` when it is not declared.
    pub(super) async fn logical_queue_info(&self, queue: &QueueName) -> Result<Option<QueueInfo>> {
        let Some(shards) = self.broker.clone().as_sharded_queues() else { return Ok(None) };
        let Some(sharded) = shards.sharded_queue(queue).await? else { return Ok(None) };
        let strays: Vec<QueueName> =
            self.broker.queues().await?.into_iter().filter(|registered| sharded.is_stray(registered)).collect();
        let members: Vec<QueueName> = std::iter::once(queue).chain(sharded.all_shards()).cloned().collect();
        let infos = self.infos_of(&members).await?;
        let strays = self.infos_of(&strays).await?;
        Ok(Some(logical_queue_info(&sharded, &infos, &strays)))
    }

    /// The infos of `queues`, leaving out those removed or never made.
    async fn infos_of(&self, queues: &[QueueName]) -> Result<Vec<QueueInfo>> {
        let mut infos = Vec::with_capacity(queues.len());
        for queue in queues {
            match self.broker.queue_info(queue).await {
                Ok(info) => infos.push(info),
                Err(Error::QueueNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(infos)
    }

    /// Refuses the removal of `queue` when it is a shard of a declared sharded queue (of its
    /// newest generation or of one still draining): its servers would go on serving it and its
    /// producers placing tasks on it. Shards go by resharding, which drops them once drained.
    ///
    /// Errors: [`Error::FailedPrecondition`] naming the logical queue.
    pub(super) async fn refuse_removing_a_shard(&self, queue: &QueueName) -> Result<()> {
        let Some(logical) = asynq_core::shard::logical_of(queue) else { return Ok(()) };
        let Some(shards) = self.broker.clone().as_sharded_queues() else { return Ok(()) };
        let Ok(logical) = QueueName::new(logical) else { return Ok(()) };
        match shards.sharded_queue(&logical).await? {
            Some(declared) if declared.all_shards().any(|shard| shard == queue) => {
                Err(Error::FailedPrecondition(format!(
                    "queue {queue:?} is a shard of the sharded queue {logical:?}; reshard {logical:?} instead of removing a shard"
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Client, Inspector, Task, TaskOptions};
    use asynq_core::broker::{Capabilities, Enqueue};
    use asynq_core::{Error, QueueName, resolve_enqueue};
    use asynq_memory::MemoryBroker;
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};

    #[tokio::test]
    async fn a_logical_queue_is_inspected_as_the_sum_of_its_shards() {
        let broker = Arc::new(MemoryBroker::new());
        let shards = broker.clone().as_sharded_queues().unwrap();
        let orders = shards.declare_sharded_queue(&QueueName::from_static("orders"), 2).await.unwrap();
        let client = Client::from_shared(broker.clone());
        for n in 0..3 {
            client.enqueue(&Task::new("t", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
        }
        // A producer that does not place tasks on shards (Go's) puts them in the plain queue.
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let go = resolve_enqueue(&Task::new("t", "go"), &TaskOptions::new().queue("orders"), now, || "go".to_owned());
        broker.enqueue(go.unwrap()).await.unwrap();
        let inspector = Inspector::from_shared(broker);
        let info = inspector.queue_info("orders").await.unwrap();
        assert_eq!((info.queue.as_str(), info.size, info.pending), ("orders", 4, 4));
        assert_eq!(info.shards, orders.shards());
        assert_eq!(inspector.queue_info("orders~0").await.unwrap().shards, Vec::<QueueName>::new());
        let own = inspector.own_queue_info("orders").await.unwrap();
        assert_eq!((own.pending, own.shards.len()), (1, 0), "the plain queue of the logical name alone");
        assert_eq!(inspector.sharded_queues().await.unwrap(), vec![orders.clone()]);
        assert_eq!(inspector.declare_sharded_queue("orders", 2).await.unwrap(), orders, "declared already");
        let conflict = inspector.declare_sharded_queue("orders", 3).await;
        assert!(matches!(conflict, Err(Error::QueueNameConflict { .. })), "{conflict:?}");
        let bad = inspector.declare_sharded_queue("a~b", 2).await;
        assert!(matches!(bad, Err(Error::InvalidArgument { .. })), "{bad:?}");
        let missing = inspector.queue_info("nothing").await;
        assert!(matches!(missing, Err(Error::QueueNotFound { .. })), "{missing:?}");

        let resharded = inspector.reshard_queue("orders", 3).await.unwrap();
        assert_eq!((resharded.generation(), resharded.shards()[2].as_str()), (2, "orders~g2~2"));
        client.enqueue(&Task::new("t", "new"), TaskOptions::new().queue("orders")).await.unwrap();
        let info = inspector.queue_info("orders").await.unwrap();
        assert_eq!((info.size, info.pending), (5, 5), "both generations summed");
        assert_eq!((info.shards, info.draining_shards), (resharded.shards().to_vec(), orders.shards().to_vec()));
        // A queue named as its shards are but not declared (a stray) is summed and listed too.
        client.enqueue(&Task::new("t", "stray"), TaskOptions::new().queue("orders~g7~0")).await.unwrap();
        let info = inspector.queue_info("orders").await.unwrap();
        assert_eq!((info.size, info.pending), (6, 6), "the stray summed");
        assert_eq!(info.draining_shards.last().map(QueueName::as_str), Some("orders~g7~0"));
        for (name, count) in [("orders", 0), ("nothing", 2), ("orders", 4)] {
            let refused = inspector.reshard_queue(name, count).await;
            assert!(
                matches!(refused, Err(Error::InvalidArgument { .. } | Error::FailedPrecondition(_))),
                "{refused:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_shard_of_a_declared_queue_is_not_removed() {
        let broker = Arc::new(MemoryBroker::new());
        let inspector = Inspector::from_shared(broker.clone());
        let old = inspector.declare_sharded_queue("orders", 2).await.unwrap();
        let client = Client::from_shared(broker.clone());
        for n in 0..4 {
            client.enqueue(&Task::new("t", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
        }
        let new = inspector.reshard_queue("orders", 3).await.unwrap();
        for shard in [&old.shards()[0], &new.shards()[1]] {
            for force in [false, true] {
                let refused = inspector.delete_queue(shard, force).await;
                assert!(
                    matches!(&refused, Err(Error::FailedPrecondition(why)) if why.contains("reshard")),
                    "{refused:?}"
                );
                let refused = inspector.delete_queue_with_progress(shard, force, |_| {}).await;
                assert!(matches!(refused, Err(Error::FailedPrecondition(_))), "{refused:?}");
            }
        }
        assert_eq!(inspector.queue_info("orders").await.unwrap().size, 4, "nothing removed");
        // A queue whose name only looks like a shard's is removed as any other.
        client.enqueue(&Task::new("t", "x"), TaskOptions::new().queue("other~1")).await.unwrap();
        inspector.delete_queue("other~1", true).await.unwrap();
    }
}
