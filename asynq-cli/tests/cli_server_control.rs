//! `asynq server quiet` and `asynq server stop`: the request is kept for each live server named
//! (or every one with `--all`) for its next heartbeat to read; an unknown ID is refused with exit
//! 3 and a hint, and writes nothing.

mod common;

use asynq_core::broker::ServerState;
use asynq_core::{ServerControl, ServerInfo, ServerRequest, ServerStatus, SystemClock};
use asynq_tests::{RedisServer, RespValue};
use common::{asynq_at, block_on, broker};
use std::collections::BTreeMap;
use std::time::Duration;

/// A server record with ID `id`, alive for an hour.
async fn heartbeat(server: &RedisServer, id: &str, pid: u32) {
    let info = ServerInfo {
        host: "worker-1".into(),
        pid,
        server_id: id.into(),
        concurrency: 10,
        queues: BTreeMap::from([("default".to_owned(), 1)]),
        strict_priority: false,
        status: ServerStatus::Active,
        started: asynq_core::Clock::now(&SystemClock),
        active_workers: 0,
    };
    broker(server).await.write_server_state(&info, &[], Duration::from_secs(3600)).await.expect("heartbeat");
}

/// The request kept for server `id`, taken as its heartbeat would.
fn taken(server: &RedisServer, id: &str) -> Option<ServerRequest> {
    block_on(async { broker(server).await.take_server_request(id).await.expect("take") })
}

fn keys(server: &RedisServer) -> i64 {
    match server.command(&["DBSIZE"]).unwrap() {
        RespValue::Integer(n) => n,
        other => panic!("DBSIZE replied {other:?}"),
    }
}

#[test]
fn quiet_and_stop_reach_the_servers_named() {
    let server = RedisServer::start();
    block_on(heartbeat(&server, "srv-a", 1));
    block_on(heartbeat(&server, "srv-b", 2));

    let listed = asynq_at(&server, &["server", "ls"]).ok();
    assert!(listed.line("srv-a").contains("worker-1"), "the table shows each server's ID: {}", listed.stdout);

    asynq_at(&server, &["server", "quiet", "srv-a"]).ok().shows(&["Sent quiet request to server srv-a"]);
    assert_eq!(taken(&server, "srv-a"), Some(ServerRequest::Quiet));
    assert_eq!(taken(&server, "srv-b"), None, "only the server named");

    let json = asynq_at(&server, &["server", "stop", "srv-b", "srv-a", "--json"]).ok().json();
    assert_eq!(
        json,
        serde_json::json!([{"server": "srv-b", "request": "stop"}, {"server": "srv-a", "request": "stop"}])
    );
    assert_eq!(taken(&server, "srv-a"), Some(ServerRequest::Stop));
    assert_eq!(taken(&server, "srv-b"), Some(ServerRequest::Stop));

    let json = asynq_at(&server, &["server", "quiet", "--all", "--json"]).ok().json();
    let mut servers: Vec<&str> = json.as_array().unwrap().iter().map(|r| r["server"].as_str().unwrap()).collect();
    servers.sort_unstable();
    assert_eq!(servers, ["srv-a", "srv-b"]);
    assert_eq!(taken(&server, "srv-a"), Some(ServerRequest::Quiet));
    assert_eq!(taken(&server, "srv-b"), Some(ServerRequest::Quiet));
}

#[test]
fn an_unknown_server_is_refused_and_nothing_is_written() {
    let server = RedisServer::start();
    block_on(heartbeat(&server, "srv-a", 1));
    let before = keys(&server);

    let unknown = asynq_at(&server, &["server", "stop", "no-such-server"]);
    assert_eq!(unknown.code, 3, "{unknown:#?}");
    assert!(
        unknown.stderr.contains("server not found") && unknown.stderr.contains("asynq server ls"),
        "{}",
        unknown.stderr
    );
    // One unknown ID among known ones: the others are sent, the exit code tells of the refusal.
    let mixed = asynq_at(&server, &["server", "quiet", "no-such-server", "srv-a", "--json"]);
    assert_eq!(mixed.code, 3, "{mixed:#?}");
    assert_eq!(mixed.json(), serde_json::json!([{"server": "srv-a", "request": "quiet"}]));
    assert_eq!(taken(&server, "srv-a"), Some(ServerRequest::Quiet));
    assert_eq!(keys(&server), before, "no key was written for the unknown server");

    let blank = asynq_at(&server, &["server", "quiet", ""]);
    assert_eq!(blank.code, 2, "{blank:#?}");
    for usage in [&["server", "quiet"][..], &["server", "stop", "--all", "srv-a"]] {
        let run = asynq_at(&server, usage);
        assert_eq!(run.code, 2, "{usage:?}: {run:#?}");
    }
    assert_eq!(keys(&server), before);

    let empty = RedisServer::start();
    asynq_at(&empty, &["server", "stop", "--all"]).ok().shows(&["No running servers"]);
    assert_eq!(asynq_at(&empty, &["server", "stop", "--all", "--json"]).ok().json(), serde_json::json!([]));
}
