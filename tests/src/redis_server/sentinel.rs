//! A Redis Sentinel set on loopback: a master, one replica of it, and one sentinel (quorum 1)
//! monitoring the master under a given name, each a [`RedisServer`].
//!
//! The sentinel's timings are shortened (down after 1 s, failover timeout 5 s) so a failover
//! finishes in a few seconds. The sentinel rewrites its `sentinel.conf` as its view changes;
//! the file lives in its own writable temporary directory.
//!
//! Started with TLS ([`RedisSentinel::start_tls`]), each of the three also serves TLS on a port
//! of its own, and replication and the sentinel's links use TLS (`tls-replication yes`): the
//! sentinel knows the servers by their TLS ports, and tells clients those. The plain ports
//! stay, for the harness's own commands.

use super::{RedisServer, RespValue, free_port, poll_until};
use crate::CertificateAuthority;
use crate::tls::free_tls_port;
use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the set may take to come up, and a failover to finish.
const TIMEOUT: Duration = Duration::from_secs(20);

/// A master, a replica and a sentinel watching them. Dropping it kills all three.
#[derive(Debug)]
pub struct RedisSentinel {
    name: String,
    master: RedisServer,
    replica: RedisServer,
    sentinel: RedisServer,
    /// The TLS ports, when started with TLS.
    tls: Option<TlsPorts>,
}

/// The TLS ports of a set started with TLS; `master` and `replica` swap with the servers.
#[derive(Debug, Clone, Copy)]
struct TlsPorts {
    master: u16,
    replica: u16,
    sentinel: u16,
}

impl RedisSentinel {
    /// Starts the master, its replica and a sentinel monitoring the master as `master_name`
    /// (letters, digits, `-`, `_` and `.`), and waits until the replica is in sync and the
    /// sentinel knows both, so a [`failover`](Self::failover) can pick the replica.
    pub fn start(master_name: &str) -> Self {
        Self::start_set(master_name, None)
    }

    /// Like [`start`](Self::start), with TLS as the module says, using `authority`'s server
    /// certificate; clients reach the sentinel at [`sentinel_tls_addr`](Self::sentinel_tls_addr).
    pub fn start_tls(master_name: &str, authority: &CertificateAuthority) -> Self {
        Self::start_set(master_name, Some(authority))
    }

    fn start_set(master_name: &str, authority: Option<&CertificateAuthority>) -> Self {
        assert!(
            !master_name.is_empty()
                && master_name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')),
            "a sentinel master name is letters, digits, '-', '_' and '.'; got {master_name:?}"
        );
        let tls = authority.map(|_| TlsPorts {
            master: free_tls_port(),
            replica: free_tls_port(),
            sentinel: free_tls_port(),
        });
        // With TLS, a server's own TLS arguments, and its links to the others over TLS.
        let tls_args = |port: fn(&TlsPorts) -> u16| -> Vec<String> {
            match (authority, &tls) {
                (Some(authority), Some(ports)) => {
                    let mut args = authority.server_args(port(ports));
                    args.extend(["--tls-replication", "yes", "--tls-auth-clients", "no"].map(str::to_owned));
                    args
                }
                _ => Vec::new(),
            }
        };
        let master_args = tls_args(|ports| ports.master);
        let master = RedisServer::start_with(&master_args);
        let master_port = tls.map_or(master.port(), |ports| ports.master);
        let mut replica_args = vec!["--replicaof".to_owned(), "127.0.0.1".to_owned(), master_port.to_string()];
        replica_args.extend(tls_args(|ports| ports.replica));
        let replica = RedisServer::start_with(&replica_args);
        let sentinel_tls = tls_args(|ports| ports.sentinel);
        let sentinel = RedisServer::launch(free_port, |port, dir| {
            let conf = dir.join("sentinel.conf");
            std::fs::write(&conf, sentinel_conf(port, dir, master_name, master_port))
                .unwrap_or_else(|e| panic!("could not write {}: {e}", conf.display()));
            let mut argv = vec![conf.into(), OsString::from("--sentinel")];
            argv.extend(sentinel_tls.iter().map(OsString::from));
            argv
        });
        let set = Self { name: master_name.to_owned(), master, replica, sentinel, tls };
        if let Err(e) = poll_until(TIMEOUT, || set.check_ready()) {
            set.fail(&format!("the sentinel set did not come up: {e}"));
        }
        set
    }

