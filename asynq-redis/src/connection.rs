//! Where the broker connects: one Redis server, a Redis Cluster, or the master a set of
//! Sentinels points at; and the one shared, auto-reconnecting connection to it, which follows
//! the master through Sentinel failovers.

use crate::error::ConnectError;
use crate::keys::Namespace;
use crate::sentinel::SentinelMaster;
use crate::tls::TlsOptions;
use percent_encoding::percent_decode_str;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{Cmd, ConnectionAddr, FromRedisValue, Pipeline, RedisFuture, TlsMode, Value};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How to reach Redis.
///
/// Parse one from a URL with [`RedisTarget::from_url`]:
/// - `redis://[user:password@]host[:port][/db]`, or `rediss://…` for TLS: one server;
/// - `redis-cluster://[user:password@]host:port[,host:port…]`: a Redis Cluster, given one or
///   more seed nodes; `rediss-cluster://…[#insecure]` for TLS to every node;
/// - `redis-sentinel://[user:password@]host:port[,host:port…][/db]?master=<name>`: the master of
///   `<name>`, as the Sentinels report it (Go asynq's form); `rediss-sentinel://…[#insecure]`
///   for TLS to the Sentinels and to the master.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedisTarget {
    /// One server, by `redis://` or `rediss://` URL.
    Server {
        /// The URL.
        url: String,
    },
    /// A Redis Cluster, by the URLs of one or more of its nodes.
    Cluster {
        /// Seed node URLs.
        nodes: Vec<String>,
    },
    /// The master that Sentinels monitor under `master_name`.
    Sentinel {
        /// The name the Sentinels monitor the master under.
        master_name: String,
        /// The Sentinels' `host:port` addresses.
        sentinels: Vec<(String, u16)>,
        /// Username for the master, if ACLs are on.
        username: Option<String>,
        /// Password for the master.
        password: Option<String>,
        /// Database number on the master.
        db: i64,
        /// TLS to the Sentinels and to the master (`rediss-sentinel://`).
        tls: bool,
        /// With `tls`, certificates are not verified (`#insecure`).
        tls_insecure: bool,
    },
}

impl fmt::Debug for RedisTarget {
    // By hand, so that passwords never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisTarget::Server { url } => f.debug_struct("Server").field("url", &redact(url)).finish(),
            RedisTarget::Cluster { nodes } => {
                f.debug_struct("Cluster").field("nodes", &nodes.iter().map(|n| redact(n)).collect::<Vec<_>>()).finish()
            }
            RedisTarget::Sentinel { master_name, sentinels, username, password, db, tls, tls_insecure } => f
                .debug_struct("Sentinel")
                .field("master_name", master_name)
                .field("sentinels", sentinels)
                .field("username", username)
                .field("password", &password.as_ref().map(|_| "<redacted>"))
                .field("db", db)
                .field("tls", tls)
                .field("tls_insecure", tls_insecure)
                .finish(),
        }
    }
}

/// `url` with any password replaced, for messages and logs.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    match rest.split_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:<redacted>@{host}"),
            None => format!("{scheme}://{userinfo}@{host}"),
        },
        None => url.to_owned(),
    }
}

