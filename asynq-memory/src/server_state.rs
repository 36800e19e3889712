//! ServerState for [`MemoryBroker`]: server and worker records, expiring by the broker's clock.

use super::*;

#[async_trait]
impl ServerState for MemoryBroker {
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()> {
        let expires_at =
            self.now().checked_add(ttl).ok_or_else(|| Error::invalid("ttl", format!("{ttl:?} is too long")))?;
        self.state().servers.write(server, workers, expires_at);
        Ok(())
    }

    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()> {
        self.state().servers.clear(server);
        Ok(())
    }
}
