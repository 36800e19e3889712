//! The benchmark's own `redis-server`: no persistence, on a free loopback port (never 6379),
//! with its files in a temporary directory. Dropping it kills the process and deletes the
//! directory, so it goes away on every exit path, errors included.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::pin::Pinning;
use super::resp::{Connection, Reply};

/// How long a fresh server may take to answer `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many fresh ports to try when another process takes the one picked.
const PORT_ATTEMPTS: usize = 5;
/// The server's log, in its directory.
const LOG_FILE: &str = "redis.log";

/// A running `redis-server` owned by the benchmark.
#[derive(Debug)]
pub(crate) struct RedisServer {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
    connection: Connection,
}

impl RedisServer {
    /// Starts `binary` (pinned as `pinning` says) and waits until it answers.
    pub(crate) fn start(binary: &Path, pinning: Pinning) -> anyhow::Result<Self> {
        Self::start_with(binary, pinning, "redis", &[], free_port)
    }

    /// Starts `binary` with `extra` arguments, in a directory of its own named after `name`, on
    /// a port from `pick_port`, and waits until it answers: how a Cluster's nodes start.
    pub(crate) fn start_with(
        binary: &Path,
        pinning: Pinning,
        name: &str,
        extra: &[&str],
        pick_port: fn() -> anyhow::Result<u16>,
    ) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("asynq-bench-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut failures = Vec::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = pick_port()?;
            match Self::spawn(binary, pinning, port, &dir, extra) {
                Ok(server) => return Ok(server),
                Err(e) => failures.push(format!("port {port}: {e:#}")),
            }
        }
        let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        bail!("could not start redis-server:\n{}\n--- {LOG_FILE}:\n{}", failures.join("\n"), log.trim_end())
    }

    fn spawn(binary: &Path, pinning: Pinning, port: u16, dir: &Path, extra: &[&str]) -> anyhow::Result<Self> {
        assert_ne!(port, 6379, "the benchmark never uses the default Redis port");
        let mut command = pinning.redis(binary);
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--logfile", LOG_FILE])
            .args(extra)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command.spawn().with_context(|| format!("cannot run {}", binary.display()))?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut server = ServerStarting { child: Some(child), dir };
        let connection = server.wait_until_ready(addr)?;
        let child = server.child.take().expect("the child is kept until ready");
        Ok(Self { child, addr, dir: dir.to_path_buf(), connection })
    }

    /// `redis://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// `127.0.0.1:<port>`.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends one command on the server's control connection.
    pub(crate) fn command(&mut self, args: &[&str]) -> anyhow::Result<Reply> {
        self.connection.command(args)
    }

    /// Deletes every key and resets the command statistics, so that a run starts from nothing.
    pub(crate) fn reset(&mut self) -> anyhow::Result<()> {
        self.command(&["FLUSHALL"])?;
        self.command(&["CONFIG", "RESETSTAT"])?;
        Ok(())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // Errors mean it is gone already, which is the goal.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server between spawn and readiness: killed if it never gets ready.
struct ServerStarting<'a> {
    child: Option<Child>,
    dir: &'a Path,
}

impl ServerStarting<'_> {
    /// Polls until our process answers `PING` on `addr`; fails if it exits (say, because the
    /// port was taken) or another server answers there.
    fn wait_until_ready(&mut self, addr: SocketAddr) -> anyhow::Result<Connection> {
        let child = self.child.as_mut().expect("the child is kept until ready");
        let pid = child.id().to_string();
        let give_up = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait()? {
                bail!("redis-server exited during start-up ({status}); see {}", self.dir.join(LOG_FILE).display());
            }
            if let Ok(mut connection) = Connection::connect(addr)
                && connection.command(&["PING"]).is_ok()
            {
                let info = connection.command(&["INFO", "server"])?.into_text()?;
                let answering = info.lines().find_map(|line| line.strip_prefix("process_id:")).map(str::trim);
                if answering != Some(pid.as_str()) {
                    bail!("another redis-server (process {answering:?}) answers on {addr}");
                }
                return Ok(connection);
            }
            if Instant::now() >= give_up {
                bail!("redis-server did not answer PING on {addr} within {READY_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ServerStarting<'_> {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A loopback port that was free a moment ago (the OS picks it from the ephemeral range).
pub(crate) fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot find a free loopback port")?;
    Ok(listener.local_addr()?.port())
}
