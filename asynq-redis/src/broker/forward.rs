//! Forward for [`RedisBroker`]: due scheduled and retry tasks moved to pending (or their group).

use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Forward for RedisBroker {
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<usize> {
        let now = self.now();
        let mut conn = self.conn();
        let mut moved = 0;
        for queue in queues {
            let k = QueueKeys::new(queue);
            for source in [k.scheduled(), k.retry()] {
                loop {
                    let mut invocation = ScriptCall::new(&SCRIPTS.forward);
                    invocation.key(&source).key(k.pending()).key(k.idle_workers());
                    invocation.arg(unix_secs(now)).arg(k.task_prefix()).arg(unix_nanos(now)).arg(k.group_prefix());
                    invocation.arg(k.ready_channel());
                    let n: i64 = invocation.run(&mut conn, "forward").await?;
                    moved += n as usize;
                    if n < FORWARD_BATCH {
                        break;
                    }
                }
            }
        }
        Ok(moved)
    }
}
