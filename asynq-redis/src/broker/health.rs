//! Health for [`RedisBroker`]: a PING.

use super::*;

#[async_trait]
impl Health for RedisBroker {
    async fn ping(&self) -> Result<()> {
        let _: String = redis::cmd("PING").query_async(&mut self.conn()).await.map_err(|e| broker_error("ping", e))?;
        Ok(())
    }
}
