//! ServerState for [`RedisBroker`]: server and worker records where Go asynq keeps them.

use super::*;

#[async_trait]
impl ServerState for RedisBroker {
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()> {
        let server_key = self.namespace().server_info(&server.host, server.pid, &server.server_id);
        let workers_key = self.namespace().workers(&server.host, server.pid, &server.server_id);
        let expiry = unix_secs(self.now() + ttl);
        let mut conn = self.conn();
        let fail = |e| broker_error("write server state", e);
        let _: i64 = conn.zadd(self.namespace().all_servers(), &server_key, expiry).await.map_err(fail)?;
        let _: i64 = conn.zadd(self.namespace().all_workers(), &workers_key, expiry).await.map_err(fail)?;
        let mut invocation = ScriptCall::new(&SCRIPTS.write_server_state);
        invocation.key(server_key).key(workers_key);
        invocation.arg(ttl.as_secs().max(1)).arg(proto::ServerInfo::from(server).encode_to_vec());
        for worker in workers {
            invocation.arg(&worker.task_id).arg(proto::WorkerInfo::from(worker).encode_to_vec());
        }
        let _: i64 = invocation.run(&mut conn, "write server state").await?;
        // The records of servers that stopped beating, pruned here rather than by the readers
        // (Go's listings prune them too), so that listing servers writes nothing.
        let expired = unix_secs(self.now()) - 1;
        let (mut servers, mut workers) = (conn.clone(), conn);
        futures::try_join!(
            servers.zrembyscore::<_, _, _, i64>(self.namespace().all_servers(), "-inf", expired),
            workers.zrembyscore::<_, _, _, i64>(self.namespace().all_workers(), "-inf", expired),
        )
        .map_err(fail)?;
        Ok(())
    }

    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()> {
        let server_key = self.namespace().server_info(&server.host, server.pid, &server.server_id);
        let workers_key = self.namespace().workers(&server.host, server.pid, &server.server_id);
        let mut conn = self.conn();
        let fail = |e| broker_error("clear server state", e);
        let _: i64 = conn.zrem(self.namespace().all_servers(), &server_key).await.map_err(fail)?;
        let _: i64 = conn.zrem(self.namespace().all_workers(), &workers_key).await.map_err(fail)?;
        let _: i64 = conn.del(&[&server_key, &workers_key]).await.map_err(fail)?;
        Ok(())
    }
}
