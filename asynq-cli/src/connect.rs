//! From the connection flags to a Redis broker: the flags are composed into one URL (credentials
//! percent-encoded) that `asynq_redis::RedisConfig::from_url` parses, so the tool accepts exactly
//! what the library accepts.

use crate::cli::GlobalArgs;
use crate::error::{CliError, Failure};
use crate::output::errln;
use asynq_client::{Client, Inspector};
use asynq_core::ArchiveLimits;
use asynq_redis::{ConnectError, RedisBroker, RedisConfig, TlsOptions};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use std::sync::Arc;
use std::time::Duration;

/// The bytes escaped in a URL's user and password: all but RFC 3986's unreserved characters.
const USERINFO: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The forms `--uri` accepts, for error messages.
const EXPECTED_FORMS: &str = "expected host:port (e.g. 127.0.0.1:6379) or a URL: redis://[user:password@]host:port[/db], \
     rediss://... for TLS, redis-cluster://host:port[,host:port...] (rediss-cluster:// for TLS), or \
     redis-sentinel://host:port[,host:port...][/db]?master=<name> (rediss-sentinel:// for TLS)";

/// The URL the flags describe. Contains the password, if any: never print it unredacted.
pub(crate) fn target_url(args: &GlobalArgs) -> Result<String, CliError> {
    let userinfo = userinfo(args.username.as_deref(), args.password.as_deref());
    let tls = args.tls || args.tls_server.is_some() || args.tls_ca_cert.is_some() || args.tls_cert.is_some();
    let insecure = if tls && args.insecure { "#insecure" } else { "" };
    if (args.cluster || args.sentinel_addrs.is_some()) && args.tls_server.is_some() {
        return Err(CliError::usage(
            "--tls-server does not apply to a Cluster or Sentinel: each server's certificate is checked \
             against the address the Cluster or the Sentinels give; drop --tls-server",
        ));
    }
    let s = if tls { "s" } else { "" };
    if args.cluster {
        return Ok(format!("redis{s}-cluster://{userinfo}{}{insecure}", args.cluster_addrs));
    }
    if let Some(sentinels) = &args.sentinel_addrs {
        let master = utf8_percent_encode(args.master.as_deref().unwrap_or_default(), USERINFO);
        return Ok(format!("redis{s}-sentinel://{userinfo}{sentinels}/{}?master={master}{insecure}", args.db));
    }
    if args.uri.contains("://") {
        return Ok(args.uri.clone());
    }
    if let Some(server) = &args.tls_server {
        let host = args.uri.rsplit_once(':').map_or(args.uri.as_str(), |(host, _)| host);
        if server != host {
            return Err(CliError::usage(format!(
                "--tls-server {server:?} differs from the host of --uri ({host:?}); the certificate is \
                 checked against the host of --uri, so connect by that name (e.g. -u {server}:6379) \
                 or add --insecure"
            )));
        }
    }
    Ok(format!("redis{s}://{userinfo}{}/{}{insecure}", args.uri, args.db))
}

/// `user:password@`, `user@`, `:password@` or nothing, percent-encoded.
fn userinfo(username: Option<&str>, password: Option<&str>) -> String {
    let user = username.map(|u| utf8_percent_encode(u, USERINFO).to_string()).unwrap_or_default();
    match password.filter(|p| !p.is_empty()) {
        Some(p) => format!("{user}:{}@", utf8_percent_encode(p, USERINFO)),
        None if !user.is_empty() => format!("{user}@"),
        None => String::new(),
    }
}

/// Parses the flags into a broker's settings (and the URL they came from, for messages); a URL
/// the library refuses is a usage error. The namespace is `--namespace`'s, or the URL's.
pub(crate) fn config(args: &GlobalArgs) -> Result<(RedisConfig, String), CliError> {
    let url = target_url(args)?;
    let mut config = RedisConfig::from_url(&url).map_err(connect_error)?;
    if let Some(namespace) = &args.namespace {
        if !config.namespace.is_default() && config.namespace != *namespace {
            return Err(CliError::usage(format!(
                "--namespace {namespace} differs from the namespace {} in --uri; give one of them",
                config.namespace
            )));
        }
        config.namespace = namespace.clone();
    }
    config.tls = tls_options(args)?;
    config.archive_limits = archive_limits(args)?;
    Ok((config, url))
}

