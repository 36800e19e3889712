//! Throwaway `redis-server` processes for tests: a single [`RedisServer`], a [`RedisCluster`]
//! and a [`RedisSentinel`] set, each on free loopback ports with its own temporary directory,
//! killed when dropped.
//!
//! Nothing here uses port 6379 or any shared state, so every test can own its servers under
//! both `cargo nextest` (a process per test) and `cargo test` (a thread per test). The binary
//! comes from `ASYNQ_REDIS_SERVER_BIN` (default `redis-server` on `PATH`); when it is missing
//! the harness panics with install instructions instead of skipping. Commands go over a tiny
//! blocking RESP2 client ([`RespConnection`]), so the harness needs no Redis client crate.
//! The only waiting is readiness polling every 10 ms, bounded by a timeout whose panic message
//! carries the servers' logs. Every call blocks its thread: in an async test, set-up before
//! the work starts is fine, but run a long call such as [`RedisSentinel::failover`] (about a
//! second) under `tokio::task::spawn_blocking` if tasks must keep running meanwhile.

mod cluster;
mod resp;
mod sentinel;

pub use cluster::RedisCluster;
pub use resp::{RespConnection, RespValue};
pub use sentinel::RedisSentinel;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable naming the `redis-server` binary.
pub(crate) const BIN_ENV: &str = "ASYNQ_REDIS_SERVER_BIN";

/// How often readiness is polled.
pub(crate) const POLL: Duration = Duration::from_millis(10);

/// How long a server may take to answer `PING` after it was spawned.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many fresh ports to try when another process takes the one we picked.
const PORT_ATTEMPTS: usize = 10;

/// The server's own log file, inside its directory.
const LOG_FILE: &str = "redis.log";

/// Where the process's stdout and stderr go (config errors are printed there, not logged).
const STDIO_FILE: &str = "stdio.log";

/// One `redis-server` process (a plain server, a cluster node or a sentinel) on a loopback
/// port, with its own temporary directory. Dropping it kills the process and deletes the
/// directory.
#[derive(Debug)]
pub struct RedisServer {
    /// The running process; `None` after [`kill`](Self::kill).
    child: Option<Child>,
    port: u16,
    bin: PathBuf,
    /// Everything after the binary name, kept for [`restart`](Self::restart).
    argv: Vec<OsString>,
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts a server with no persistence on a free port and waits until it answers `PING`.
    pub fn start() -> Self {
        Self::start_with::<&str>(&[])
    }

    /// Like [`start`](Self::start), with extra command-line configuration appended, such as
    /// `&["--appendonly", "yes"]` or `&["--requirepass", "secret"]`. Later options win, so
    /// these override the defaults (`--save "" --appendonly no --repl-diskless-sync-delay 0`,
    /// the last so a replica syncs at once); keep `--loglevel` at `notice` or more verbose, as
    /// readiness behind a password is read from the log.
    pub fn start_with<S: AsRef<str>>(args: &[S]) -> Self {
        let args: Vec<OsString> = args.iter().map(|arg| OsString::from(arg.as_ref())).collect();
        Self::launch(free_port, |port, dir| server_argv(port, dir, &args))
    }

