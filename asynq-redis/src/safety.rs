//! Start-up checks for Redis settings under which tasks can vanish without an error.

use crate::connection::Connection;
use redis::{FromRedisValue, Value};

/// Reads the server's settings and describes each one that can lose task data silently; empty
/// when none does. A server that refuses `CONFIG` (some managed services) cannot be checked and
/// yields no warning.
pub(crate) async fn data_loss_warnings(conn: &mut Connection) -> Vec<String> {
    let mut query = redis::cmd("CONFIG");
    query.arg("GET").arg("maxmemory-policy");
    let Ok(replies) = conn.on_every_master(query).await else {
        return Vec::new();
    };
    let mut policies: Vec<String> = replies.iter().flat_map(|(_, reply)| policies(reply)).collect();
    policies.sort();
    policies.dedup();
    policies
        .into_iter()
        .filter(|p| p != "noeviction")
        .map(|p| {
            format!(
                "Redis evicts keys when it is full (maxmemory-policy {p}): tasks can disappear without an error; \
                 set maxmemory-policy noeviction"
            )
        })
        .collect()
}

/// The policies in a `CONFIG GET maxmemory-policy` reply: `[name, value]` on RESP2, a map on
/// RESP3.
fn policies(reply: &Value) -> Vec<String> {
    const NAME: &str = "maxmemory-policy";
    let text = |v: &Value| String::from_redis_value_ref(v).ok();
    match reply {
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(
                |(k, v)| if text(k).as_deref() == Some(NAME) { text(v).into_iter().collect() } else { policies(v) },
            )
            .collect(),
        Value::Array(items) => items
            .chunks(2)
            .filter(|pair| text(&pair[0]).as_deref() == Some(NAME))
            .filter_map(|pair| pair.get(1).and_then(text))
            .collect(),
        _ => Vec::new(),
    }
}
