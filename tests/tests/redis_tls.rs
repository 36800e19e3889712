//! TLS (`rediss://`): a redis-server with a certificate made at test time, reached over TLS
//! only by the client, a server and the inspector.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{Clock, SystemClock};
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisServer, wait_for};
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
