//! TLS (`rediss://`): a redis-server with a certificate made at test time, reached over TLS
//! only by the client, a server and the inspector; a certificate from a private authority,
//! verified against that authority (`TlsOptions::trust`) and refused without it; mutual TLS
//! (`TlsOptions::identity`); a Cluster over TLS (`rediss-cluster://`); a Sentinel set over TLS
//! (`rediss-sentinel://`), across a failover; and TLS settings that cannot be used, refused
//! before connecting.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{Clock, SystemClock};
use asynq_redis::{ConnectError, RedisBroker, RedisConfig, RedisTarget, TlsOptions};
use asynq_server::{Config, Server};
use asynq_tests::{CertificateAuthority, Recorder, RedisCluster, RedisSentinel, RedisServer, wait_for};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Makes a self-signed certificate and its key for 127.0.0.1 in `dir` with `openssl`.
fn make_certificate(dir: &Path) -> (String, String) {
    let (cert, key) = (dir.join("redis.crt"), dir.join("redis.key"));
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl makes the test certificate");
    assert!(status.status.success(), "openssl: {}", String::from_utf8_lossy(&status.stderr));
    (cert.display().to_string(), key.display().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_server_and_inspector_work_over_tls() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = make_certificate(certs.path());
    let tls_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    // The plain port stays for the harness's readiness check; everything asynq does goes over TLS.
    let args = ["--tls-port", &tls_port, "--tls-cert-file", &cert, "--tls-key-file", &key];
    let redis =
        RedisServer::start_with(&[&args[..], &["--tls-ca-cert-file", &cert, "--tls-auth-clients", "no"]].concat());
    // The certificate is self-signed, so it cannot be verified: `#insecure` accepts it.
    let url = format!("rediss://127.0.0.1:{tls_port}/#insecure");
    let broker = RedisBroker::connect(&url).await.unwrap();
    let client = Client::new(broker.clone());
    for i in 0..10 {
        client.enqueue(&Task::new("job", i.to_string()), TaskOptions::new()).await.unwrap();
    }

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    let config = Config { concurrency: 2, task_check_interval: Duration::from_millis(20), ..Config::default() };
    let mut server = Server::new(RedisBroker::connect(&url).await.unwrap(), config).unwrap();
    server.start(rec.handler(clock, |_, _| async { Ok(()) })).unwrap();
    wait_for("every task to run", || async { rec.len() == 10 }).await;
    server.shutdown().await;

    assert_eq!(Inspector::new(broker).queue_info("default").await.unwrap().processed_total, 10);
    let clients = redis.command(&["CLIENT", "LIST"]).unwrap();
    assert!(clients.as_str().unwrap_or_default().contains(&format!("laddr=127.0.0.1:{tls_port}")), "{clients:?}");
}

async fn connect(port: u16, tls: TlsOptions) -> Result<RedisBroker, ConnectError> {
    let target = RedisTarget::from_url(&format!("rediss://127.0.0.1:{port}")).unwrap();
    RedisBroker::connect_with(RedisConfig { tls, response_timeout: Duration::from_secs(5), ..RedisConfig::new(target) })
        .await
}

/// Enqueues a task through `broker` and reads it back.
async fn round_trip(broker: RedisBroker) {
    let client = Client::new(broker.clone());
    client.enqueue(&Task::new("job", ""), TaskOptions::new()).await.unwrap();
    assert_eq!(Inspector::new(broker).queue_info("default").await.unwrap().pending, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_a_private_authority_is_verified_against_that_authority_only() {
    let ca = CertificateAuthority::new();
    let (_redis, port) = ca.redis(false);
    round_trip(connect(port, TlsOptions::new().trust(ca.pem("ca.crt"))).await.unwrap()).await;

    // The system's roots do not know the authority; another authority is not it.
    let unknown = connect(port, TlsOptions::new()).await.map(drop).expect_err("an unknown authority is refused");
    assert!(matches!(unknown, ConnectError::Connect { .. }), "{unknown:?}");
    let other = CertificateAuthority::new();
    let wrong = connect(port, TlsOptions::new().trust(other.pem("ca.crt"))).await.map(drop);
    assert!(wrong.is_err(), "a certificate signed by another authority is refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_presents_the_client_certificate() {
    let ca = CertificateAuthority::new();
    let (_redis, port) = ca.redis(true);
    let trusted = TlsOptions::new().trust(ca.pem("ca.crt"));
    let anonymous = connect(port, trusted.clone()).await.map(drop);
    assert!(anonymous.is_err(), "a server that authenticates clients refuses one without a certificate");
    let identified = trusted.identity(ca.pem("client.crt"), ca.pem("client.key"));
    round_trip(connect(port, identified).await.unwrap()).await;
}

#[tokio::test]
async fn tls_settings_that_cannot_be_used_are_refused_before_connecting() {
    // Nothing listens on port 1: each error must come from checking the settings.
    let not_pem = connect(1, TlsOptions::new().trust(b"not a certificate".to_vec())).await.map(drop).unwrap_err();
    assert!(matches!(&not_pem, ConnectError::Tls { reason } if reason.contains("root certificates")), "{not_pem:?}");
    let plain = RedisTarget::from_url("redis://127.0.0.1:1").unwrap();
    let cert = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_vec();
    let config = RedisConfig { tls: TlsOptions::new().trust(cert.clone()), ..RedisConfig::new(plain) };
    let err = RedisBroker::connect_with(config).await.map(drop).unwrap_err();
    assert!(matches!(&err, ConnectError::Tls { reason } if reason.contains("rediss://")), "{err:?}");
    let cluster = RedisTarget::from_url("redis-cluster://127.0.0.1:1").unwrap();
    let config = RedisConfig { tls: TlsOptions::new().trust(cert.clone()), ..RedisConfig::new(cluster) };
    let err = RedisBroker::connect_with(config).await.map(drop).unwrap_err();
    assert!(matches!(&err, ConnectError::Tls { reason } if reason.contains("rediss-cluster://")), "{err:?}");
    let sentinel = RedisTarget::from_url("redis-sentinel://127.0.0.1:1?master=m").unwrap();
    let config = RedisConfig { tls: TlsOptions::new().trust(cert), ..RedisConfig::new(sentinel) };
    let err = RedisBroker::connect_with(config).await.map(drop).unwrap_err();
    assert!(matches!(&err, ConnectError::Tls { reason } if reason.contains("rediss-sentinel://")), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_server_and_inspector_work_over_a_tls_cluster() {
    let ca = CertificateAuthority::new();
    let cluster = RedisCluster::start_tls(3, &ca);
    let target = RedisTarget::from_url(&format!("rediss-cluster://{}", cluster.tls_addrs().join(","))).unwrap();
    let config = RedisConfig { tls: TlsOptions::new().trust(ca.pem("ca.crt")), ..RedisConfig::new(target) };
    let broker = RedisBroker::connect_with(config.clone()).await.unwrap();
    // Queues whose keys live on different masters.
    let queues = ["critical", "default", "low"];
    let client = Client::new(broker.clone());
    for queue in queues {
        for i in 0..4 {
            client.enqueue(&Task::new("job", i.to_string()), TaskOptions::new().queue(queue)).await.unwrap();
        }
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    let config = Config {
        concurrency: 2,
        queues: queues.iter().map(|q| ((*q).to_owned(), 1)).collect(),
        task_check_interval: Duration::from_millis(20),
        ..Config::default()
    };
    let mut server =
        Server::new(RedisBroker::connect_with(config_for_server(&ca, &cluster)).await.unwrap(), config).unwrap();
    server.start(rec.handler(clock, |_, _| async { Ok(()) })).unwrap();
    wait_for("every task to run", || async { rec.len() == 12 }).await;
    server.shutdown().await;
    let inspector = Inspector::new(broker);
    for queue in queues {
        assert_eq!(inspector.queue_info(queue).await.unwrap().processed_total, 4, "{queue}");
    }
    // The nodes served it over TLS: each has clients on its TLS port.
    for (node, tls_addr) in cluster.nodes().iter().zip(cluster.tls_addrs()) {
        let clients = node.command(&["CLIENT", "LIST"]).unwrap();
        let text = clients.as_str().unwrap_or_default().to_owned();
        assert!(text.contains(&format!("laddr={tls_addr}")), "{}: {text}", node.addr());
    }
}

/// A second connection's configuration for the TLS cluster, as a separate process would make it.
fn config_for_server(ca: &CertificateAuthority, cluster: &RedisCluster) -> RedisConfig {
    let target = RedisTarget::from_url(&format!("rediss-cluster://{}", cluster.tls_addrs().join(","))).unwrap();
    RedisConfig { tls: TlsOptions::new().trust(ca.pem("ca.crt")), ..RedisConfig::new(target) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_server_follow_the_master_through_tls_sentinels() {
    let ca = CertificateAuthority::new();
    let mut set = RedisSentinel::start_tls("asynq-tls", &ca);
    let url = format!("rediss-sentinel://{}?master=asynq-tls", set.sentinel_tls_addr());
    let config = || RedisConfig {
        tls: TlsOptions::new().trust(ca.pem("ca.crt")),
        response_timeout: Duration::from_secs(5),
        ..RedisConfig::new(RedisTarget::from_url(&url).unwrap())
    };
    // Without the authority, the Sentinel's certificate is refused.
    let untrusted = RedisConfig { tls: TlsOptions::new(), ..config() };
    assert!(RedisBroker::connect_with(untrusted).await.is_err(), "an unknown authority is refused");

    let broker = RedisBroker::connect_with(config()).await.unwrap();
    let client = Client::new(broker.clone());
    client.enqueue(&Task::new("job", "before"), TaskOptions::new()).await.unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    let server_config = Config { task_check_interval: Duration::from_millis(20), ..Config::default() };
    let mut server = Server::new(RedisBroker::connect_with(config()).await.unwrap(), server_config).unwrap();
    server.start(rec.handler(clock, |_, _| async { Ok(()) })).unwrap();
    wait_for("the first task to run", || async { rec.len() == 1 }).await;
    assert_clients_use_tls_only(&set);

    wait_for("the replica to hold the first outcome", || async {
        set.replica().command(&["GET", "asynq:{default}:processed"]).ok().and_then(|n| n.as_str().map(str::to_owned))
            == Some("1".to_owned())
    })
    .await;
    tokio::task::block_in_place(|| {
        set.failover();
        set.rejoin_replica();
    });
    // As through plain Sentinels, a call may fail until they vouch for the new master.
    wait_for("an enqueue to reach the new master over TLS", || async {
        client.enqueue(&Task::new("job", "after"), TaskOptions::new()).await.is_ok()
    })
    .await;
    wait_for("the second task to run", || async { rec.len() == 2 }).await;
    server.shutdown().await;
    assert_eq!(Inspector::new(broker).queue_info("default").await.unwrap().processed_total, 2);
    assert_clients_use_tls_only(&set);
}

/// Our connections to the set's master use its TLS port: besides the Sentinel's own links and
/// replication, clients are on that port, and on the plain port there is only this check's.
fn assert_clients_use_tls_only(set: &RedisSentinel) {
    let clients = set.master().command(&["CLIENT", "LIST"]).unwrap();
    let lines: Vec<&str> = clients.as_str().unwrap_or_default().lines().collect();
    let ours = |line: &&&str| !line.contains("name=sentinel-") && !line.contains("cmd=replconf");
    let on_tls = format!("laddr={} ", set.master_addr());
    assert!(lines.iter().filter(ours).any(|line| line.contains(&on_tls)), "no client on the TLS port: {lines:#?}");
    let on_plain = format!("laddr={} ", set.master().addr());
    let plain: Vec<_> =
        lines.iter().filter(|line| line.contains(&on_plain) && !line.contains("cmd=client|list")).collect();
    assert!(plain.is_empty(), "clients on the plain port: {plain:#?}");
}
