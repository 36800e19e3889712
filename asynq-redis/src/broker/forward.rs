//! Forward for [`RedisBroker`]: due scheduled and retry tasks moved to pending (or their group).

use super::quiet::existing_keys;
use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Forward for RedisBroker {
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<usize> {
        let now = self.now();
        let mut conn = self.conn();
        let mut moved = 0;
        // Only the sets that hold tasks are looked at: one command finds them when none does.
        let sources: Vec<(&QueueName, String)> = queues
            .iter()
            .flat_map(|q| [(q, self.queue_keys(q).scheduled()), (q, self.queue_keys(q).retry())])
            .collect();
        let keys: Vec<String> = sources.iter().map(|(_, key)| key.clone()).collect();
        let held = existing_keys(self.conn(), &keys).await.map_err(|e| broker_error("forward", e))?;
        for (queue, source) in held.into_iter().map(|i| &sources[i]) {
            let k = self.queue_keys(queue);
            loop {
                let mut invocation = ScriptCall::new(&SCRIPTS.forward);
                invocation
                    .key(source)
                    .key(k.pending())
                    .key(k.idle_workers())
                    .key(k.prioritized())
                    .key(k.priority_sequence())
                    .key(k.groups());
                invocation.arg(unix_secs(now)).arg(k.task_prefix()).arg(unix_nanos(now)).arg(k.group_prefix());
                invocation.arg(k.ready_channel());
                let n: i64 = invocation.run(&mut conn, "forward").await?;
                moved += n as usize;
                if n > 0 {
                    self.pubsub().made_pending(queue);
                }
                if n < FORWARD_BATCH {
                    break;
                }
            }
        }
        Ok(moved)
    }
}
