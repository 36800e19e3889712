//! `asynq` on a Redis Cluster and behind Sentinel: `--cluster --cluster_addrs` (or a
//! `redis-cluster://` URL) reach a Cluster, and `queue ls` shows each queue's hash slot and the
//! nodes serving it; `--sentinel_addrs --master` reach the master the Sentinels name.

mod common;

use asynq_tests::{RedisCluster, RedisSentinel};
use common::asynq;

#[test]
fn queue_ls_shows_key_slots_and_nodes_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    let addrs = cluster.addrs().join(",");
    let flags = ["--cluster", "--cluster_addrs", addrs.as_str()];
    for queue in ["critical", "default"] {
        asynq(&[&flags[..], &["task", "enqueue", "-t", "t", "-l", "p", "--queue", queue]].concat()).ok();
    }
    let ls = asynq(&[&flags[..], &["queue", "ls"]].concat()).ok();
    ls.shows(&["Queue", "Cluster KeySlot", "Cluster Nodes"]);
    assert!(cluster.addrs().iter().any(|a| ls.line("critical").contains(a.as_str())), "{}", ls.stdout);

    let url = format!("redis-cluster://{addrs}");
    let json = asynq(&["-u", &url, "queue", "ls", "--json"]).ok().json();
    let critical = &json[0];
    assert_eq!(critical["queue"], "critical");
    // CLUSTER KEYSLOT asynq:{critical}:pending: the slot of the hash tag "critical".
    assert_eq!(critical["slot"], 8090, "{json}");
    assert!(critical["nodes"][0]["addr"].as_str().is_some_and(|a| cluster.addrs().iter().any(|c| c == a)), "{json}");
    let stats = asynq(&[&flags[..], &["stats"]].concat()).ok();
    stats.shows(&["Redis Cluster Info", "OK"]);
}

#[test]
fn sentinel_flags_reach_the_master() {
    let sentinel = RedisSentinel::start("mymaster");
    let addr = sentinel.sentinel_addr();
    let flags = ["--sentinel_addrs", addr.as_str(), "--master", "mymaster"];
    asynq(&[&flags[..], &["task", "enqueue", "-t", "t", "-l", "p", "--id", "s-1"]].concat()).ok();
    let json = asynq(&["-u", &sentinel.master().addr(), "task", "inspect", "-q", "default", "-i", "s-1", "--json"])
        .ok()
        .json();
    assert_eq!(json["state"], "pending", "the task is on the master");
    let missing_master = asynq(&["--sentinel_addrs", addr.as_str(), "queue", "ls"]);
    assert_eq!(missing_master.code, 2, "{missing_master:#?}");
}
