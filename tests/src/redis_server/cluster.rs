//! A Redis Cluster on loopback, each node a [`RedisServer`], with the 16384 hash slots split
//! evenly in contiguous ranges between the masters (node 0 gets the first range), and
//! optionally one replica per master, ready to take over when its master fails.
//!
//! Each node's cluster bus listens on its port + 10000, the default every Redis from 6.2 on
//! understands, so ports are picked where both are free. Setting up is what
//! `redis-cli --cluster create` does: distinct config epochs, `CLUSTER ADDSLOTSRANGE` (or
//! `ADDSLOTS` before Redis 7.0), `CLUSTER MEET` to node 0, then polling until every node sees
//! every other node and `cluster_state:ok`.

use super::{RedisServer, RespValue, free_port, poll_until, port_is_free, resp, server_argv};
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// The number of hash slots.
const SLOTS: u16 = 16384;

/// The cluster bus port of a node is its port plus this.
const BUS_OFFSET: u16 = 10000;

/// How long the nodes may take to agree that the cluster is up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A Redis Cluster on loopback. Dropping it kills every node.
#[derive(Debug)]
pub struct RedisCluster {
    /// The masters, in slot order.
    nodes: Vec<RedisServer>,
    /// The inclusive slot range each master serves, by index.
    ranges: Vec<(u16, u16)>,
    /// `replicas[i]` replicates `nodes[i]`; empty unless started with replicas.
    replicas: Vec<RedisServer>,
    /// Each master's TLS port, by index; empty unless started with TLS.
    tls_ports: Vec<u16>,
}

impl RedisCluster {
    /// Starts `masters` nodes (3 is the usual), splits the slots between them, joins them and
    /// waits until every node reports `cluster_state:ok` and knows all the others.
    pub fn start(masters: usize) -> Self {
        Self::start_nodes(masters, None)
    }

    /// Like [`start`](Self::start), with every node also serving TLS on a port of its own
    /// (see [`tls_addrs`](Self::tls_addrs)) with `authority`'s server certificate, and the
    /// cluster bus over TLS (`tls-cluster yes`): TLS clients are told the TLS ports.
    pub fn start_tls(masters: usize, authority: &crate::CertificateAuthority) -> Self {
        Self::start_nodes(masters, Some(authority))
    }

    fn start_nodes(masters: usize, tls: Option<&crate::CertificateAuthority>) -> Self {
        assert!((1..=usize::from(SLOTS)).contains(&masters), "a cluster needs 1 to {SLOTS} masters, not {masters}");
        let mut tls_ports = Vec::new();
        let nodes = (0..masters)
            .map(|_| {
                // A launch may be retried on other ports: the TLS port of the last attempt counts.
                let mut last_tls_port = None;
                // With the bus over TLS, the bus port is the TLS port + 10000.
                let pick_port = if tls.is_some() { free_port } else { cluster_port };
                let node = RedisServer::launch(pick_port, |port, dir| {
                    let mut argv = cluster_argv(port, dir);
                    if let Some(authority) = tls {
                        let tls_port = cluster_port();
                        last_tls_port = Some(tls_port);
                        let tls_args = authority.server_args(tls_port);
                        let tls_args = tls_args.iter().map(String::as_str);
                        argv.extend(
                            tls_args.chain(["--tls-cluster", "yes", "--tls-auth-clients", "no"]).map(Into::into),
                        );
                    }
                    argv
                });
                tls_ports.extend(last_tls_port);
                node
            })
            .collect();
        let cluster = Self { nodes, ranges: slot_ranges(masters), replicas: Vec::new(), tls_ports };
        for (i, node) in cluster.nodes.iter().enumerate() {
            // Distinct epochs, as redis-cli sets them, spare the nodes an epoch-collision round.
            cluster.setup(node, &["CLUSTER", "SET-CONFIG-EPOCH", &(i + 1).to_string()]);
            let (first, last) = cluster.ranges[i];
            let (first, last) = (first.to_string(), last.to_string());
            if let Err(e) = node.command(&["CLUSTER", "ADDSLOTSRANGE", &first, &last]) {
                if !e.to_ascii_lowercase().contains("unknown subcommand") {
                    cluster.fail(&format!("CLUSTER ADDSLOTSRANGE on {}: {e}", node.addr()));
                }
                // Redis 6.2 has no ADDSLOTSRANGE.
                let mut args: Vec<String> = vec!["CLUSTER".into(), "ADDSLOTS".into()];
                args.extend((cluster.ranges[i].0..=cluster.ranges[i].1).map(|slot| slot.to_string()));
                cluster.setup(node, &args);
            }
        }
        // A node is met at the port its bus port derives from: the TLS port, with the bus over TLS.
        let first = cluster.tls_ports.first().copied().unwrap_or_else(|| cluster.nodes[0].port()).to_string();
        for node in &cluster.nodes[1..] {
            cluster.setup(node, &["CLUSTER", "MEET", "127.0.0.1", &first]);
        }
        if let Err(e) = poll_until(READY_TIMEOUT, || cluster.check_ready()) {
            cluster.fail(&format!("the cluster did not come up: {e}"));
        }
        cluster
    }