impl RedisTarget {
    /// Parses a `redis://`, `rediss://`, `redis-cluster://`, `rediss-cluster://`,
    /// `redis-sentinel://` or `rediss-sentinel://` URL.
    ///
    /// A `namespace` query parameter is refused: it is not a property of the server but of the
    /// broker, which [`RedisConfig::from_url`](crate::RedisConfig::from_url) reads it for.
    pub fn from_url(url: &str) -> Result<Self, ConnectError> {
        let invalid = |reason: &str| ConnectError::InvalidUrl { url: redact(url), reason: reason.to_owned() };
        if take_namespace(url)?.1.is_some() {
            return Err(invalid(
                "a namespace is the broker's setting: use RedisConfig::from_url or RedisBroker::connect",
            ));
        }
        let (scheme, rest) =
            url.split_once("://").ok_or_else(|| invalid("missing scheme, e.g. redis://127.0.0.1:6379"))?;
        match scheme {
            "redis" | "rediss" => {
                redis::Client::open(url).map_err(|e| invalid(&e.to_string()))?;
                Ok(RedisTarget::Server { url: url.to_owned() })
            }
            "redis-cluster" | "rediss-cluster" => {
                let node_scheme = if scheme == "rediss-cluster" { "rediss" } else { "redis" };
                let (rest, fragment) =
                    rest.split_once('#').map_or((rest, String::new()), |(r, f)| (r, format!("#{f}")));
                let (userinfo, hosts) = split_userinfo(rest);
                let nodes: Vec<String> = hosts
                    .split(',')
                    .filter(|h| !h.is_empty())
                    .map(|h| {
                        let userinfo = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
                        format!("{node_scheme}://{userinfo}{h}{fragment}")
                    })
                    .collect();
                if nodes.is_empty() {
                    return Err(invalid("a cluster URL needs at least one host:port"));
                }
                Ok(RedisTarget::Cluster { nodes })
            }
            "redis-sentinel" | "rediss-sentinel" => {
                let tls = scheme == "rediss-sentinel";
                let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
                let tls_insecure = match fragment {
                    "" => false,
                    "insecure" if tls => true,
                    _ => {
                        return Err(invalid(
                            "the only fragment a sentinel URL takes is #insecure, with rediss-sentinel://",
                        ));
                    }
                };
                let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
                let master_name = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("master="))
                    .filter(|m| !m.is_empty())
                    .ok_or_else(|| invalid("a sentinel URL needs ?master=<name>"))?
                    .to_owned();
                let (userinfo, hosts) = split_userinfo(rest);
                let (hosts, db) = match hosts.split_once('/') {
                    Some((hosts, db)) if !db.is_empty() => {
                        (hosts, db.parse().map_err(|_| invalid("the database must be a number"))?)
                    }
                    Some((hosts, _)) => (hosts, 0),
                    None => (hosts, 0),
                };
                let sentinels = hosts
                    .split(',')
                    .filter(|h| !h.is_empty())
                    .map(|h| {
                        let (host, port) = h.rsplit_once(':').unwrap_or((h, "26379"));
                        Ok((host.to_owned(), port.parse().map_err(|_| invalid("a port must be a number"))?))
                    })
                    .collect::<Result<Vec<_>, ConnectError>>()?;
                if sentinels.is_empty() {
                    return Err(invalid("a sentinel URL needs at least one host:port"));
                }
                // As in redis:// URLs, the credentials are percent-encoded.
                let decode = |text: &str| -> Result<String, ConnectError> {
                    percent_decode_str(text)
                        .decode_utf8()
                        .map(|text| text.into_owned())
                        .map_err(|_| invalid("the username and password must be percent-encoded UTF-8"))
                };
                let (username, password) = match userinfo {
                    None => (None, None),
                    Some(u) => match u.split_once(':') {
                        Some((user, pass)) => {
                            ((!user.is_empty()).then(|| decode(user)).transpose()?, Some(decode(pass)?))
                        }
                        None => (Some(decode(u)?), None),
                    },
                };
                Ok(RedisTarget::Sentinel { master_name, sentinels, username, password, db, tls, tls_insecure })
            }
            other => Err(invalid(&format!(
                "unknown scheme {other:?}; use redis://, rediss://, redis-cluster://, rediss-cluster://, \
                 redis-sentinel:// or rediss-sentinel://"
            ))),
        }
    }
}

/// `url` without its `namespace=<name>` query parameter, and the namespace that parameter names.
/// A URL of any scheme takes it: `redis://host/0?namespace=billing`,
/// `redis-cluster://h1:7000,h2:7000?namespace=billing#insecure`.
pub(crate) fn take_namespace(url: &str) -> Result<(String, Option<Namespace>), ConnectError> {
    let (rest, fragment) = url.split_once('#').map_or((url, None), |(rest, fragment)| (rest, Some(fragment)));
    let Some((base, query)) = rest.split_once('?') else { return Ok((url.to_owned(), None)) };
    let mut namespace = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.strip_prefix("namespace=") {
            Some(name) if namespace.is_none() => namespace = Some(Namespace::new(name)?),
            Some(_) => {
                return Err(ConnectError::InvalidUrl {
                    url: redact(url),
                    reason: "the namespace is given twice".to_owned(),
                });
            }
            None => kept.push(pair),
        }
    }
    let mut stripped = base.to_owned();
    if !kept.is_empty() {
        stripped.push('?');
        stripped.push_str(&kept.join("&"));
    }
    if let Some(fragment) = fragment {
        stripped.push('#');
        stripped.push_str(fragment);
    }
    Ok((stripped, namespace))
}

