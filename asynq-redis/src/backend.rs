//! What Redis says about itself, for operators: `INFO` (or `CLUSTER INFO` on a Cluster) with
//! the nodes serving the data, and where a queue's slot lives on a Cluster (Go asynq's
//! `RedisInfo`, `RedisClusterInfo`, `ClusterKeySlot` and `ClusterNodes`), and whether the
//! eviction policy of any master lets Redis drop tasks.

use crate::connection::Connection;
use crate::error::{broker_error, unexpected};
use crate::keys::QueueKeys;
use crate::safety::eviction_risks;
use asynq_core::{BackendInfo, NodeInfo, QueueLocation, Result};
use redis::{FromRedisValue, Value};
use std::collections::BTreeMap;

/// The kind of a single Redis server.
pub(crate) const SERVER: &str = "redis";
/// The kind of a Redis Cluster.
pub(crate) const CLUSTER: &str = "redis-cluster";
/// The kind of a master found through Sentinel.
pub(crate) const SENTINEL: &str = "redis-sentinel";

/// The `INFO` fields a Cluster's report takes from one of its nodes, beside `CLUSTER INFO`.
const CLUSTER_NODE_FIELDS: &[&str] = &["redis_version", "redis_mode", "used_memory_human", "connected_clients"];

/// The `INFO` field (section `memory`) naming the eviction policy.
const POLICY_FIELD: &str = "maxmemory_policy";

/// Reads what the server (or Cluster) of kind `kind` says about itself, with the eviction risks
/// of the policies its `INFO` reports (every master's, on a Cluster).
pub(crate) async fn backend_info(conn: &mut Connection, kind: &'static str) -> Result<BackendInfo> {
    if kind == CLUSTER {
        let text: String =
            redis::cmd("CLUSTER").arg("INFO").query_async(conn).await.map_err(|e| broker_error("cluster info", e))?;
        let mut fields = parse_info(&text);
        // A Cluster answers INFO once per master; any one tells the version and memory.
        let info: Value = redis::cmd("INFO").query_async(conn).await.map_err(|e| broker_error("info", e))?;
        let masters: Vec<BTreeMap<String, String>> = info_texts(&info).iter().map(|t| parse_info(t)).collect();
        let risks = eviction_risks(masters.iter().filter_map(|m| m.get(POLICY_FIELD).cloned()));
        let node_info = masters.into_iter().next().unwrap_or_default();
        for name in CLUSTER_NODE_FIELDS {
            if let Some(value) = node_info.get(*name) {
                fields.insert((*name).to_owned(), value.clone());
            }
        }
        let mut nodes: Vec<NodeInfo> = Vec::new();
        for range in slot_ranges(conn).await? {
            if let Some(master) = range.nodes.into_iter().next()
                && !nodes.iter().any(|n| n.id == master.id && n.addr == master.addr)
            {
                nodes.push(master);
            }
        }
        nodes.sort_by(|a, b| a.addr.cmp(&b.addr));
        return Ok(BackendInfo::new(kind, fields, nodes).with_eviction_risks(risks));
    }
    let text: String = redis::cmd("INFO").query_async(conn).await.map_err(|e| broker_error("info", e))?;
    // The server's own address as this connection reached it (behind Sentinel: the master).
    let client: Option<String> = redis::cmd("CLIENT").arg("INFO").query_async(conn).await.ok();
    let nodes = client
        .as_deref()
        .and_then(|c| c.split_whitespace().find_map(|kv| kv.strip_prefix("laddr=")))
        .map(|addr| vec![NodeInfo { id: String::new(), addr: addr.to_owned() }])
        .unwrap_or_default();
    let fields = parse_info(&text);
    let risks = eviction_risks(fields.get(POLICY_FIELD).cloned());
    Ok(BackendInfo::new(kind, fields, nodes).with_eviction_risks(risks))
}

/// The hash slot of the queue `k` and the nodes serving it, the master first.
pub(crate) async fn queue_location(conn: &mut Connection, k: &QueueKeys) -> Result<QueueLocation> {
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(k.pending())
        .query_async(conn)
        .await
        .map_err(|e| broker_error("cluster keyslot", e))?;
    let slot = u16::try_from(slot).map_err(|_| unexpected("cluster keyslot", format!("slot {slot}")))?;
    let nodes = slot_ranges(conn)
        .await?
        .into_iter()
        .find(|range| range.start <= slot && slot <= range.end)
        .map(|range| range.nodes)
        .unwrap_or_default();
    Ok(QueueLocation { slot, nodes })
}