    /// Like [`start`](Self::start), then adds one replica to each master and waits until each
    /// replica is linked to its master, so that a failed master's slots fail over to it.
    pub fn start_with_replicas(masters: usize) -> Self {
        let mut cluster = Self::start(masters);
        let first = cluster.nodes[0].port().to_string();
        for _ in 0..masters {
            let replica = RedisServer::launch(cluster_port, cluster_argv);
            cluster.setup(&replica, &["CLUSTER", "MEET", "127.0.0.1", &first]);
            cluster.replicas.push(replica);
        }
        for (master, replica) in cluster.nodes.iter().zip(&cluster.replicas) {
            let id = match master.command(&["CLUSTER", "MYID"]) {
                Ok(reply) => reply.as_str().unwrap_or_default().to_owned(),
                Err(e) => cluster.fail(&format!("CLUSTER MYID on {}: {e}", master.addr())),
            };
            // The replica learns of its master by gossip: until then, REPLICATE says "Unknown node".
            let replicated = poll_until(READY_TIMEOUT, || replica.command(&["CLUSTER", "REPLICATE", &id]).map(drop));
            if let Err(e) = replicated {
                cluster.fail(&format!("CLUSTER REPLICATE on {}: {e}", replica.addr()));
            }
        }
        let linked = poll_until(READY_TIMEOUT, || {
            for replica in &cluster.replicas {
                let reply = replica.command(&["INFO", "replication"])?;
                let info = resp::parse_info(reply.as_str().unwrap_or_default());
                if info.get("master_link_status").map(String::as_str) != Some("up") {
                    return Err(format!("{} is not linked to its master yet", replica.addr()));
                }
            }
            Ok(())
        });
        if let Err(e) = linked {
            cluster.fail(&format!("the replicas did not follow their masters: {e}"));
        }
        cluster
    }

    /// `127.0.0.1:<tls port>` of every master of a cluster started with
    /// [`start_tls`](Self::start_tls).
    pub fn tls_addrs(&self) -> Vec<String> {
        self.tls_ports.iter().map(|port| format!("127.0.0.1:{port}")).collect()
    }

    /// The replicas; `replicas()[i]` replicates `nodes()[i]` (until a failover).
    pub fn replicas(&self) -> &[RedisServer] {
        &self.replicas
    }

    /// `127.0.0.1:<port>` of every node, replicas included.
    pub fn all_addrs(&self) -> Vec<String> {
        self.nodes.iter().chain(&self.replicas).map(RedisServer::addr).collect()
    }