fn split_userinfo(rest: &str) -> (Option<&str>, &str) {
    match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, rest),
    }
}

/// The broker's connection: multiplexed (many concurrent requests share it), reconnecting by
/// itself, and cheap to clone.
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(Arc<SentinelMaster>),
}

/// Where the pub/sub connection goes: a fixed server, or the current master behind Sentinel.
pub(crate) enum PubSubSource {
    Fixed(Box<redis::Client>),
    Sentinel(Arc<SentinelMaster>),
}

impl PubSubSource {
    /// A client for the server to subscribe on now.
    pub(crate) fn client(&self) -> redis::Client {
        match self {
            PubSubSource::Fixed(client) => client.as_ref().clone(),
            PubSubSource::Sentinel(master) => master.client(),
        }
    }
}

impl Connection {
    /// Connects to `target`; also returns where the pub/sub connection goes (the server, the
    /// first seed node of a Cluster, or the current master behind Sentinel).
    pub(crate) async fn open(
        target: &RedisTarget,
        response_timeout: Duration,
        tls: &TlsOptions,
    ) -> Result<(Self, PubSubSource), ConnectError> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(response_timeout))
            .set_response_timeout(Some(response_timeout))
            .set_number_of_retries(2);
        let failed = |source: redis::RedisError| ConnectError::Connect { target: format!("{target:?}"), source };
        // rustls needs a process-wide crypto provider for `rediss://`; keep one the application
        // installed, else install ring's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tls_settings_need = |what: &str| ConnectError::Tls { reason: format!("TLS certificates are taken {what}") };
        match target {
            RedisTarget::Server { url } => {
                let client = client_for(url, tls).map_err(|e| e.or_connect(failed))?;
                let conn = ConnectionManager::new_with_config(client.clone(), config).await.map_err(failed)?;
                Ok((Connection::Single(conn), PubSubSource::Fixed(Box::new(client))))
            }
            RedisTarget::Cluster { nodes } => {
                let mut builder = redis::cluster::ClusterClientBuilder::new(nodes.iter().map(String::as_str))
                    .connection_timeout(response_timeout)
                    .response_timeout(response_timeout);
                if !tls.is_default() {
                    if !nodes[0].starts_with("rediss://") {
                        return Err(tls_settings_need("for a rediss-cluster:// URL only"));
                    }
                    builder = builder.certs(tls.certificates()?);
                }
                let client = builder.build().map_err(failed)?;
                let pubsub = client_for(&nodes[0], tls).map_err(|e| e.or_connect(failed))?;
                Ok((
                    Connection::Cluster(client.get_async_connection().await.map_err(failed)?),
                    PubSubSource::Fixed(Box::new(pubsub)),
                ))
            }
            RedisTarget::Sentinel { master_name, sentinels, username, password, db, tls: use_tls, tls_insecure } => {
                if !tls.is_default() && !use_tls {
                    return Err(tls_settings_need("through Sentinel for a rediss-sentinel:// URL only"));
                }
                let addrs = sentinels.iter().map(|(host, port)| {
                    let (host, port) = (host.clone(), *port);
                    if *use_tls {
                        ConnectionAddr::TcpTls { host, port, insecure: *tls_insecure, tls_params: None }
                    } else {
                        ConnectionAddr::Tcp(host, port)
                    }
                });
                let mut builder =
                    SentinelClientBuilder::new(addrs, master_name, SentinelServerType::Master).map_err(failed)?;
                builder = builder.set_client_to_redis_db(*db);
                if *use_tls {
                    let mode = if *tls_insecure { TlsMode::Insecure } else { TlsMode::Secure };
                    builder = builder.set_client_to_sentinel_tls_mode(mode).set_client_to_redis_tls_mode(mode);
                    if !tls.is_default() {
                        builder = builder
                            .set_client_to_sentinel_certificates(tls.certificates()?)
                            .set_client_to_redis_certificates(tls.certificates()?);
                    }
                }
                if let Some(user) = username {
                    builder = builder.set_client_to_redis_username(user);
                }
                if let Some(pass) = password {
                    builder = builder.set_client_to_redis_password(pass);
                }
                let sentinel = builder.build().map_err(failed)?;
                let master =
                    Arc::new(SentinelMaster::connect(sentinel, config, response_timeout).await.map_err(failed)?);
                Ok((Connection::Sentinel(master.clone()), PubSubSource::Sentinel(master)))
            }
        }
    }
}

