//! Health for [`MemoryBroker`]: always reachable.

use super::*;

#[async_trait]
impl Health for MemoryBroker {
    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}
