//! Redis settings under which tasks can vanish without an error: which eviction policies are
//! unsafe (the rule [`backend_info`](crate::backend) applies to what `INFO` says), and the
//! check made at connect time.

use crate::connection::Connection;
use asynq_core::EvictionRisk;

/// The one policy under which Redis never evicts a key: when full, it refuses writes instead.
const NO_EVICTION: &str = "noeviction";

/// The risks of `policies` (as `maxmemory-policy` names them, one per server or Cluster
/// master): one per distinct policy that lets Redis evict keys when it is full, which is every
/// policy but `noeviction`, sorted. This is the one place that says which policies are unsafe;
/// the connect-time warnings and [`Inspect::backend_info`](asynq_core::broker::Inspect) both
/// use it.
pub(crate) fn eviction_risks(policies: impl IntoIterator<Item = String>) -> Vec<EvictionRisk> {
    let mut policies: Vec<String> = policies.into_iter().map(|p| p.trim().to_owned()).collect();
    policies.sort();
    policies.dedup();
    policies
        .into_iter()
        .filter(|p| !p.is_empty() && p != NO_EVICTION)
        .map(|policy| EvictionRisk {
            warning: format!(
                "Redis evicts keys when it is full (maxmemory-policy {policy}): tasks can disappear without an error; \
                 set maxmemory-policy noeviction"
            ),
            policy,
        })
        .collect()
}

/// Reads the server's settings and describes each one that can lose task data silently; empty
/// when none does. A server that refuses `CONFIG` (some managed services) cannot be checked and
/// yields no warning.
pub(crate) async fn data_loss_warnings(conn: &mut Connection) -> Vec<String> {
    let Ok(policies) = conn.config_get("maxmemory-policy").await else {
        return Vec::new();
    };
    eviction_risks(policies).into_iter().map(|r| r.warning).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_but_noeviction_is_a_risk_named_once() {
        assert!(eviction_risks(["noeviction".to_owned()]).is_empty());
        assert!(eviction_risks(Vec::new()).is_empty());
        let risks = eviction_risks(["volatile-ttl", "allkeys-lru", "noeviction", "allkeys-lru"].map(String::from));
        let policies: Vec<&str> = risks.iter().map(|r| r.policy.as_str()).collect();
        assert_eq!(policies, ["allkeys-lru", "volatile-ttl"]);
        assert!(risks[0].warning.contains("maxmemory-policy allkeys-lru"), "{}", risks[0].warning);
        assert!(risks[0].warning.contains("set maxmemory-policy noeviction"), "{}", risks[0].warning);
    }
}