    /// The node, master or replica, that the live nodes now report as serving `slot`: after a
    /// failover, the promoted replica. `Err` when no live node answers.
    pub fn master_now(&self, slot: u16) -> Result<&RedisServer, String> {
        let mut last_error = "no node answered".to_owned();
        for node in self.nodes.iter().chain(&self.replicas) {
            let reply = match node.command(&["CLUSTER", "SLOTS"]) {
                Ok(reply) => reply,
                Err(e) => {
                    last_error = e;
                    continue;
                }
            };
            for range in reply.as_array().unwrap_or_default() {
                let fields = range.as_array().unwrap_or_default();
                let (Some(first), Some(last)) =
                    (fields.first().and_then(RespValue::as_int), fields.get(1).and_then(RespValue::as_int))
                else {
                    continue;
                };
                if !(first..=last).contains(&i64::from(slot)) {
                    continue;
                }
                let port =
                    fields.get(2).and_then(RespValue::as_array).and_then(|m| m.get(1)).and_then(RespValue::as_int);
                let owner = self.nodes.iter().chain(&self.replicas).find(|n| Some(i64::from(n.port())) == port);
                return owner.ok_or_else(|| {
                    format!("{} names port {port:?} for slot {slot}, not a node of this cluster", node.addr())
                });
            }
            last_error = format!("{} reports no node for slot {slot}", node.addr());
        }
        Err(last_error)
    }

    /// The nodes, in slot order.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The nodes, to [`kill`](RedisServer::kill) or [`restart`](RedisServer::restart) one (a
    /// restarted node rejoins from its `nodes.conf`).
    pub fn nodes_mut(&mut self) -> &mut [RedisServer] {
        &mut self.nodes
    }

    /// `127.0.0.1:<port>` of every node.
    pub fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::addr).collect()
    }

    /// `redis://127.0.0.1:<port>` of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The inclusive slot range node `index` serves.
    pub fn slot_range(&self, index: usize) -> (u16, u16) {
        self.ranges[index]
    }

    /// The node serving `slot` (0..16384).
    pub fn node_for_slot(&self, slot: u16) -> &RedisServer {
        assert!(slot < SLOTS, "slot {slot} is out of range");
        let index = self.ranges.iter().position(|&(first, last)| (first..=last).contains(&slot));
        &self.nodes[index.expect("the ranges cover every slot")]
    }

    /// The node serving `key`.
    pub fn node_for_key(&self, key: impl AsRef<[u8]>) -> &RedisServer {
        self.node_for_slot(Self::key_slot(key))
    }

    /// The hash slot of `key`, as `CLUSTER KEYSLOT` computes it: CRC16 (XMODEM) of the key, or
    /// of its hash tag (the text between the first `{` and the next `}`, when not empty),
    /// modulo 16384.
    pub fn key_slot(key: impl AsRef<[u8]>) -> u16 {
        let key = key.as_ref();
        let hashed = key
            .iter()
            .position(|&b| b == b'{')
            .and_then(|open| {
                let close = key[open + 1..].iter().position(|&b| b == b'}')?;
                (close > 0).then(|| &key[open + 1..open + 1 + close])
            })
            .unwrap_or(key);
        crc16_xmodem(hashed) % SLOTS
    }

    /// Sends a set-up command to `node`, panicking with the logs if it fails.
    fn setup<A: AsRef<[u8]>>(&self, node: &RedisServer, args: &[A]) {
        if let Err(e) = node.command(args) {
            let name: Vec<_> = args.iter().take(3).map(|arg| String::from_utf8_lossy(arg.as_ref())).collect();
            self.fail(&format!("{} on {}: {e}", name.join(" "), node.addr()));
        }
    }

    /// `Ok` once every node reports the cluster up with all nodes known and connected.
    fn check_ready(&self) -> Result<(), String> {
        let expected = self.nodes.len().to_string();
        for node in &self.nodes {
            let reply = node.command(&["CLUSTER", "INFO"])?;
            let info = resp::parse_info(reply.as_str().unwrap_or_default());
            let field = |name: &str| info.get(name).map_or("?", String::as_str);
            if field("cluster_state") != "ok" || field("cluster_known_nodes") != expected {
                return Err(format!(
                    "{}: cluster_state:{} cluster_known_nodes:{} (want ok and {expected})",
                    node.addr(),
                    field("cluster_state"),
                    field("cluster_known_nodes")
                ));
            }
            let reply = node.command(&["CLUSTER", "NODES"])?;
            let table = reply.as_str().unwrap_or_default();
            let unsettled = table.lines().find(|line| {
                let mut fields = line.split(' ');
                let flags = fields.nth(2).unwrap_or_default();
                let link = fields.nth(4).unwrap_or_default();
                flags.split(',').any(|flag| ["handshake", "fail?", "fail", "noaddr"].contains(&flag))
                    || link != "connected"
            });
            if let Some(line) = unsettled {
                return Err(format!("{} sees a node not yet settled: {line}", node.addr()));
            }
        }
        Ok(())
    }

    /// Panics with `why` and every node's diagnostics (the nodes are killed as they drop).
    fn fail(&self, why: &str) -> ! {
        let logs: Vec<_> = self.nodes.iter().map(RedisServer::diagnostics).collect();
        panic!("Redis Cluster set-up failed: {why}\n{}", logs.join("\n"))
    }
}

