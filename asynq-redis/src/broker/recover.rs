//! Recover for [`RedisBroker`]: the active tasks whose lease expired.

use super::dequeue::{Stored, read_stored, taken_lease_score};
use super::quiet::existing_keys;
use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Recover for RedisBroker {
    async fn list_lease_expired(&self, queues: &[QueueName], cutoff: SystemTime) -> Result<Vec<ExpiredLease>> {
        let mut conn = self.conn();
        let mut expired = Vec::new();
        // Only the queues that hold leases are looked at: one command finds them when none does.
        let leases: Vec<String> = queues.iter().map(|q| self.queue_keys(q).lease()).collect();
        let held = existing_keys(self.conn(), &leases).await.map_err(|e| broker_error("list lease expired", e))?;
        for queue in held.into_iter().map(|i| &queues[i]) {
            let k = self.queue_keys(queue);
            let mut invocation = ScriptCall::new(&SCRIPTS.list_lease_expired);
            // A lease no handler started is scored half a second past its expiry second.
            invocation.key(k.lease()).arg(taken_lease_score(unix_secs(cutoff))).arg(k.task_prefix());
            let (pairs, unstarted, stalls): (Vec<Value>, HashSet<String>, Vec<u32>) =
                invocation.run(&mut conn, "list lease expired").await?;
            for (stored, stalls) in read_stored(queue, pairs).into_iter().zip(stalls) {
                match stored {
                    Stored::Task(message) => {
                        let stage = if unstarted.contains(message.id.as_str()) {
                            LeaseStage::Taken
                        } else {
                            LeaseStage::Started
                        };
                        expired.push(ExpiredLease { message, stage, stalls });
                    }
                    // Settled here, so the recoverer never meets it again; a failure is logged
                    // and retried on the next pass.
                    Stored::Missing { id } => {
                        let problem = "its task hash is missing or has no msg";
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                error = %e,
                                "cannot drop an active task ID without a task message"
                            );
                        }
                    }
                    Stored::Corrupt { id, problem } => {
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, &problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                problem = %problem,
                                error = %e,
                                "cannot archive a corrupt task"
                            );
                        }
                    }
                }
            }
        }
        Ok(expired)
    }

    /// `settle` with the cutoff's lease score (the one [`Recover::list_lease_expired`] lists
    /// by) as the fence.
    async fn recover(&self, items: Vec<(StoredTask, Outcome)>, cutoff: SystemTime) -> Vec<Result<()>> {
        self.settle(items, Some(&taken_lease_score(unix_secs(cutoff)))).await
    }
}
