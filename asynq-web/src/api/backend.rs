//! The backend: what Redis says about itself (version, memory, clients), its nodes, whether its
//! eviction policy can drop tasks, and on a Cluster where each queue lives. Values that look like
//! URLs lose their credentials.

use crate::AppState;
use crate::error::ApiResult;
use asynq_core::{EvictionRisk, NodeInfo, QueueLocation};
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub(crate) struct NodeView {
    id: String,
    addr: String,
}

impl From<NodeInfo> for NodeView {
    fn from(node: NodeInfo) -> Self {
        Self { id: node.id, addr: redact(&node.addr) }
    }
}

/// An eviction policy under which the backend can drop tasks without an error, as the backend
/// judged it ([`asynq_core::BackendInfo::eviction_risks`]).
#[derive(Debug, Serialize)]
pub(crate) struct EvictionRiskView {
    policy: String,
    warning: String,
}

impl From<EvictionRisk> for EvictionRiskView {
    fn from(risk: EvictionRisk) -> Self {
        Self { policy: risk.policy, warning: risk.warning }
    }
}

/// Where a queue's keys live on a Redis Cluster.
#[derive(Debug, Serialize)]
pub(crate) struct LocationView {
    slot: u16,
    nodes: Vec<NodeView>,
}

impl From<QueueLocation> for LocationView {
    fn from(location: QueueLocation) -> Self {
        Self { slot: location.slot, nodes: location.nodes.into_iter().map(Into::into).collect() }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct QueueLocationView {
    queue: String,
    #[serde(flatten)]
    location: LocationView,
}

#[derive(Debug, Serialize)]
pub(crate) struct BackendView {
    /// `memory`, `redis`, `redis-cluster` or `redis-sentinel`.
    kind: String,
    /// The key namespace the dashboard shows (`asynq`, Go's, by default); `null` for a backend of
    /// one (memory).
    namespace: Option<String>,
    version: Option<String>,
    used_memory_human: Option<String>,
    used_memory_peak_human: Option<String>,
    connected_clients: Option<String>,
    uptime_in_seconds: Option<String>,
    /// Every fact the backend reported.
    fields: BTreeMap<String, String>,
    nodes: Vec<NodeView>,
    /// The eviction policies in force that can drop tasks; empty when the backend keeps them.
    eviction_risks: Vec<EvictionRiskView>,
    /// On a Cluster, where each queue lives.
    queue_locations: Vec<QueueLocationView>,
}

/// `GET /api/redis`.
pub(crate) async fn info(State(app): State<AppState>) -> ApiResult<Json<BackendView>> {
    let info = app.inspector.backend_info().await?;
    let fields: BTreeMap<String, String> = info
        .fields
        .into_iter()
        .filter(|(key, _)| !key.contains("pass") && !key.contains("auth"))
        .map(|(key, value)| {
            let value = redact(&value);
            (key, value)
        })
        .collect();
    let mut queue_locations = Vec::new();
    if info.kind == "redis-cluster" {
        for queue in app.inspector.queues().await? {
            if let Some(location) = app.inspector.queue_location(&queue).await? {
                queue_locations.push(QueueLocationView { queue: queue.into_string(), location: location.into() });
            }
        }
    }
    let field = |name: &str| fields.get(name).cloned();
    Ok(Json(BackendView {
        version: field("redis_version"),
        used_memory_human: field("used_memory_human"),
        used_memory_peak_human: field("used_memory_peak_human"),
        connected_clients: field("connected_clients"),
        uptime_in_seconds: field("uptime_in_seconds"),
        kind: info.kind,
        namespace: info.namespace,
        nodes: info.nodes.into_iter().map(Into::into).collect(),
        eviction_risks: info.eviction_risks.into_iter().map(Into::into).collect(),
        queue_locations,
        fields,
    }))
}

/// `value` with the user and password of any URL in it replaced by `***`.
fn redact(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(scheme_end) = rest.find("://") {
        let (head, tail) = rest.split_at(scheme_end + 3);
        out.push_str(head);
        let authority_end = tail.find(['/', ' ', ',', ';']).unwrap_or(tail.len());
        match tail[..authority_end].rfind('@') {
            Some(at) => {
                out.push_str("***");
                rest = &tail[at..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn credentials_in_urls_are_redacted() {
        assert_eq!(redact("redis://:hunter2@db:6379/0"), "redis://***@db:6379/0");
        assert_eq!(redact("a redis://u:p@h:1 b rediss://x@y"), "a redis://***@h:1 b rediss://***@y");
        assert_eq!(redact("redis://db:6379"), "redis://db:6379");
        assert_eq!(redact("7.2.4"), "7.2.4");
    }
}