/// A port that is free together with its cluster bus port (port + 10000).
fn cluster_port() -> u16 {
    for _ in 0..1000 {
        let port = free_port();
        if port.checked_add(BUS_OFFSET).is_some_and(port_is_free) {
            return port;
        }
    }
    panic!("found no loopback port P with P and P + {BUS_OFFSET} both free")
}

/// A cluster node's command line: a plain server's plus cluster mode.
fn cluster_argv(port: u16, dir: &Path) -> Vec<OsString> {
    let extra: Vec<OsString> = vec![
        "--cluster-enabled".into(),
        "yes".into(),
        "--cluster-config-file".into(),
        dir.join("nodes.conf").into(),
        "--cluster-node-timeout".into(),
        "2000".into(),
    ];
    server_argv(port, dir, &extra)
}

/// Splits the slots into `n` contiguous, nearly equal inclusive ranges.
fn slot_ranges(n: usize) -> Vec<(u16, u16)> {
    let slots = usize::from(SLOTS);
    let bound = |i: usize| u16::try_from(i * slots / n).expect("at most 16384");
    (0..n).map(|i| (bound(i), bound(i + 1) - 1)).collect()
}

/// CRC16/XMODEM (polynomial 0x1021, initial value 0), the checksum of Redis Cluster.
fn crc16_xmodem(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &byte| {
        (0..8).fold(
            crc ^ (u16::from(byte) << 8),
            |crc, _| {
                if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 }
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ranges_cover_every_slot_once() {
        assert_eq!(slot_ranges(1), [(0, 16383)]);
        assert_eq!(slot_ranges(3), [(0, 5460), (5461, 10921), (10922, 16383)]);
        for n in [2, 5, 7] {
            let ranges = slot_ranges(n);
            assert_eq!(ranges[0].0, 0);
            assert_eq!(ranges[n - 1].1, 16383);
            assert!(ranges.windows(2).all(|w| w[0].1 + 1 == w[1].0));
        }
    }

    #[test]
    fn key_slots_match_redis() {
        // The CRC16 check value, and examples from the Redis Cluster specification.
        assert_eq!(crc16_xmodem(b"123456789"), 0x31C3);
        assert_eq!(RedisCluster::key_slot("foo"), 12182);
        assert_eq!(RedisCluster::key_slot("{user1000}.following"), RedisCluster::key_slot("user1000"));
        assert_eq!(RedisCluster::key_slot("foo{}{bar}"), RedisCluster::key_slot("foo{}{bar}".as_bytes()));
        assert_ne!(RedisCluster::key_slot("foo{}{bar}"), RedisCluster::key_slot("bar"));
        assert_eq!(RedisCluster::key_slot("foo{{bar}}zap"), RedisCluster::key_slot("{bar"));
        assert_eq!(RedisCluster::key_slot("asynq:{default}:pending"), RedisCluster::key_slot("default"));
    }
}