/// The archive limits `--archive-max-size` and `--archive-max-age` set, Go's where unset; limits
/// the broker would refuse are a usage error.
pub(crate) fn archive_limits(args: &GlobalArgs) -> Result<ArchiveLimits, CliError> {
    let go = ArchiveLimits::default();
    let max_age = match &args.archive_max_age {
        Some(text) => crate::duration::duration_flag("archive-max-age", text)?,
        None => go.max_age(),
    };
    ArchiveLimits::new(args.archive_max_size.unwrap_or(go.max_size()), max_age)
        .map_err(|e| CliError::usage(format!("invalid archive limits: {e}")))
}

/// What the tool uses to talk to Redis.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    /// Inspection and management.
    pub(crate) inspector: Inspector,
    /// Enqueueing (`task enqueue`).
    pub(crate) client: Client,
}

/// The TLS certificates the flags name, read from their files.
fn tls_options(args: &GlobalArgs) -> Result<TlsOptions, CliError> {
    let read = |path: &std::path::Path, flag: &str| {
        std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {flag} {}: {e}", path.display())))
    };
    let mut options = TlsOptions::new();
    if let Some(path) = &args.tls_ca_cert {
        options = options.trust(read(path, "--tls-ca-cert")?);
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        options = options.identity(read(cert, "--tls-cert")?, read(key, "--tls-key")?);
    }
    Ok(options)
}

/// Connects as the flags say.
pub(crate) async fn connect(args: &GlobalArgs) -> Result<Connection, CliError> {
    let (config, url) = config(args)?;
    connect_to(config, &url).await.map_err(|refused| refused.error)
}

/// A failed attempt to connect.
#[derive(Debug)]
struct Refused {
    /// What went wrong, classified.
    error: CliError,
    /// Redis did not answer (or refused the connection), so a later attempt may succeed.
    unreachable: bool,
}

/// One attempt to connect with `config`, which came from `url`.
async fn connect_to(config: RedisConfig, url: &str) -> Result<Connection, Refused> {
    let broker = RedisBroker::connect_with(config).await.map_err(|e| match refused_database(&e, url) {
        Some(error) => Refused { error, unreachable: false },
        None => {
            let unreachable = matches!(e, ConnectError::Connect { .. });
            Refused { error: connect_error(e), unreachable }
        }
    })?;
    let broker = Arc::new(broker);
    Ok(Connection { inspector: Inspector::from_shared(broker.clone()), client: Client::from_shared(broker) })
}

/// The first pause between two attempts of [`Reconnect::connect`]; it doubles after each
/// failure up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);

/// The longest pause between two attempts of [`Reconnect::connect`].
const RETRY_MAX: Duration = Duration::from_secs(5);

/// How [`connect_or_retry`] started.
#[derive(Debug)]
pub(crate) enum Start {
    /// Connected at once.
    Connected(Connection),
    /// Redis did not answer; [`Reconnect::connect`] keeps trying.
    Unreachable(Box<Reconnect>),
}

/// A connection still to be made, to a Redis that did not answer at start.
pub(crate) struct Reconnect {
    config: RedisConfig,
    /// Holds the password, if any: never shown.
    url: String,
    /// The last failure, already reported.
    last: CliError,
}

impl std::fmt::Debug for Reconnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconnect").field("config", &self.config).field("last", &self.last).finish_non_exhaustive()
    }
}

impl Reconnect {
    /// Why the first attempt failed.
    pub(crate) fn error(&self) -> &CliError {
        &self.last
    }

