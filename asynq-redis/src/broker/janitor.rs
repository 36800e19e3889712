//! Janitor for [`RedisBroker`]: completed tasks past their retention deleted.

use super::quiet::existing_keys;
use super::*;
use asynq_core::QueueName;
use asynq_core::broker::delete_expired_completed_each;

#[async_trait]
impl Janitor for RedisBroker {
    async fn delete_expired_completed(&self, queue: &QueueName, batch_size: usize) -> Result<usize> {
        let k = self.queue_keys(queue);
        let mut invocation = ScriptCall::new(&SCRIPTS.delete_expired_completed);
        invocation.key(k.completed()).arg(unix_secs(self.now())).arg(k.task_prefix()).arg(batch_size);
        let n: i64 = invocation.run(&mut self.conn(), "delete expired completed").await?;
        Ok(n as usize)
    }

    /// Looks only at the queues whose `completed` set exists: one command finds them when none
    /// does.
    async fn delete_all_expired_completed(&self, queues: &[QueueName], batch_size: usize) -> Result<usize> {
        let sets: Vec<String> = queues.iter().map(|q| self.queue_keys(q).completed()).collect();
        let held = existing_keys(self.conn(), &sets).await.map_err(|e| broker_error("delete expired completed", e))?;
        let held: Vec<QueueName> = held.into_iter().map(|i| queues[i].clone()).collect();
        delete_expired_completed_each(self, &held, batch_size).await
    }
}
