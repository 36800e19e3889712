//! The Redis test harness starts private servers, clusters and sentinel sets on free loopback
//! ports, restarts them, and cleans up after itself; these tests prove it before the broker's
//! Redis tests rely on it.

use asynq_tests::{RedisCluster, RedisSentinel, RedisServer, RespValue};
use std::collections::BTreeSet;

fn bulk(text: &str) -> RespValue {
    RespValue::Bulk(text.as_bytes().to_vec())
}

#[test]
fn a_server_answers_on_a_private_port() {
    let server = RedisServer::start();
    assert_ne!(server.port(), 6379);
    assert_eq!(server.addr(), format!("127.0.0.1:{}", server.port()));
    assert_eq!(server.url(), format!("redis://127.0.0.1:{}", server.port()));

    assert!(server.command(&["SET", "greeting", "hello"]).unwrap().is_ok());
    assert_eq!(server.command(&["GET", "greeting"]).unwrap(), bulk("hello"));
    assert_eq!(server.command(&["GET", "missing"]).unwrap(), RespValue::Nil);
    assert_eq!(server.command(&["INCR", "n"]).unwrap(), RespValue::Integer(1));
    let err = server.command(&["INCR", "greeting"]).unwrap_err();
    assert!(err.starts_with("ERR"), "{err}");

    // The defaults: no persistence, files in the server's own directory.
    let config = server.command(&["CONFIG", "GET", "*"]).unwrap().to_map();
    assert_eq!(config["save"], "");
    assert_eq!(config["appendonly"], "no");
    assert_eq!(config["bind"], "127.0.0.1");
    assert_eq!(config["dir"], server.dir().canonicalize().unwrap().to_str().unwrap());
    assert!(server.log().contains("Ready to accept connections"), "{}", server.log());
}

#[test]
fn servers_get_their_own_ports_and_directories() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.dir(), b.dir());

    a.command(&["SET", "k", "a"]).unwrap();
    assert_eq!(b.command(&["GET", "k"]).unwrap(), RespValue::Nil);

    let dir = a.dir().to_owned();
    let pid = a.pid().unwrap();
    drop(a);
    assert!(!dir.exists(), "dropping a server deletes its directory");
    // Not "the port refuses connections": another test may already have taken it.
    if cfg!(target_os = "linux") {
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "dropping a server ends its process");
    }
    assert!(b.command(&["PING"]).is_ok());
}

#[test]
fn a_killed_server_restarts_on_its_port_with_its_data() {
    let mut server = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let port = server.port();
    server.command(&["SET", "kept", "yes"]).unwrap();
    let pid = server.pid().unwrap();

    server.kill();
    assert!(!server.is_running());
    assert_eq!(server.pid(), None);
    assert!(server.command(&["PING"]).is_err(), "a killed server does not answer");

    server.restart();
    assert!(server.is_running());
    assert_ne!(server.pid(), Some(pid));
    assert_eq!(server.port(), port);
    assert_eq!(server.command(&["GET", "kept"]).unwrap(), bulk("yes"), "the AOF is replayed");

    // Without persistence, a restart starts empty; restart() also kills a running server.
    let mut plain = RedisServer::start();
    plain.command(&["SET", "lost", "yes"]).unwrap();
    plain.restart();
    assert_eq!(plain.command(&["GET", "lost"]).unwrap(), RespValue::Nil);
    assert_eq!(plain.log().matches("Ready to accept connections").count(), 2, "the log spans restarts");
}

#[test]
fn extra_configuration_reaches_the_server() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let err = server.command(&["GET", "k"]).unwrap_err();
    assert!(err.starts_with("NOAUTH"), "{err}");

    let mut connection = server.connect().unwrap();
    assert!(connection.command(&["AUTH", "s3cret"]).unwrap().is_ok());
    assert!(connection.command(&["SET", "k", "v"]).unwrap().is_ok());
    assert_eq!(connection.command(&["GET", "k"]).unwrap(), bulk("v"));
}

#[test]
fn a_server_that_cannot_start_panics_with_its_output() {
    let panic = std::panic::catch_unwind(|| RedisServer::start_with(&["--no-such-option", "1"])).unwrap_err();
    let message = panic.downcast_ref::<String>().expect("a formatted panic message");
    assert!(message.contains("exited during start-up"), "{message}");
    assert!(message.contains("no-such-option"), "the output of redis-server is included: {message}");
}