    /// Tries again until connected, pausing [`RETRY_FIRST`] after the first failure and twice
    /// as long after each next one, up to [`RETRY_MAX`]. A failure unlike the last one is said
    /// on stderr once (one line per streak of the same failure, not one per attempt), and so is
    /// the connection when it is made.
    pub(crate) async fn connect(self) -> Connection {
        let Self { config, url, mut last } = self;
        let mut pause = RETRY_FIRST;
        let mut failed = 1_u64;
        loop {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RETRY_MAX);
            match connect_to(config.clone(), &url).await {
                Ok(connection) => {
                    errln!("connected to Redis after {failed} failed attempts");
                    return connection;
                }
                Err(refused) => {
                    if refused.error.message != last.message {
                        errln!("warning: {}; still retrying", refused.error.message);
                    }
                    last = refused.error;
                    failed += 1;
                }
            }
        }
    }
}

/// Connects as the flags say; when Redis does not answer, gives what it takes to keep trying
/// rather than an error. Bad flags and URLs, and a Redis that answers but refuses (a database
/// it lacks, a version too old), are errors at once.
pub(crate) async fn connect_or_retry(args: &GlobalArgs) -> Result<Start, CliError> {
    let (config, url) = config(args)?;
    match connect_to(config.clone(), &url).await {
        Ok(connection) => Ok(Start::Connected(connection)),
        Err(Refused { error, unreachable: true }) => {
            Ok(Start::Unreachable(Box::new(Reconnect { config, url, last: error })))
        }
        Err(Refused { error, .. }) => Err(error),
    }
}

/// Redis's reply to a `SELECT` of a database it does not have.
const DB_OUT_OF_RANGE: &str = "DB index is out of range";

/// A connection that failed because Redis refused to select the database of `url` (a `--db`
/// beyond its `databases`), as a usage error naming the index; `None` for any other failure.
///
/// redis-rs has no error kind for a refused `SELECT`: it reports a response error whose
/// description says so and whose detail is Redis's reply, so those are what is matched.
fn refused_database(error: &ConnectError, url: &str) -> Option<CliError> {
    let ConnectError::Connect { source, .. } = error else { return None };
    let reply = source.detail().unwrap_or_default();
    if !reply.contains(DB_OUT_OF_RANGE) && !source.to_string().starts_with("Redis server refused to switch database") {
        return None;
    }
    let db = database_of(url).unwrap_or("?");
    let reply = if reply.is_empty() { "no reason given" } else { reply };
    Some(CliError::usage(format!("Redis refused to select database {db}: {reply}")).with_hint(
        "a Redis server has 16 databases, 0 to 15, unless `databases` in its redis.conf says otherwise; \
             pick one it has with --db (or the /db of a redis:// --uri)",
    ))
}

/// The database index ending the path of a `redis://` or `redis-sentinel://` URL: digits only,
/// so that no part of a password can show.
fn database_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let path = rest.split(['?', '#']).next()?;
    let (_, db) = path.rsplit_once('/')?;
    Some(db).filter(|db| !db.is_empty() && db.bytes().all(|b| b.is_ascii_digit()))
}

