//! Heartbeat records: servers with their workers, rewritten, cleared and expired; and the
//! health check.
//!
//! Go asynq judges a server alive by the score of its entry in the `asynq:servers` sorted set:
//! the broker's `now + ttl` in Unix seconds, compared with the broker's `now` in Unix seconds
//! when listing. Expiry therefore follows the broker's clock on Redis too, and needs no
//! capability.

use super::BrokerFactory;
use super::fixture::{Fixture, at, millis, secs};
use asynq_core::broker::WorkerBroker;
use asynq_core::broker::{Health, ServerState};
use asynq_core::{ServerInfo, ServerStatus, WorkerInfo};
use std::collections::BTreeMap;
use std::time::Duration;

/// The heartbeat TTL the cases use (Go's: twice the 5-second heartbeat).
const TTL: Duration = Duration::from_secs(10);

/// A server record for `host` and `pid`, with ID `<host>-<pid>`.
pub(crate) fn server(host: &str, pid: u32) -> ServerInfo {
    ServerInfo {
        host: host.into(),
        pid,
        server_id: format!("{host}-{pid}"),
        concurrency: 8,
        queues: BTreeMap::from([("critical".to_owned(), 6), ("default".to_owned(), 3)]),
        strict_priority: false,
        status: ServerStatus::Active,
        started: at(-3_600) + millis(123),
        active_workers: 0,
    }
}

/// A worker of `server` running task `task_id`.
pub(crate) fn worker(server: &ServerInfo, task_id: &str) -> WorkerInfo {
    WorkerInfo {
        host: server.host.clone(),
        pid: server.pid,
        server_id: server.server_id.clone(),
        task_id: task_id.into(),
        task_type: "email".into(),
        task_payload: format!("payload of {task_id}").into(),
        queue: "default".into(),
        started: at(-5) + millis(250),
        deadline: at(1_795),
    }
}

/// The servers alive now, sorted by server ID, each with its workers sorted by task ID: the
/// traits leave both orders open.
async fn alive<B: asynq_core::broker::Inspect>(broker: &B) -> Vec<(ServerInfo, Vec<WorkerInfo>)> {
    let mut servers = broker.servers().await.expect("servers");
    for (_, workers) in &mut servers {
        workers.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    }
    servers.sort_by(|a, b| a.0.server_id.cmp(&b.0.server_id));
    servers
}

/// A written server is listed, field for field, with the workers written with it.
pub async fn case_server_state_is_listed_with_its_workers<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    assert!(alive(&t.store).await.is_empty());
    let b = ServerInfo { active_workers: 2, ..server("b", 1) };
    let a = ServerInfo { strict_priority: true, status: ServerStatus::Stopped, ..server("a", 2) };
    let workers = [worker(&b, "t2"), worker(&b, "t1")];

    t.broker.write_server_state(&b, &workers, TTL).await.unwrap();
    t.broker.write_server_state(&a, &[], TTL).await.unwrap();

    let [w2, w1] = workers;
    assert_eq!(alive(&t.store).await, [(a, vec![]), (b, vec![w1, w2])]);
}

/// Writing a server again replaces its record and its whole worker list.
pub async fn case_server_state_rewrite_replaces_workers<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let first = ServerInfo { active_workers: 2, ..server("a", 1) };
    t.broker.write_server_state(&first, &[worker(&first, "t1"), worker(&first, "t2")], TTL).await.unwrap();
    t.advance(secs(5));

    let second = ServerInfo { active_workers: 1, status: ServerStatus::Stopped, ..first };
    t.broker.write_server_state(&second, &[worker(&second, "t3")], TTL).await.unwrap();

    let w3 = worker(&second, "t3");
    assert_eq!(alive(&t.store).await, [(second.clone(), vec![w3])]);
    t.broker.write_server_state(&second, &[], TTL).await.unwrap();
    assert_eq!(alive(&t.store).await, [(second, vec![])]);
}

/// Clearing a server removes it and its workers at once; clearing an unknown one is fine.
pub async fn case_cleared_server_is_not_listed<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let (a, b) = (server("a", 1), server("b", 1));
    t.broker.write_server_state(&a, &[worker(&a, "t1")], TTL).await.unwrap();
    t.broker.write_server_state(&b, &[worker(&b, "t2")], TTL).await.unwrap();

    t.broker.clear_server_state(&a).await.unwrap();
    t.broker.clear_server_state(&server("never", 9)).await.unwrap();

    let w2 = worker(&b, "t2");
    assert_eq!(alive(&t.store).await, [(b.clone(), vec![w2])]);
    t.broker.clear_server_state(&b).await.unwrap();
    assert!(alive(&t.store).await.is_empty());
}

/// A server not written again is listed up to and including its write + TTL, then no longer.
pub async fn case_server_state_expires_after_its_ttl<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let (a, b) = (server("a", 1), server("b", 1));
    t.broker.write_server_state(&a, &[worker(&a, "t1")], TTL).await.unwrap();
    t.advance(secs(5));
    t.broker.write_server_state(&b, &[], TTL).await.unwrap();

    t.set(at(10));
    assert_eq!(alive(&t.store).await.len(), 2);
    t.set(at(11));
    assert_eq!(alive(&t.store).await, [(b.clone(), vec![])]);
    t.set(at(15));
    assert_eq!(alive(&t.store).await, [(b, vec![])]);
    t.set(at(16));
    assert!(alive(&t.store).await.is_empty());
}

/// Liveness is decided in whole Unix seconds, as Go's sorted-set scores are: a server written
/// at 0.5 s with a 10-second TTL is still listed at 10.7 s (score 10, now 10) and gone at 11 s.
pub async fn case_server_liveness_is_judged_in_whole_seconds<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    let a = server("a", 1);
    t.set(at(0) + millis(500));
    t.broker.write_server_state(&a, &[], TTL).await.unwrap();

    t.set(at(10) + millis(700));
    assert_eq!(alive(&t.store).await, [(a, vec![])]);
    t.set(at(11));
    assert!(alive(&t.store).await.is_empty());
}

/// A reachable broker answers `ping`.
pub async fn case_ping_answers<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    t.broker.ping().await.expect("ping");
    t.plain("q", "a").await;
    t.broker.ping().await.expect("ping with data stored");
}