    /// The current master (the former replica after a [`failover`](Self::failover)).
    pub fn master(&self) -> &RedisServer {
        &self.master
    }

    /// The current replica (the former master after a [`failover`](Self::failover)).
    pub fn replica(&self) -> &RedisServer {
        &self.replica
    }

    /// The replica, to kill or restart it (after a [`failover`](Self::failover), the old
    /// master).
    pub fn replica_mut(&mut self) -> &mut RedisServer {
        &mut self.replica
    }

    /// The sentinel process, for example to send it `SENTINEL` commands or to kill it.
    pub fn sentinel(&self) -> &RedisServer {
        &self.sentinel
    }

    /// `127.0.0.1:<port>` of the sentinel.
    pub fn sentinel_addr(&self) -> String {
        self.sentinel.addr()
    }

    /// `127.0.0.1:<TLS port>` of the sentinel of a set started with
    /// [`start_tls`](Self::start_tls).
    pub fn sentinel_tls_addr(&self) -> String {
        let ports = self.tls.expect("sentinel_tls_addr needs a set started with start_tls");
        format!("127.0.0.1:{}", ports.sentinel)
    }

    /// `127.0.0.1:<port>` the sentinel and replication know the master by: its TLS port in a
    /// set started with [`start_tls`](Self::start_tls).
    pub fn master_addr(&self) -> String {
        format!("127.0.0.1:{}", self.tls.map_or(self.master.port(), |ports| ports.master))
    }

    /// Like [`master_addr`](Self::master_addr), for the replica.
    fn replica_addr(&self) -> String {
        format!("127.0.0.1:{}", self.tls.map_or(self.replica.port(), |ports| ports.replica))
    }

    /// The name the sentinel monitors the master under.
    pub fn master_name(&self) -> &str {
        &self.name
    }

    /// The master's address as the sentinel reports it (`SENTINEL get-master-addr-by-name`).
    pub fn reported_master(&self) -> Result<String, String> {
        let reply = self.sentinel.command(&["SENTINEL", "get-master-addr-by-name", &self.name])?;
        match reply.as_array() {
            Some([host, port]) => Ok(format!("{}:{}", host.as_str().unwrap_or("?"), port.as_str().unwrap_or("?"))),
            _ => Err(format!("get-master-addr-by-name replied {reply:?}")),
        }
    }

    /// Forces a failover (`SENTINEL FAILOVER <name>`) and waits, at most 20 s, until the
    /// sentinel reports the replica as the master; then [`master`](Self::master) and
    /// [`replica`](Self::replica) swap. It takes about a second.
    ///
    /// The old master still runs and still calls itself master when this returns: Sentinel
    /// turns it into a replica of the new master only about 10 s later. Call
    /// [`rejoin_replica`](Self::rejoin_replica) to do that at once.
    pub fn failover(&mut self) {
        let give_up = Instant::now() + TIMEOUT;
        let promoted = self.replica_addr();
        let asked = poll_until(TIMEOUT, || match self.sentinel.command(&["SENTINEL", "FAILOVER", &self.name]) {
            Ok(_) => Ok(()),
            // Another failover is already under way: wait for it like ours.
            Err(e) if e.starts_with("INPROG") => Ok(()),
            // -NOGOODSLAVE while the sentinel's view of the replica is stale: ask again.
            Err(e) => Err(format!("SENTINEL FAILOVER: {e}")),
        });
        if let Err(e) = asked {
            self.fail(&e);
        }
        let left = give_up.saturating_duration_since(Instant::now());
        let switched = poll_until(left, || match self.reported_master()? {
            addr if addr == promoted => Ok(()),
            addr => Err(format!("the sentinel still reports {addr} as master (want {promoted})")),
        });
        if let Err(e) = switched {
            self.fail(&format!("the failover did not finish: {e}"));
        }
        std::mem::swap(&mut self.master, &mut self.replica);
        if let Some(ports) = &mut self.tls {
            std::mem::swap(&mut ports.master, &mut ports.replica);
        }
    }