/// A connection failure, classified, with what to check. The library's messages redact passwords.
fn connect_error(error: ConnectError) -> CliError {
    match error {
        ConnectError::InvalidUrl { .. } => CliError::usage(error.to_string()).with_hint(EXPECTED_FORMS),
        ConnectError::Tls { .. } => CliError::usage(error.to_string()).with_hint(
            "--tls-ca-cert, --tls-cert and --tls-key take PEM files, for a TLS server, Cluster or Sentinel set",
        ),
        ConnectError::Unsupported { .. } => CliError::new(Failure::Connect, error.to_string()),
        ConnectError::InvalidNamespace { .. } => CliError::usage(error.to_string()),
        _ => CliError::new(Failure::Connect, error.to_string()).with_hint(format!(
            "check that Redis runs there and that --uri, --db, --username and --password are right; {EXPECTED_FORMS}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn url(argv: &[&str]) -> Result<String, CliError> {
        let mut full = vec!["asynq"];
        full.extend_from_slice(argv);
        full.push("stats");
        target_url(&Cli::parse_from(full).global)
    }

    #[test]
    fn flags_compose_a_url() {
        assert_eq!(url(&[]).unwrap(), "redis://127.0.0.1:6379/0");
        assert_eq!(url(&["-u", "h:7", "-n", "2", "-p", "p@ss:/w"]).unwrap(), "redis://:p%40ss%3A%2Fw@h:7/2");
        assert_eq!(url(&["-U", "bob", "-p", "x"]).unwrap(), "redis://bob:x@127.0.0.1:6379/0");
        assert_eq!(url(&["--tls", "--insecure"]).unwrap(), "rediss://127.0.0.1:6379/0#insecure");
        assert_eq!(url(&["--cluster", "--cluster_addrs", "a:1,b:2"]).unwrap(), "redis-cluster://a:1,b:2");
        assert_eq!(
            url(&["--cluster", "--cluster_addrs", "a:1", "--tls", "--insecure"]).unwrap(),
            "rediss-cluster://a:1#insecure"
        );
        assert!(url(&["--cluster", "--tls_server", "h"]).is_err());
        assert_eq!(
            url(&["--sentinel_addrs", "s:1,s:2", "--master", "mymaster", "-n", "1"]).unwrap(),
            "redis-sentinel://s:1,s:2/1?master=mymaster"
        );
        assert_eq!(
            url(&["--sentinel_addrs", "s:1", "--master", "m", "--tls", "--insecure"]).unwrap(),
            "rediss-sentinel://s:1/0?master=m#insecure"
        );
        assert!(url(&["--sentinel_addrs", "s:1", "--master", "m", "--tls_server", "h"]).is_err());
        assert_eq!(url(&["-u", "rediss://x:1/3"]).unwrap(), "rediss://x:1/3");
        assert!(url(&["--tls_server", "other", "-u", "host:1"]).is_err());
        assert_eq!(url(&["--tls_server", "host", "-u", "host:1"]).unwrap(), "rediss://host:1/0");
    }

    #[test]
    fn the_database_index_is_read_from_the_url() {
        assert_eq!(database_of("redis://:pw@h:1/99999#insecure"), Some("99999"));
        assert_eq!(database_of("redis-sentinel://s:1,s:2/3?master=m"), Some("3"));
        assert_eq!(database_of("redis://h:1"), None);
        assert_eq!(database_of("redis-cluster://a:1,b:2"), None);
        assert_eq!(database_of("redis://:se/cret@h:1"), None);
    }

    #[test]
    fn the_namespace_comes_from_the_flag_or_the_url() {
        let namespace_of = |argv: &[&str]| config(&Cli::parse_from(argv).global).map(|(c, _)| c.namespace.to_string());
        assert_eq!(namespace_of(&["asynq", "stats"]).unwrap(), "asynq");
        assert_eq!(namespace_of(&["asynq", "--namespace", "billing", "stats"]).unwrap(), "billing");
        assert_eq!(namespace_of(&["asynq", "-u", "redis://h:1/0?namespace=billing", "stats"]).unwrap(), "billing");
        let both = ["asynq", "-u", "redis://h:1/0?namespace=billing", "--namespace", "billing", "stats"];
        assert_eq!(namespace_of(&both).unwrap(), "billing");
        let conflict = ["asynq", "-u", "redis://h:1/0?namespace=billing", "--namespace", "orders", "stats"];
        assert_eq!(namespace_of(&conflict).unwrap_err().failure, Failure::Usage);
        let bad = Cli::try_parse_from(["asynq", "--namespace", "a:b", "stats"]).unwrap_err();
        assert!(bad.to_string().contains("invalid namespace"), "{bad}");
    }

    #[test]
    fn bad_uris_are_usage_errors_that_redact_the_password() {
        let args = Cli::parse_from(["asynq", "-u", "nohost:notaport", "-p", "hunter2", "stats"]).global;
        let err = config(&args).unwrap_err();
        assert_eq!(err.failure, Failure::Usage);
        let shown = err.to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("host:port"), "{shown}");
    }
}
