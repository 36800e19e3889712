//! Recover for [`RedisBroker`]: the active tasks whose lease expired.

use super::dequeue::{Stored, read_stored};
use super::*;

#[async_trait]
impl Recover for RedisBroker {
    async fn list_lease_expired(&self, queues: &[String], cutoff: SystemTime) -> Result<Vec<TaskMessage>> {
        let mut conn = self.conn();
        let mut expired = Vec::new();
        for queue in queues {
            let k = QueueKeys::new(queue);
            let mut invocation = ScriptCall::new(&SCRIPTS.list_lease_expired);
            invocation.key(k.lease()).arg(unix_secs(cutoff)).arg(k.task_prefix());
            let pairs: Vec<Value> = invocation.run(&mut conn, "list lease expired").await?;
            for stored in read_stored(queue, pairs) {
                match stored {
                    Stored::Task(msg) => expired.push(msg),
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
}