    /// Makes [`replica`](Self::replica) a replica of [`master`](Self::master) now
    /// (`REPLICAOF`), as Sentinel itself would some 10 s after a [`failover`](Self::failover),
    /// and waits, at most 20 s, until its link is up. Harmless when it already is one.
    pub fn rejoin_replica(&self) {
        let master = self.master_addr();
        let (_, port) = master.rsplit_once(':').expect("host:port");
        if let Err(e) = self.replica.command(&["REPLICAOF", "127.0.0.1", port]) {
            self.fail(&format!("REPLICAOF on {}: {e}", self.replica.addr()));
        }
        if let Err(e) = poll_until(TIMEOUT, || self.replica_is_linked()) {
            self.fail(&format!("the replica did not follow the master: {e}"));
        }
    }

    /// `Ok` once the replica follows the master, the sentinel reports the master, and the
    /// sentinel has a fresh view of the replica.
    fn check_ready(&self) -> Result<(), String> {
        self.replica_is_linked()?;
        let master = self.reported_master()?;
        if master != self.master_addr() {
            return Err(format!("the sentinel reports {master} as master (want {})", self.master_addr()));
        }
        let reply = self.sentinel.command(&["SENTINEL", "REPLICAS", &self.name])?;
        let replicas: Vec<_> = reply.as_array().unwrap_or_default().iter().map(RespValue::to_map).collect();
        let replica = self.replica_addr();
        let (_, port) = replica.rsplit_once(':').expect("host:port");
        let known = replicas.iter().find(|replica| replica.get("port").map(String::as_str) == Some(port));
        match known {
            // "master-link-status" comes from the replica's INFO, so the sentinel has read it.
            Some(replica)
                if replica.get("flags").map(String::as_str) == Some("slave")
                    && replica.get("master-link-status").map(String::as_str) == Some("ok") =>
            {
                Ok(())
            }
            _ => Err(format!("the sentinel does not know the replica as healthy yet: {replicas:?}")),
        }
    }

    /// `Ok` once the replica reports the master as its master, with the link up.
    fn replica_is_linked(&self) -> Result<(), String> {
        let info = self.replica.info("replication")?;
        let field = |name: &str| info.get(name).map_or("?", String::as_str);
        let master = self.master_addr();
        let (_, master_port) = master.rsplit_once(':').expect("host:port");
        if field("role") == "slave" && field("master_port") == master_port && field("master_link_status") == "up" {
            Ok(())
        } else {
            Err(format!(
                "{}: role:{} master_port:{} master_link_status:{} (want slave, {master_port}, up)",
                self.replica.addr(),
                field("role"),
                field("master_port"),
                field("master_link_status")
            ))
        }
    }

    /// Panics with `why` and the diagnostics of all three processes.
    fn fail(&self, why: &str) -> ! {
        panic!(
            "Redis Sentinel set-up failed: {why}\n--- master\n{}\n--- replica\n{}\n--- sentinel\n{}",
            self.master.diagnostics(),
            self.replica.diagnostics(),
            self.sentinel.diagnostics()
        )
    }
}

/// The sentinel's configuration file.
fn sentinel_conf(port: u16, dir: &Path, name: &str, master_port: u16) -> String {
    format!(
        "port {port}\n\
         bind 127.0.0.1\n\
         daemonize no\n\
         loglevel notice\n\
         dir {dir}\n\
         logfile {log}\n\
         sentinel monitor {name} 127.0.0.1 {master_port} 1\n\
         sentinel down-after-milliseconds {name} 1000\n\
         sentinel failover-timeout {name} 5000\n",
        dir = quote(dir),
        log = quote(&dir.join(super::LOG_FILE)),
    )
}

/// A path as a double-quoted Redis config string.
fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentinel_config_monitors_the_master_with_short_timings() {
        let conf = sentinel_conf(26400, Path::new("/tmp/a \"b\""), "mymaster", 6400);
        assert!(conf.contains("port 26400\n"));
        assert!(conf.contains("dir \"/tmp/a \\\"b\\\"\"\n"));
        assert!(conf.contains("sentinel monitor mymaster 127.0.0.1 6400 1\n"));
        assert!(conf.contains("sentinel down-after-milliseconds mymaster 1000\n"));
        assert!(conf.contains("sentinel failover-timeout mymaster 5000\n"));
    }
}
