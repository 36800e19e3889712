//! Following the master through Sentinel failovers.
//!
//! A connection made through Sentinel points at whichever server was master when it was made.
//! After a failover that server is a replica (writes fail with `READONLY`) or gone (IO errors),
//! and reconnecting to the same address does not help. [`SentinelMaster`] asks the Sentinels
//! again when a command fails that way and moves the connection to the master they name; a
//! command refused with `READONLY` did not run, so it is sent again to the new master. While a
//! failover is under way the Sentinels may still name the old master: the refused command then
//! waits for them to name another, within the response timeout.

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::SentinelClient;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisResult, ServerErrorKind, Value};
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The shortest time between two questions to the Sentinels while the master is unreachable,
/// so that a burst of failing commands asks once.
const MIN_RESOLVE_INTERVAL: Duration = Duration::from_millis(500);

/// How often a command a replica refused looks again for a new master while it waits.
const REFUSED_RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// A connection to the master the Sentinels name, moved to the new master after a failover.
pub(crate) struct SentinelMaster {
    sentinel: tokio::sync::Mutex<Resolver>,
    current: Mutex<Current>,
    config: ConnectionManagerConfig,
    /// How long a command a replica refused may wait for a new master: the response timeout.
    patience: Duration,
}

struct Resolver {
    client: SentinelClient,
    last_resolved: tokio::time::Instant,
}

#[derive(Clone)]
struct Current {
    /// Bumped on every move, so that concurrent failures move the connection once.
    generation: u64,
    client: redis::Client,
    conn: ConnectionManager,
}

impl SentinelMaster {
    /// Connects to the master `sentinel` names now; a command a replica refuses waits at most
    /// `patience` for a new master.
    pub(crate) async fn connect(
        mut sentinel: SentinelClient,
        config: ConnectionManagerConfig,
        patience: Duration,
    ) -> RedisResult<Self> {
        let client = sentinel.async_get_client().await?;
        let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
        Ok(Self {
            sentinel: tokio::sync::Mutex::new(Resolver {
                client: sentinel,
                last_resolved: tokio::time::Instant::now(),
            }),
            current: Mutex::new(Current { generation: 0, client, conn }),
            config,
            patience,
        })
    }

    fn current(&self) -> Current {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// A client for the current master (for the pub/sub connection).
    pub(crate) fn client(&self) -> redis::Client {
        self.current().client
    }

    /// The database the connection uses.
    pub(crate) fn db(&self) -> i64 {
        self.current().conn.get_db()
    }

    /// Runs `cmd` on the master, following it if it moved.
    pub(crate) async fn send(&self, cmd: &Cmd) -> RedisResult<Value> {
        self.on_master(|mut conn| async move { conn.req_packed_command(cmd).await }, is_read_only_reply).await
    }

    /// Runs `count` replies' worth of `pipeline` on the master, following it if it moved. On a
    /// replica every write of the pipeline is refused, so sending it again is safe.
    pub(crate) async fn send_pipeline(
        &self,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let run = |mut conn: ConnectionManager| async move { conn.req_packed_commands(pipeline, offset, count).await };
        self.on_master(run, |values: &Vec<Value>| values.iter().any(is_read_only_reply)).await
    }

    /// Runs a request on the current master's connection. A lost connection makes the next
    /// request look for the master; a request a replica refused (`refused` tells from the reply,
    /// redis-rs hands some server errors back as values) is sent again once the connection has
    /// moved, waiting for that at most the response timeout.
    async fn on_master<T, F, Fut>(&self, run: F, refused: fn(&T) -> bool) -> RedisResult<T>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let deadline = tokio::time::Instant::now() + self.patience;
        loop {
            let current = self.current();
            let result = run(current.conn).await;
            let refused_by_replica = match &result {
                Ok(reply) => refused(reply),
                Err(e) if is_read_only(e) => true,
                Err(e) if master_may_have_moved(e) => {
                    self.follow(current.generation).await;
                    false
                }
                Err(_) => false,
            };
            if !refused_by_replica || !self.await_new_master(current.generation, deadline).await {
                return result;
            }
        }
    }

    /// Follows the master until the connection points at another server than in `generation`
    /// (true), or until `deadline` (false).
    async fn await_new_master(&self, generation: u64, deadline: tokio::time::Instant) -> bool {
        loop {
            if self.follow(generation).await {
                return true;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            tokio::time::sleep(REFUSED_RETRY_INTERVAL.min(left)).await;
        }
    }

    /// Asks the Sentinels for the master and moves the connection there if it is elsewhere;
    /// true when the connection now points at another server than in `generation`.
    async fn follow(&self, generation: u64) -> bool {
        let mut resolver = self.sentinel.lock().await;
        if self.current().generation != generation {
            return true;
        }
        if resolver.last_resolved.elapsed() < MIN_RESOLVE_INTERVAL {
            return false;
        }
        resolver.last_resolved = tokio::time::Instant::now();
        let client = match resolver.client.async_get_client().await {
            Ok(client) => client,
            Err(e) => {
                tracing::debug!(error = %e, "cannot ask the Sentinels for the master");
                return false;
            }
        };
        if client.get_connection_info().addr() == self.current().client.get_connection_info().addr() {
            return false;
        }
        let conn = match ConnectionManager::new_with_config(client.clone(), self.config.clone()).await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(master = %client.get_connection_info().addr(), error = %e, "cannot connect to the new master");
                return false;
            }
        };
        tracing::warn!(master = %client.get_connection_info().addr(), "the Redis master moved; following it");
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        *current = Current { generation: current.generation + 1, client, conn };
        true
    }
}

/// A reply refusing a write because the server is a replica (redis-rs hands server errors back
/// as values; `query_async` turns them into errors later).
fn is_read_only_reply(value: &Value) -> bool {
    matches!(value, Value::ServerError(e) if e.kind() == Some(ServerErrorKind::ReadOnly))
}

fn is_read_only(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly)
}

/// Errors after which the master may be another server: a refused write, or a lost connection.
fn master_may_have_moved(e: &RedisError) -> bool {
    is_read_only(e) || e.is_io_error() || e.is_connection_refusal() || e.is_connection_dropped() || e.is_timeout()
}