#[test]
fn a_cluster_of_three_serves_every_slot() {
    let cluster = RedisCluster::start(3);
    assert_eq!(cluster.nodes().len(), 3);
    assert_eq!(cluster.addrs().len(), 3);
    assert!(cluster.urls().iter().all(|url| url.starts_with("redis://127.0.0.1:")));
    assert!(cluster.nodes().iter().all(|node| node.port() != 6379));

    for node in cluster.nodes() {
        let info = node.command(&["CLUSTER", "INFO"]).unwrap();
        let info = info.as_str().unwrap();
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_known_nodes:3"), "{info}");
        assert!(info.contains("cluster_slots_assigned:16384"), "{info}");
    }

    // CLUSTER SLOTS: [first, last, [ip, port, id], ...] per range; together every slot, once.
    let slots = cluster.nodes()[1].command(&["CLUSTER", "SLOTS"]).unwrap();
    let mut covered = 0;
    let mut owners = BTreeSet::new();
    for range in slots.as_array().unwrap() {
        let range = range.as_array().unwrap();
        let (first, last) = (range[0].as_int().unwrap(), range[1].as_int().unwrap());
        covered += last - first + 1;
        let owner = range[2].as_array().unwrap()[1].as_int().unwrap();
        owners.insert(owner);
        let expected = cluster.node_for_slot(u16::try_from(first).unwrap()).port();
        assert_eq!(owner, i64::from(expected), "slots {first}..={last}");
    }
    assert_eq!(covered, 16384);
    assert_eq!(owners.len(), 3);

    // Keys land where the harness says, and other nodes redirect.
    for key in ["a", "b", "asynq:{default}:pending", "asynq:{critical}:pending"] {
        let slot = cluster.nodes()[0].command(&["CLUSTER", "KEYSLOT", key]).unwrap();
        assert_eq!(slot, RespValue::Integer(i64::from(RedisCluster::key_slot(key))), "{key}");
        let home = cluster.node_for_key(key);
        assert!(home.command(&["SET", key, "v"]).unwrap().is_ok(), "{key}");
        for other in cluster.nodes().iter().filter(|node| node.port() != home.port()) {
            let err = other.command(&["GET", key]).unwrap_err();
            assert!(err.starts_with("MOVED") && err.ends_with(&home.addr()), "{key}: {err}");
        }
    }
}

#[test]
fn a_sentinel_reports_its_master_and_fails_over_to_the_replica() {
    let mut set = RedisSentinel::start("mymaster");
    assert_eq!(set.master_name(), "mymaster");
    assert_eq!(set.sentinel_addr(), set.sentinel().addr());
    let (old_master, old_replica) = (set.master().addr(), set.replica().addr());
    assert_eq!(set.reported_master().unwrap(), old_master);

    // WAIT counts the writes of its own connection, so both go on one.
    let mut master = set.master().connect().unwrap();
    master.command(&["SET", "before", "failover"]).unwrap();
    assert_eq!(master.command(&["WAIT", "1", "5000"]).unwrap(), RespValue::Integer(1));
    assert_eq!(set.replica().command(&["GET", "before"]).unwrap(), bulk("failover"));
    let err = set.replica().command(&["SET", "k", "v"]).unwrap_err();
    assert!(err.starts_with("READONLY"), "{err}");

    set.failover();
    assert_eq!(set.master().addr(), old_replica);
    assert_eq!(set.replica().addr(), old_master);
    assert_eq!(set.reported_master().unwrap(), old_replica);
    let role = set.master().command(&["ROLE"]).unwrap();
    assert_eq!(role.as_array().unwrap()[0], bulk("master"));
    assert!(set.master().command(&["SET", "after", "failover"]).unwrap().is_ok());
    assert_eq!(set.master().command(&["GET", "before"]).unwrap(), bulk("failover"));

    // The old master follows the new one once rejoined, without waiting for Sentinel to do it.
    set.rejoin_replica();
    let mut master = set.master().connect().unwrap();
    master.command(&["SET", "rejoined", "yes"]).unwrap();
    assert_eq!(master.command(&["WAIT", "1", "5000"]).unwrap(), RespValue::Integer(1));
    assert_eq!(set.replica().command(&["GET", "rejoined"]).unwrap(), bulk("yes"));
    assert_eq!(set.replica().command(&["GET", "after"]).unwrap(), bulk("failover"));
    let err = set.replica().command(&["SET", "k", "v"]).unwrap_err();
    assert!(err.starts_with("READONLY"), "{err}");
}
