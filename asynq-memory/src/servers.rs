//! The heartbeat records of worker servers, each alive until its TTL runs out.

use asynq_core::time::unix_secs;
use asynq_core::{ServerInfo, WorkerInfo};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// Servers keyed, and therefore listed, by host, process ID and server ID (the parts of Go's
/// `asynq:servers:{host:pid:sid}` key).
#[derive(Debug, Default)]
pub(crate) struct Servers(BTreeMap<(String, u32, String), Entry>);

#[derive(Debug)]
struct Entry {
    info: ServerInfo,
    workers: Vec<WorkerInfo>,
    /// Whole Unix seconds, as Go scores `asynq:servers`: alive while now's second is not past it.
    expires_at: i64,
}

fn key(server: &ServerInfo) -> (String, u32, String) {
    (server.host.clone(), server.pid, server.server_id.clone())
}

impl Servers {
    /// Replaces the record of `server` and its workers.
    pub(crate) fn write(&mut self, server: &ServerInfo, workers: &[WorkerInfo], expires_at: SystemTime) {
        let entry = Entry { info: server.clone(), workers: workers.to_vec(), expires_at: unix_secs(expires_at) };
        self.0.insert(key(server), entry);
    }

    /// Removes the record of `server`.
    pub(crate) fn clear(&mut self, server: &ServerInfo) {
        self.0.remove(&key(server));
    }

    /// When the live record of the server with ID `server_id` expires, in whole Unix seconds;
    /// `None` when no live server has that ID.
    pub(crate) fn expiry_of(&self, server_id: &str, now: SystemTime) -> Option<i64> {
        let now = unix_secs(now);
        self.0
            .iter()
            .filter(|((_, _, id), entry)| id == server_id && now <= entry.expires_at)
            .map(|(_, entry)| entry.expires_at)
            .max()
    }

    /// Drops the expired records and returns the others.
    pub(crate) fn alive(&mut self, now: SystemTime) -> Vec<(ServerInfo, Vec<WorkerInfo>)> {
        let now = unix_secs(now);
        self.0.retain(|_, entry| now <= entry.expires_at);
        self.0.values().map(|entry| (entry.info.clone(), entry.workers.clone())).collect()
    }
}
