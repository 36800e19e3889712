//! ServerControl for [`RedisBroker`]: operators' requests to quiet or stop servers, each kept in
//! the server's own key `<ns>:server_requests:{<server id>}` (one key per call, so a Cluster
//! takes it anywhere) as `<request> <expiry>`, the expiry in Unix seconds of the broker's clock;
//! the key's TTL removes a request nobody reads. Go asynq's servers never read it.

use crate::RedisBroker;
use crate::error::broker_error;
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::ServerControl;
use asynq_core::control::{check_server_id, server_request_expiry};
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{Error, Result, ServerRequest};
use redis::{AsyncCommands, Script};
use std::sync::LazyLock;

/// The scripts of this module.
struct ControlScripts {
    request_server: Script,
    take_server_request: Script,
}

static SCRIPTS: LazyLock<ControlScripts> = LazyLock::new(|| ControlScripts {
    request_server: Script::new(include_str!("scripts/request_server.lua")),
    take_server_request: Script::new(include_str!("scripts/take_server_request.lua")),
});

#[async_trait]
impl ServerControl for RedisBroker {
    async fn request_server(&self, server_id: &str, request: ServerRequest) -> Result<()> {
        check_server_id(server_id)?;
        let now = unix_secs(self.now());
        let live: Vec<(String, i64)> = self
            .conn()
            .zrangebyscore_withscores(self.namespace().all_servers(), now, "+inf")
            .await
            .map_err(|e| broker_error("list servers", e))?;
        let record_expiry = live
            .iter()
            .filter(|(key, _)| self.namespace().server_id_of(key) == Some(server_id))
            .map(|(_, expiry)| *expiry)
            .max()
            .ok_or_else(|| Error::ServerNotFound { id: server_id.to_owned() })?;
        let expiry = unix_secs(server_request_expiry(from_unix_secs(record_expiry)));
        let mut call = ScriptCall::new(&SCRIPTS.request_server);
        call.key(self.namespace().server_request(server_id))
            .arg(request.as_str())
            .arg(expiry)
            .arg(now)
            .arg((expiry - now).max(1));
        let _kept: String = call.run(&mut self.conn(), "request a server to quiet or stop").await?;
        Ok(())
    }

    /// One `GET` on each heartbeat while no request is kept; the script only when one is.
    async fn take_server_request(&self, server_id: &str) -> Result<Option<ServerRequest>> {
        let key = self.namespace().server_request(server_id);
        let fail = |e| broker_error("read a server's request", e);
        let kept: Option<String> = self.conn().get(&key).await.map_err(fail)?;
        if kept.is_none() {
            return Ok(None);
        }
        let mut call = ScriptCall::new(&SCRIPTS.take_server_request);
        call.key(key);
        let kept: Option<String> = call.run(&mut self.conn(), "read a server's request").await?;
        let Some(kept) = kept else { return Ok(None) };
        let parsed = kept
            .split_once(' ')
            .and_then(|(name, expiry)| Some((ServerRequest::parse(name)?, expiry.parse::<i64>().ok()?)));
        match parsed {
            Some((request, expiry)) if unix_secs(self.now()) <= expiry => Ok(Some(request)),
            Some(_) => Ok(None),
            None => {
                tracing::warn!(server_id, value = %kept, "dropped a server request that is not ours");
                Ok(None)
            }
        }
    }
}