/// Why a client could not be built: the TLS settings, or the client library.
enum ClientError {
    Tls(ConnectError),
    Redis(redis::RedisError),
}

impl ClientError {
    fn or_connect(self, failed: impl FnOnce(redis::RedisError) -> ConnectError) -> ConnectError {
        match self {
            ClientError::Tls(e) => e,
            ClientError::Redis(e) => failed(e),
        }
    }
}

/// A client for the server at `url`, with `tls`'s certificates when they are not the defaults
/// (which only a `rediss://` URL takes).
fn client_for(url: &str, tls: &TlsOptions) -> Result<redis::Client, ClientError> {
    if tls.is_default() {
        return redis::Client::open(url).map_err(ClientError::Redis);
    }
    if !url.starts_with("rediss://") {
        let reason = "TLS certificates are taken for a rediss:// URL only".to_owned();
        return Err(ClientError::Tls(ConnectError::Tls { reason }));
    }
    let certificates = tls.certificates().map_err(ClientError::Tls)?;
    redis::Client::build_with_tls(url, certificates)
        .map_err(|e| ClientError::Tls(ConnectError::Tls { reason: e.to_string() }))
}

impl Connection {
    /// Runs `cmd` on every master (the one server, or each master of a Cluster) and returns each
    /// master's reply with its address (empty for a single server).
    pub(crate) async fn on_every_master(&mut self, cmd: Cmd) -> redis::RedisResult<Vec<(String, Value)>> {
        match self {
            Connection::Single(_) | Connection::Sentinel(_) => Ok(vec![(String::new(), cmd.query_async(self).await?)]),
            Connection::Cluster(c) => {
                let routing = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                match c.route_command(cmd, routing).await? {
                    Value::Map(replies) => Ok(replies
                        .into_iter()
                        .map(|(node, reply)| (String::from_redis_value(node).unwrap_or_default(), reply))
                        .collect()),
                    reply => Ok(vec![(String::new(), reply)]),
                }
            }
        }
    }

    /// The value of the server setting `name` on every master (`CONFIG GET`), one per master
    /// that answers it. Fails where `CONFIG` is refused (some managed services).
    pub(crate) async fn config_get(&mut self, name: &str) -> redis::RedisResult<Vec<String>> {
        let mut query = redis::cmd("CONFIG");
        query.arg("GET").arg(name);
        let replies = self.on_every_master(query).await?;
        Ok(replies.iter().flat_map(|(_, reply)| config_values(reply, name)).collect())
    }
}