    /// Spawns `redis-server` with the arguments `argv(port, dir)` on a port from `pick_port`,
    /// trying fresh ports while another process beats it to the port, and waits until ready.
    pub(crate) fn launch(pick_port: impl Fn() -> u16, mut argv: impl FnMut(u16, &Path) -> Vec<OsString>) -> Self {
        let bin = redis_server_bin();
        let dir = tempfile::Builder::new()
            .prefix("asynq-redis-")
            .tempdir()
            .unwrap_or_else(|e| panic!("could not create a temporary directory for redis-server: {e}"));
        let mut server = Self { child: None, port: 0, bin, argv: Vec::new(), dir };
        let mut collisions = Vec::new();
        for _ in 0..PORT_ATTEMPTS {
            server.port = pick_port();
            server.argv = argv(server.port, server.dir.path());
            match server.spawn_and_wait() {
                Ok(()) => return server,
                Err(Failure::PortTaken(why)) => {
                    collisions.push(format!("port {}: {why}", server.port));
                    server.kill();
                }
                Err(Failure::Other(why)) => server.fail(&why),
            }
        }
        server.fail(&format!("could not get a free port in {PORT_ATTEMPTS} tries:\n{}", collisions.join("\n")))
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its working directory (data, `redis.log`, `nodes.conf`, `sentinel.conf`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Everything it has logged so far, across restarts.
    pub fn log(&self) -> String {
        read_lossy(&self.dir.path().join(LOG_FILE))
    }

    /// Its process ID, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still alive (it may have exited on its own, for example after
    /// `SHUTDOWN`).
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills the process with SIGKILL and waits for it to go. Does nothing if it is not
    /// running. The port and directory stay reserved for [`restart`](Self::restart).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Fails only if it already exited, which is what we want anyway.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again with the same port, directory and configuration (killing it
    /// first if it still runs), and waits until it answers `PING`. Whatever it persisted in its
    /// directory (AOF, RDB, `nodes.conf`, the sentinel's rewritten config) is loaded again.
    pub fn restart(&mut self) {
        self.kill();
        match self.spawn_and_wait() {
            Ok(()) => {}
            Err(Failure::PortTaken(why)) => {
                self.fail(&format!("port {} was taken while the server was down: {why}", self.port))
            }
            Err(Failure::Other(why)) => self.fail(&why),
        }
    }

    /// Opens a new connection to it.
    pub fn connect(&self) -> Result<RespConnection, String> {
        RespConnection::connect(&self.addr())
    }

    /// Sends one command on a fresh connection and returns the reply; an error reply or a
    /// connection failure is `Err` with its text. For a password-protected server, use
    /// [`connect`](Self::connect) and send `AUTH` first.
    pub fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<RespValue, String> {
        self.connect()?.command(args)
    }

    /// `INFO <section>` as `field -> value`.
    pub fn info(&self, section: &str) -> Result<BTreeMap<String, String>, String> {
        let reply = self.command(&["INFO", section])?;
        let text = reply.as_str().ok_or_else(|| format!("INFO replied {reply:?}"))?;
        Ok(resp::parse_info(text))
    }

    /// How many times `command` (lower case, as `INFO commandstats` names it) ran, and the
    /// microseconds it took, since the server started or the last `CONFIG RESETSTAT`.
    pub fn command_stat(&self, command: &str) -> (u64, u64) {
        let stats = self.info("commandstats").unwrap_or_else(|e| panic!("INFO commandstats: {e}"));
        stats.get(&format!("cmdstat_{command}")).map_or((0, 0), |stat| {
            let field = |name: &str| -> u64 {
                let value = stat.split(',').find_map(|pair| pair.strip_prefix(name));
                value.and_then(|value| value.parse().ok()).unwrap_or_else(|| panic!("no {name} in {stat}"))
            };
            (field("calls="), field("usec="))
        })
    }

    /// How many times `command` ran: [`command_stat`](Self::command_stat)'s count.
    pub fn command_calls(&self, command: &str) -> u64 {
        self.command_stat(command).0
    }

    /// Every key of the server with its type, its contents (sets and hashes sorted, so that two
    /// dumps compare) and its TTL in seconds (`-1` without one).
    pub fn dump(&self) -> KeyDump {
        let keys = self.command(&["KEYS", "*"]).unwrap();
        let mut dump = KeyDump::new();
        for key in keys.as_array().unwrap() {
            let key = key.as_str().unwrap();
            let kind = self.command(&["TYPE", key]).unwrap().as_str().unwrap().to_owned();
            let contents = match kind.as_str() {
                "string" => self.command(&["GET", key]).unwrap(),
                "list" => self.command(&["LRANGE", key, "0", "-1"]).unwrap(),
                "zset" => self.command(&["ZRANGE", key, "0", "-1", "WITHSCORES"]).unwrap(),
                "set" => sorted_groups(self.command(&["SMEMBERS", key]).unwrap(), 1),
                "hash" => sorted_groups(self.command(&["HGETALL", key]).unwrap(), 2),
                other => panic!("unexpected type {other} of {key}"),
            };
            let ttl = self.command(&["TTL", key]).unwrap().as_int().unwrap();
            dump.insert(key.to_owned(), (kind, contents, ttl));
        }
        dump
    }

    /// The log, the process's stdout/stderr and its command line, for panic messages.
    pub(crate) fn diagnostics(&self) -> String {
        let argv: Vec<_> = self.argv.iter().map(|arg| arg.to_string_lossy()).collect();
        format!(
            "--- {} {} (port {}, dir {})\n--- {LOG_FILE}:\n{}\n--- stdout/stderr:\n{}",
            self.bin.display(),
            argv.join(" "),
            self.port,
            self.dir().display(),
            self.log().trim_end(),
            read_lossy(&self.dir().join(STDIO_FILE)).trim_end()
        )
    }

    /// Kills the server and panics with `why` and its diagnostics.
    fn fail(&mut self, why: &str) -> ! {
        self.kill();
        panic!("redis-server failed: {why}\n{}", self.diagnostics())
    }

    /// Spawns the process and polls until it answers `PING` (or `-NOAUTH`) and is known to be
    /// ours, every 10 ms for at most [`READY_TIMEOUT`].
    fn spawn_and_wait(&mut self) -> Result<(), Failure> {
        let log_path = self.dir().join(LOG_FILE);
        // Only what this run logs counts: the log survives restarts and port retries.
        let log_start = std::fs::metadata(&log_path).map_or(0, |meta| meta.len());
        let stdio_path = self.dir().join(STDIO_FILE);
        let stdio_start = std::fs::metadata(&stdio_path).map_or(0, |meta| meta.len());
        let stdout = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stdio_path)
            .map_err(|e| Failure::Other(format!("could not open {}: {e}", stdio_path.display())))?;
        let stderr = stdout.try_clone().map_err(|e| Failure::Other(e.to_string()))?;
        let child = Command::new(&self.bin)
            .args(&self.argv)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    panic!("could not run {}: {e}\n{}", self.bin.display(), install_hint())
                }
                Failure::Other(format!("could not run {}: {e}", self.bin.display()))
            })?;
        let pid = child.id();
        self.child = Some(child);
        let new_output =
            || format!("{}{}", read_lossy_from(&log_path, log_start), read_lossy_from(&stdio_path, stdio_start));

        let give_up = Instant::now() + READY_TIMEOUT;
        loop {
            let exited = self.child.as_mut().and_then(|child| child.try_wait().ok().flatten());
            if let Some(status) = exited {
                self.child = None;
                let output = new_output();
                return Err(if output.contains("Address already in use") {
                    Failure::PortTaken(format!("redis-server exited ({status}): address already in use"))
                } else {
                    Failure::Other(format!("redis-server exited during start-up ({status})"))
                });
            }
            let last = match probe(&self.addr(), pid, &new_output) {
                Probe::Ours => return Ok(()),
                Probe::Someone(other) => {
                    return Err(Failure::PortTaken(format!("another redis-server (pid {other}) answered")));
                }
                Probe::NotYet(why) => why,
            };
            if Instant::now() >= give_up {
                return Err(Failure::Other(format!("no answer to PING within {READY_TIMEOUT:?}; last: {last}")));
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Why a start failed.
enum Failure {
    /// Another process has the port: try a fresh one.
    PortTaken(String),
    /// Anything else: give up with the log.
    Other(String),
}

/// What one readiness probe found.
enum Probe {
    /// Our process answers.
    Ours,
    /// A different redis-server (this pid) answers on the port.
    Someone(u32),
    /// Not ready yet, and why.
    NotYet(String),
}

/// Asks `addr` for `PING`, then checks with `INFO server` that process `pid` is the one
/// answering: we may have lost a race for the port to another test's server. Behind a password
/// `INFO` is refused, so the log of this run (`new_output`) must say the server is ready.
fn probe(addr: &str, pid: u32, new_output: &dyn Fn() -> String) -> Probe {
    let mut connection = match RespConnection::connect(addr) {
        Ok(connection) => connection,
        Err(e) => return Probe::NotYet(e),
    };
    match connection.command(&["PING"]) {
        Ok(RespValue::Simple(pong)) if pong == "PONG" => {}
        Err(e) if e.starts_with("NOAUTH") => {}
        Ok(other) => return Probe::NotYet(format!("PING replied {other:?}")),
        Err(e) => return Probe::NotYet(format!("PING: {e}")), // -LOADING, a reset, ...
    }
    let info = connection.command(&["INFO", "server"]);
    let process_id = info
        .as_ref()
        .ok()
        .and_then(RespValue::as_str)
        .map(resp::parse_info)
        .and_then(|info| info.get("process_id").and_then(|id| id.parse::<u32>().ok()));
    match process_id {
        Some(id) if id == pid => Probe::Ours,
        Some(other) => Probe::Someone(other),
        None => {
            let output = new_output();
            // A server logs the first when it listens; a sentinel never does, but logs the second.
            if output.contains("Ready to accept connections") || output.contains("Sentinel ID is") {
                Probe::Ours
            } else {
                Probe::NotYet(format!("answers PING, but INFO gave {info:?} and the log does not say ready yet"))
            }
        }
    }
}

/// The default command line of a plain server: no persistence, logs and files in `dir`.
fn server_argv(port: u16, dir: &Path, extra: &[OsString]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--loglevel",
        "notice",
        // A master otherwise waits 5 s for more replicas before a diskless full sync.
        "--repl-diskless-sync-delay",
        "0",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    argv.extend([OsString::from("--dir"), dir.into()]);
    argv.extend([OsString::from("--logfile"), dir.join(LOG_FILE).into()]);
    argv.extend(extra.iter().cloned());
    argv
}

/// A loopback port that was free a moment ago (the OS picks it; we release it at once).
pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0")
        .unwrap_or_else(|e| panic!("could not bind 127.0.0.1:0 to find a free port: {e}"));
    listener.local_addr().expect("a bound listener has an address").port()
}

/// Whether `port` on 127.0.0.1 can be bound right now.
pub(crate) fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The `redis-server` to run: `$ASYNQ_REDIS_SERVER_BIN` or `redis-server`, resolved against
/// `PATH`. Panics with install instructions if there is none.
pub(crate) fn redis_server_bin() -> PathBuf {
    let name = std::env::var_os(BIN_ENV).filter(|name| !name.is_empty());
    let from_env = name.is_some();
    let name = name.unwrap_or_else(|| "redis-server".into());
    match find_executable(Path::new(&name), std::env::var_os("PATH").as_deref()) {
        Some(path) => path,
        None => panic!(
            "cannot run the Redis tests: {} not found{}.\n{}",
            Path::new(&name).display(),
            if from_env { format!(" (from {BIN_ENV})") } else { " on PATH".to_owned() },
            install_hint()
        ),
    }
}

/// What to do when `redis-server` is missing.
fn install_hint() -> String {
    format!(
        "These tests start their own redis-server (Redis 6.2 or newer). Run them with \
         `cargo xtask test`, which installs it when missing, or install it yourself \
         (`apt-get install redis-server` on Debian/Ubuntu, `brew install redis` on macOS), \
         or set {BIN_ENV} to the path of a redis-server binary."
    )
}

/// Resolves `name` as a shell would: as a path when it has a separator, otherwise by searching
/// `path_var`. Symlinks are kept: Debian's `redis-server` is a link to `redis-check-rdb`, which
/// acts on the name it was run by.
fn find_executable(name: &Path, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return is_executable(name).then(|| std::path::absolute(name).ok()).flatten();
    }
    std::env::split_paths(path_var?).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// A file's text, or an explanation of why it could not be read.
fn read_lossy(path: &Path) -> String {
    read_lossy_from(path, 0)
}

/// A file's text from byte `start` on; empty if it does not exist.
fn read_lossy_from(path: &Path, start: u64) -> String {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            if let Err(e) = file.seek(SeekFrom::Start(start)).and_then(|_| file.read_to_end(&mut bytes)) {
                return format!("<could not read {}: {e}>", path.display());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return format!("<could not read {}: {e}>", path.display()),
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Polls `check` every [`POLL`] until it returns `Ok`, for at most `limit`; then returns the
/// last `Err` text.
pub(crate) fn poll_until<T>(limit: Duration, mut check: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    let give_up = Instant::now() + limit;
    loop {
        match check() {
            Ok(value) => return Ok(value),
            Err(e) if Instant::now() >= give_up => return Err(format!("gave up after {limit:?}; last: {e}")),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// A server's keys as [`RedisServer::dump`] reads them: key -> (type, contents, TTL in seconds).
pub type KeyDump = BTreeMap<String, (String, RespValue, i64)>;

/// An array of elements in groups of `n` (a hash's field-value pairs), sorted by group.
fn sorted_groups(value: RespValue, n: usize) -> RespValue {
    let mut groups: Vec<Vec<RespValue>> = value.as_array().unwrap().chunks(n).map(<[_]>::to_vec).collect();
    groups.sort_by_key(|group| format!("{group:?}"));
    RespValue::Array(groups.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_by_path_or_on_path_and_rejects_missing_ones() {
        let path = std::env::var_os("PATH");
        let sh = find_executable(Path::new("sh"), path.as_deref()).expect("sh is on PATH");
        assert!(sh.is_absolute());
        assert_eq!(find_executable(&sh, None), Some(sh.clone()));
        assert_eq!(find_executable(Path::new("sh"), None), None);
        assert_eq!(find_executable(Path::new("surely-not-a-program-asynq"), path.as_deref()), None);
        assert_eq!(find_executable(Path::new("/surely/not/a/program/asynq"), path.as_deref()), None);
    }

    #[test]
    fn the_install_hint_names_every_way_to_get_redis() {
        let hint = install_hint();
        for needle in ["cargo xtask test", "apt-get install redis-server", BIN_ENV] {
            assert!(hint.contains(needle), "{hint}");
        }
    }

    /// Starts a server whose first port pick is `taken`'s port.
    fn start_on_taken_port(taken: &RedisServer) -> RedisServer {
        let picks = std::cell::Cell::new(0);
        RedisServer::launch(
            || {
                picks.set(picks.get() + 1);
                if picks.get() == 1 { taken.port() } else { free_port() }
            },
            |port, dir| server_argv(port, dir, &[]),
        )
    }

    #[test]
    fn a_server_that_loses_the_race_for_its_port_moves_to_another() {
        let first = RedisServer::start();
        let second = start_on_taken_port(&first);
        assert_ne!(second.port(), first.port());
        assert_ne!(second.pid(), first.pid());
        assert!(second.command(&["PING"]).is_ok());
        assert!(first.command(&["PING"]).is_ok());
    }

    #[test]
    fn a_lost_race_is_noticed_behind_a_password_too() {
        let first = RedisServer::start_with(&["--requirepass", "x"]);
        let second = start_on_taken_port(&first);
        assert_ne!(second.port(), first.port());
        assert!(second.command(&["PING"]).is_ok());
    }

    #[test]
    fn the_default_command_line_disables_persistence_and_lets_extras_override() {
        let dir = Path::new("/tmp/x");
        let argv = server_argv(7001, dir, &["--appendonly".into(), "yes".into()]);
        let argv: Vec<_> = argv.iter().map(|arg| arg.to_str().unwrap()).collect();
        assert_eq!(&argv[..6], ["--port", "7001", "--bind", "127.0.0.1", "--save", ""]);
        assert!(argv.windows(2).any(|w| w == ["--logfile", "/tmp/x/redis.log"]));
        assert_eq!(&argv[argv.len() - 2..], ["--appendonly", "yes"]);
    }
}
