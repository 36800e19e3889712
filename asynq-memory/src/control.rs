//! ServerControl for [`MemoryBroker`]: operators' requests to quiet or stop servers, one kept per
//! server ID, expiring by the broker's clock as Redis's copy of it does.

use super::*;
use asynq_core::ServerRequest;
use asynq_core::broker::ServerControl;
use asynq_core::control::{check_server_id, server_request_expiry};

/// The kept requests: server ID to the request and its expiry, in whole Unix seconds (kept while
/// now's second is not past it, as server records are).
#[derive(Debug, Default)]
pub(crate) struct ServerRequests(HashMap<String, (ServerRequest, i64)>);

#[async_trait]
impl ServerControl for MemoryBroker {
    async fn request_server(&self, server_id: &str, request: ServerRequest) -> Result<()> {
        check_server_id(server_id)?;
        let now = self.now();
        let mut state = self.state();
        let record_expiry = state
            .servers
            .expiry_of(server_id, now)
            .ok_or_else(|| Error::ServerNotFound { id: server_id.to_owned() })?;
        let expiry = unix_secs(server_request_expiry(from_unix_secs(record_expiry)));
        let now = unix_secs(now);
        let kept = &mut state.server_requests.0;
        let request = match kept.get(server_id) {
            Some((earlier, until)) if now <= *until => earlier.merged(request),
            _ => request,
        };
        kept.insert(server_id.to_owned(), (request, expiry));
        // Requests for servers that died are never read: drop the expired ones here.
        kept.retain(|_, (_, until)| now <= *until);
        Ok(())
    }

    async fn take_server_request(&self, server_id: &str) -> Result<Option<ServerRequest>> {
        let now = unix_secs(self.now());
        let taken = self.state().server_requests.0.remove(server_id);
        Ok(taken.filter(|(_, until)| now <= *until).map(|(request, _)| request))
    }
}