/// The text of an `INFO` reply: one text from a server, one per master from a Cluster.
fn info_texts(reply: &Value) -> Vec<String> {
    match reply {
        Value::Map(nodes) => nodes.iter().filter_map(|(_, v)| String::from_redis_value_ref(v).ok()).collect(),
        other => String::from_redis_value_ref(other).into_iter().collect(),
    }
}

/// `INFO` or `CLUSTER INFO` text as fields, as Go asynq parses it: lines split on `\r\n`, each
/// on its first `:`; section headers (`# Server`) and blank lines skipped.
fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.split("\r\n")
        .flat_map(|line| line.split('\n'))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// One range of `CLUSTER SLOTS`.
#[derive(Debug, PartialEq)]
pub(crate) struct SlotRange {
    pub(crate) start: u16,
    pub(crate) end: u16,
    /// The master first, then its replicas.
    pub(crate) nodes: Vec<NodeInfo>,
}

pub(crate) async fn slot_ranges(conn: &mut Connection) -> Result<Vec<SlotRange>> {
    let reply: Value =
        redis::cmd("CLUSTER").arg("SLOTS").query_async(conn).await.map_err(|e| broker_error("cluster slots", e))?;
    parse_slots(&reply).ok_or_else(|| unexpected("cluster slots", "a reply of an unknown shape"))
}

/// Parses a `CLUSTER SLOTS` reply: per range `[start, end, [host, port, id, …], replicas…]`.
fn parse_slots(reply: &Value) -> Option<Vec<SlotRange>> {
    let Value::Array(ranges) = reply else { return None };
    ranges
        .iter()
        .map(|range| {
            let Value::Array(parts) = range else { return None };
            let slot = |v: &Value| i64::from_redis_value_ref(v).ok().and_then(|n| u16::try_from(n).ok());
            let (start, end) = (slot(parts.first()?)?, slot(parts.get(1)?)?);
            let nodes = parts[2..]
                .iter()
                .map(|node| {
                    let Value::Array(fields) = node else { return None };
                    let host = String::from_redis_value_ref(fields.first()?).ok()?;
                    let port = i64::from_redis_value_ref(fields.get(1)?).ok()?;
                    let id = fields.get(2).and_then(|v| String::from_redis_value_ref(v).ok()).unwrap_or_default();
                    Some(NodeInfo { id, addr: format!("{host}:{port}") })
                })
                .collect::<Option<Vec<_>>>()?;
            Some(SlotRange { start, end, nodes })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_text_becomes_fields() {
        let text = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n\r\n# Memory\r\nused_memory_human:1.02M\r\n\
                    db0:keys=3,expires=0\r\n";
        let fields = parse_info(text);
        assert_eq!(fields.get("redis_version").map(String::as_str), Some("7.0.15"));
        assert_eq!(fields.get("used_memory_human").map(String::as_str), Some("1.02M"));
        assert_eq!(fields.get("db0").map(String::as_str), Some("keys=3,expires=0"));
        assert_eq!(fields.len(), 4);
    }

    #[test]
    fn cluster_slots_become_ranges_with_the_master_first() {
        let node = |host: &str, port: i64, id: &str| {
            Value::Array(vec![
                Value::BulkString(host.as_bytes().to_vec()),
                Value::Int(port),
                Value::BulkString(id.as_bytes().to_vec()),
                Value::Array(vec![]),
            ])
        };
        let reply = Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(5460),
            node("127.0.0.1", 7000, "m1"),
            node("127.0.0.1", 7003, "r1"),
        ])]);
        let ranges = parse_slots(&reply).expect("a valid reply");
        assert_eq!(
            ranges,
            vec![SlotRange {
                start: 0,
                end: 5460,
                nodes: vec![
                    NodeInfo { id: "m1".into(), addr: "127.0.0.1:7000".into() },
                    NodeInfo { id: "r1".into(), addr: "127.0.0.1:7003".into() },
                ],
            }]
        );
        assert!(parse_slots(&Value::Int(1)).is_none());
    }
}
