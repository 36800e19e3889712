//! Janitor for [`RedisBroker`]: completed tasks past their retention deleted.

use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Janitor for RedisBroker {
    async fn delete_expired_completed(&self, queue: &QueueName, batch_size: usize) -> Result<usize> {
        let k = QueueKeys::new(queue);
        let mut invocation = ScriptCall::new(&SCRIPTS.delete_expired_completed);
        invocation.key(k.completed()).arg(unix_secs(self.now())).arg(k.task_prefix()).arg(batch_size);
        let n: i64 = invocation.run(&mut self.conn(), "delete expired completed").await?;
        Ok(n as usize)
    }
}
