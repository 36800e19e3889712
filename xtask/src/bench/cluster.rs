//! The benchmark's own Redis Cluster: N masters on loopback, each a [`RedisServer`] with cluster
//! mode on, the 16384 hash slots split evenly in contiguous ranges, no replicas. Set up as
//! `redis-cli --cluster create` does: distinct config epochs, `CLUSTER ADDSLOTSRANGE` (`ADDSLOTS`
//! before Redis 7.0), `CLUSTER MEET` to the first node, then polling until every node sees every
//! other and `cluster_state:ok`. Dropping it stops every node.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;

use super::pin::Pinning;
use super::server::{RedisServer, free_port};

/// The number of hash slots.
const SLOTS: usize = 16_384;
/// A node's cluster bus listens on its port plus this (Redis's default).
const BUS_OFFSET: u16 = 10_000;
/// How long the nodes may take to agree that the cluster is up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A Redis Cluster of masters on loopback.
#[derive(Debug)]
pub(crate) struct Cluster {
    nodes: Vec<RedisServer>,
}

impl Cluster {
    /// Starts `masters` nodes of `binary`, unpinned, and joins them into one Cluster.
    pub(crate) fn start(binary: &Path, masters: usize) -> anyhow::Result<Self> {
        if !(1..=SLOTS).contains(&masters) {
            bail!("a cluster has 1 to {SLOTS} masters, not {masters}");
        }
        let extra = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"];
        let nodes = (0..masters)
            .map(|i| {
                let name = format!("cluster-{masters}-{i}");
                RedisServer::start_with(binary, Pinning::new(false), &name, &extra, cluster_port)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut cluster = Self { nodes };
        let ranges = slot_ranges(masters);
        let first_port = cluster.nodes[0].addr().port().to_string();
        for (i, (node, (first, last))) in cluster.nodes.iter_mut().zip(ranges).enumerate() {
            node.command(&["CLUSTER", "SET-CONFIG-EPOCH", &(i + 1).to_string()])?;
            let (first, last) = (first.to_string(), last.to_string());
            if let Err(e) = node.command(&["CLUSTER", "ADDSLOTSRANGE", &first, &last]) {
                if !format!("{e:#}").to_ascii_lowercase().contains("unknown subcommand") {
                    return Err(e.context(format!("CLUSTER ADDSLOTSRANGE on {}", node.addr())));
                }
                // Redis 6.2 has no ADDSLOTSRANGE.
                let slots: Vec<String> =
                    (first.parse::<usize>()?..=last.parse::<usize>()?).map(|s| s.to_string()).collect();
                let args: Vec<&str> =
                    ["CLUSTER", "ADDSLOTS"].into_iter().chain(slots.iter().map(String::as_str)).collect();
                node.command(&args)?;
            }
            if i > 0 {
                node.command(&["CLUSTER", "MEET", "127.0.0.1", &first_port])?;
            }
        }
        let give_up = Instant::now() + READY_TIMEOUT;
        loop {
            let why = match cluster.unready() {
                Ok(None) => return Ok(cluster),
                Ok(Some(why)) => why,
                Err(e) => format!("{e:#}"),
            };
            if Instant::now() >= give_up {
                bail!("the {masters}-master cluster did not come up within {READY_TIMEOUT:?}: {why}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis-cluster://127.0.0.1:<port>,...`, every master named.
    pub(crate) fn url(&self) -> String {
        let addrs: Vec<String> = self.nodes.iter().map(|node| node.addr().to_string()).collect();
        format!("redis-cluster://{}", addrs.join(","))
    }

    /// The masters.
    pub(crate) fn nodes_mut(&mut self) -> &mut [RedisServer] {
        &mut self.nodes
    }

    /// How many masters it has.
    pub(crate) fn masters(&self) -> usize {
        self.nodes.len()
    }

    /// Deletes every key on every master and resets their command statistics.
    pub(crate) fn reset(&mut self) -> anyhow::Result<()> {
        self.nodes.iter_mut().try_for_each(RedisServer::reset)
    }

    /// Why the cluster is not up yet, or `None` once every node reports it up with every node
    /// known and connected.
    fn unready(&mut self) -> anyhow::Result<Option<String>> {
        let expected = self.nodes.len().to_string();
        for node in &mut self.nodes {
            let info = node.command(&["CLUSTER", "INFO"])?.into_text()?;
            let field = |name: &str| {
                info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map_or("?", str::trim)
            };
            if field("cluster_state") != "ok" || field("cluster_known_nodes") != expected {
                return Ok(Some(format!(
                    "{}: cluster_state:{} cluster_known_nodes:{} (want ok and {expected})",
                    node.addr(),
                    field("cluster_state"),
                    field("cluster_known_nodes")
                )));
            }
            let table = node.command(&["CLUSTER", "NODES"])?.into_text()?;
            if let Some(line) = table.lines().find(|line| !settled(line)) {
                return Ok(Some(format!("{} sees a node not settled yet: {line}", node.addr())));
            }
        }
        Ok(None)
    }
}

/// Whether a `CLUSTER NODES` line shows a node known, reachable and connected.
fn settled(line: &str) -> bool {
    let fields: Vec<&str> = line.split(' ').collect();
    let flags = fields.get(2).copied().unwrap_or_default();
    let link = fields.get(7).copied().unwrap_or_default();
    !flags.split(',').any(|flag| ["handshake", "fail?", "fail", "noaddr"].contains(&flag)) && link == "connected"
}

/// A loopback port that is free together with its cluster bus port (port + [`BUS_OFFSET`]).
fn cluster_port() -> anyhow::Result<u16> {
    for _ in 0..1_000 {
        let port = free_port()?;
        if port.checked_add(BUS_OFFSET).is_some_and(|bus| TcpListener::bind((Ipv4Addr::LOCALHOST, bus)).is_ok()) {
            return Ok(port);
        }
    }
    bail!("found no loopback port P with P and P + {BUS_OFFSET} both free")
}

/// The slots split into `n` contiguous, nearly equal inclusive ranges.
fn slot_ranges(n: usize) -> Vec<(usize, usize)> {
    (0..n).map(|i| (i * SLOTS / n, (i + 1) * SLOTS / n - 1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ranges_cover_every_slot_once() {
        for n in [1, 2, 3, 4, 8] {
            let ranges = slot_ranges(n);
            assert_eq!((ranges[0].0, ranges[n - 1].1), (0, SLOTS - 1));
            assert!(ranges.windows(2).all(|pair| pair[1].0 == pair[0].1 + 1), "{ranges:?}");
        }
        assert_eq!(slot_ranges(2), [(0, 8_191), (8_192, 16_383)]);
    }

    #[test]
    fn a_two_master_cluster_serves_every_slot_and_resets() {
        let name =
            std::env::var_os(crate::redis::BIN_ENV).filter(|bin| !bin.is_empty()).unwrap_or("redis-server".into());
        let binary = crate::tools::find_executable(Path::new(&name)).expect("a redis-server for the tests");
        let mut cluster = Cluster::start(&binary, 2).unwrap();
        assert_eq!(cluster.masters(), 2);
        let url = cluster.url();
        assert!(url.starts_with("redis-cluster://127.0.0.1:") && url.matches(',').count() == 1, "{url}");
        for node in cluster.nodes_mut() {
            let info = node.command(&["CLUSTER", "INFO"]).unwrap().into_text().unwrap();
            assert!(info.contains("cluster_slots_assigned:16384") && info.contains("cluster_state:ok"), "{info}");
        }
        cluster.reset().unwrap();
    }

    #[test]
    fn nodes_lines_are_settled_when_connected_and_not_failing() {
        let line = |flags: &str, link: &str| format!("07c3 127.0.0.1:30001@40001 {flags} - 0 1 1 {link} 0-8191");
        assert!(settled(&line("myself,master", "connected")));
        assert!(settled(&line("master", "connected")));
        assert!(!settled(&line("master,fail?", "connected")));
        assert!(!settled(&line("handshake", "connected")));
        assert!(!settled(&line("master", "disconnected")));
    }
}
