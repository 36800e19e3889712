//! `asynq` on a Redis Cluster and behind Sentinel: `--cluster --cluster_addrs` (or a
//! `redis-cluster://` URL) reach a Cluster, and `queue ls` shows each queue's hash slot and the
//! nodes serving it; `--sentinel_addrs --master` reach the master the Sentinels name; and
//! `--tls_ca_cert`, `--tls_cert` and `--tls_key` reach a TLS server, Cluster or Sentinel set
//! with a private authority.

mod common;

use asynq_tests::{CertificateAuthority, RedisCluster, RedisSentinel};
use common::asynq;

#[test]
fn tls_flags_reach_a_cluster_over_tls() {
    let ca = CertificateAuthority::new();
    let cluster = RedisCluster::start_tls(3, &ca);
    let (addrs, ca_cert) = (cluster.tls_addrs().join(","), ca.path("ca.crt"));
    let enqueued = asynq(&[
        "--cluster",
        "--cluster_addrs",
        &addrs,
        "--tls_ca_cert",
        &ca_cert,
        "task",
        "enqueue",
        "-t",
        "t",
        "-l",
        "p",
    ])
    .ok();
    assert!(enqueued.stdout.contains("default"), "{enqueued:#?}");
    let queues =
        asynq(&["--cluster", "--cluster_addrs", &addrs, "--tls_ca_cert", &ca_cert, "queue", "ls", "--json"]).ok();
    assert!(queues.stdout.contains("\"default\""), "{queues:#?}");
    let untrusted = asynq(&["--cluster", "--cluster_addrs", &addrs, "--tls", "stats"]);
    assert_eq!(untrusted.code, 5, "the system roots do not know the authority: {untrusted:#?}");
}

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

#[test]
fn tls_flags_verify_a_private_authority_and_present_a_client_certificate() {
    let ca = CertificateAuthority::new();
    let (_redis, port) = ca.redis(true);
    let uri = format!("127.0.0.1:{port}");
    let (ca_cert, cert, key) = (ca.path("ca.crt"), ca.path("client.crt"), ca.path("client.key"));
    let identified = ["--tls_ca_cert", &ca_cert, "--tls_cert", &cert, "--tls_key", &key];
    let queues = asynq(&[&["-u", uri.as_str()][..], &identified, &["queue", "ls", "--json"]].concat()).ok();
    assert_eq!(queues.json(), serde_json::json!([]), "{queues:#?}");
    let without_identity = asynq(&["-u", &uri, "--tls-ca-cert", &ca_cert, "stats"]);
    assert_eq!(without_identity.code, 5, "the server asks for a client certificate: {without_identity:#?}");
    let unknown_authority = asynq(&["-u", &uri, "--tls", "stats"]);
    assert_eq!(unknown_authority.code, 5, "{unknown_authority:#?}");
    let missing = asynq(&["-u", &uri, "--tls_ca_cert", "/nonexistent/ca.pem", "stats"]);
    assert_eq!(missing.code, 2, "{missing:#?}");
    assert!(missing.stderr.contains("--tls-ca-cert"), "{}", missing.stderr);
}

#[test]
fn tls_flags_reach_the_master_through_tls_sentinels() {
    let ca = CertificateAuthority::new();
    let set = RedisSentinel::start_tls("tls-master", &ca);
    let (addr, ca_cert) = (set.sentinel_tls_addr(), ca.path("ca.crt"));
    let flags = ["--sentinel_addrs", addr.as_str(), "--master", "tls-master", "--tls_ca_cert", ca_cert.as_str()];
    asynq(&[&flags[..], &["task", "enqueue", "-t", "t", "-l", "p", "--id", "tls-1"]].concat()).ok();
    let json =
        asynq(&[&flags[..], &["task", "inspect", "-q", "default", "-i", "tls-1", "--json"]].concat()).ok().json();
    assert_eq!(json["state"], "pending", "{json}");
    let stored = set.master().command(&["HGET", "asynq:{default}:t:tls-1", "state"]).unwrap();
    assert_eq!(stored.as_str(), Some("pending"), "the task is on the master");
    let untrusted = asynq(&["--sentinel_addrs", addr.as_str(), "--master", "tls-master", "--tls", "stats"]);
    assert_eq!(untrusted.code, 5, "the system roots do not know the authority: {untrusted:#?}");
}