/// The values of setting `name` in a `CONFIG GET` reply: `[name, value]` on RESP2, a map on
/// RESP3 (nested per node on a Cluster).
fn config_values(reply: &Value, name: &str) -> Vec<String> {
    let text = |v: &Value| String::from_redis_value_ref(v).ok();
    match reply {
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| {
                if text(k).as_deref() == Some(name) { text(v).into_iter().collect() } else { config_values(v, name) }
            })
            .collect(),
        Value::Array(items) => items
            .chunks(2)
            .filter(|pair| text(&pair[0]).as_deref() == Some(name))
            .filter_map(|pair| pair.get(1).and_then(text))
            .collect(),
        _ => Vec::new(),
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
            Connection::Sentinel(master) => Box::pin(master.send(cmd)),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Sentinel(master) => Box::pin(master.send_pipeline(pipeline, offset, count)),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
            Connection::Sentinel(master) => master.db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_parameter_comes_off_any_url() {
        let cases = [
            ("redis://h:6379/0", "redis://h:6379/0", None),
            ("redis://h:6379/0?namespace=billing", "redis://h:6379/0", Some("billing")),
            ("redis://h/0?protocol=resp3&namespace=b.2&x=1", "redis://h/0?protocol=resp3&x=1", Some("b.2")),
            (
                "rediss-cluster://h1:7000,h2:7000?namespace=n#insecure",
                "rediss-cluster://h1:7000,h2:7000#insecure",
                Some("n"),
            ),
            ("redis-sentinel://s:26379?master=m&namespace=n", "redis-sentinel://s:26379?master=m", Some("n")),
        ];
        for (url, stripped, namespace) in cases {
            let (rest, found) = take_namespace(url).unwrap();
            assert_eq!((rest.as_str(), found.as_ref().map(Namespace::as_str)), (stripped, namespace), "{url}");
        }
        assert!(matches!(take_namespace("redis://h?namespace=a:b"), Err(ConnectError::InvalidNamespace { .. })));
        assert!(matches!(take_namespace("redis://h?namespace="), Err(ConnectError::InvalidNamespace { .. })));
        assert!(matches!(take_namespace("redis://h?namespace=a&namespace=b"), Err(ConnectError::InvalidUrl { .. })));
        assert!(matches!(RedisTarget::from_url("redis://h?namespace=a"), Err(ConnectError::InvalidUrl { .. })));
    }

    #[test]
    fn config_get_replies_are_read_on_resp2_resp3_and_per_cluster_node() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let resp2 = Value::Array(vec![bulk("maxmemory-policy"), bulk("allkeys-lru")]);
        assert_eq!(config_values(&resp2, "maxmemory-policy"), ["allkeys-lru"]);
        let resp3 = Value::Map(vec![(bulk("hash-max-ziplist-value"), bulk("64"))]);
        assert_eq!(config_values(&resp3, "hash-max-ziplist-value"), ["64"]);
        let per_node = Value::Map(vec![(bulk("10.0.0.1:7000"), resp3.clone()), (bulk("10.0.0.2:7000"), resp3)]);
        assert_eq!(config_values(&per_node, "hash-max-ziplist-value"), ["64", "64"]);
        assert!(config_values(&resp2, "other").is_empty());
    }

    #[test]
    fn urls_parse_into_targets() {
        assert_eq!(
            RedisTarget::from_url("redis://:pw@10.0.0.1:6380/2").unwrap(),
            RedisTarget::Server { url: "redis://:pw@10.0.0.1:6380/2".into() }
        );
        assert_eq!(
            RedisTarget::from_url("redis-cluster://u:p@a:7000,b:7001").unwrap(),
            RedisTarget::Cluster { nodes: vec!["redis://u:p@a:7000".into(), "redis://u:p@b:7001".into()] }
        );
        assert_eq!(
            RedisTarget::from_url("rediss-cluster://a:7000,b:7001#insecure").unwrap(),
            RedisTarget::Cluster { nodes: vec!["rediss://a:7000#insecure".into(), "rediss://b:7001#insecure".into()] }
        );
        assert_eq!(
            RedisTarget::from_url("redis-sentinel://:pw@s1:26379,s2/3?master=mymaster").unwrap(),
            RedisTarget::Sentinel {
                master_name: "mymaster".into(),
                sentinels: vec![("s1".into(), 26379), ("s2".into(), 26379)],
                username: None,
                password: Some("pw".into()),
                db: 3,
                tls: false,
                tls_insecure: false,
            }
        );
        let RedisTarget::Sentinel { tls, tls_insecure, db, .. } =
            RedisTarget::from_url("rediss-sentinel://s1:26380/1?master=m#insecure").unwrap()
        else {
            panic!("a sentinel target")
        };
        assert_eq!((tls, tls_insecure, db), (true, true, 1));
        let RedisTarget::Sentinel { username, password, .. } =
            RedisTarget::from_url("redis-sentinel://us%40er:p%3Aw%2F@s1?master=m").unwrap()
        else {
            panic!("a sentinel target")
        };
        assert_eq!((username.as_deref(), password.as_deref()), (Some("us@er"), Some("p:w/")));
    }

    #[test]
    fn bad_urls_say_what_to_fix_without_leaking_passwords() {
        for (url, hint) in [
            ("localhost:6379", "missing scheme"),
            ("http://localhost", "unknown scheme"),
            ("redis-sentinel://s1:26379", "?master="),
            ("redis-cluster://", "at least one"),
            ("redis-sentinel://:secret@s1:x?master=m", "port"),
            ("redis-sentinel://s1?master=m#insecure", "#insecure"),
        ] {
            let err = RedisTarget::from_url(url).unwrap_err().to_string();
            assert!(err.contains(hint), "{url}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
        let debug = format!("{:?}", RedisTarget::from_url("redis://user:secret@h:1").unwrap());
        assert!(!debug.contains("secret"), "{debug}");
    }
}
