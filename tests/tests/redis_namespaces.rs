//! Two namespaces on one Redis, and on one Cluster, side by side: the same queue names, the same
//! task IDs and the same uniqueness locks in both, each namespace's servers running only its own
//! tasks, each Inspector seeing only its own queues and servers, a pause in one not pausing the
//! other; every key written under one of the two prefixes, with the queue's hash tag intact.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_redis::RedisBroker;
use asynq_redis::keys::Namespace;
use asynq_server::{Config, Server, TaskContext};
use asynq_tests::{RedisCluster, RedisServer, wait_for};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ALPHA: &str = "alpha";

/// What one namespace's server ran: `(queue, task ID, payload)`.
type Ran = Arc<Mutex<BTreeSet<(String, String, String)>>>;

/// Starts a server of `broker` on `default` and `only-alpha` whose handler records each task.
fn serve(broker: RedisBroker) -> (Server, Ran) {
    let ran = Ran::default();
    let record = ran.clone();
    let config = Config {
        concurrency: 4,
        queues: [("default".to_owned(), 1), ("only-alpha".to_owned(), 1)].into_iter().collect(),
        task_check_interval: Duration::from_millis(20),
        ..Config::default()
    };
    let mut server = Server::new(broker, config).unwrap();
    server
        .start(asynq_server::handler_fn(move |ctx: TaskContext, task: asynq_core::Task| {
            let payload = String::from_utf8_lossy(task.payload()).into_owned();
            record.lock().unwrap().insert((ctx.queue().to_owned(), ctx.task_id().to_owned(), payload));
            async { Ok(()) }
        }))
        .unwrap();
    (server, ran)
}

/// Runs the side-by-side scenario with brokers at `url` (no query) and returns every key name
/// Redis holds at the end, from every node.
async fn side_by_side(url: &str, all_keys: impl Fn() -> Vec<String>) {
    let separator = if url.contains('?') { '&' } else { '?' };
    let alpha = RedisBroker::connect(&format!("{url}{separator}namespace={ALPHA}")).await.unwrap();
    let go = RedisBroker::connect(url).await.unwrap();
    assert_eq!(alpha.namespace().as_str(), ALPHA);
    assert!(go.namespace().is_default());

    for (broker, name) in [(&alpha, ALPHA), (&go, "asynq")] {
        let client = Client::new(broker.clone());
        let same_id = TaskOptions::new().task_id("same-id");
        client.enqueue(&Task::new("job", name), same_id).await.expect("a task ID is the namespace's own");
        let unique = TaskOptions::new().task_id(format!("unique-{name}")).unique(Duration::from_secs(600));
        client.enqueue(&Task::new("once", "same payload"), unique).await.expect("a lock is the namespace's own");
    }
    Client::new(alpha.clone())
        .enqueue(&Task::new("job", ALPHA), TaskOptions::new().queue("only-alpha").task_id("lonely"))
        .await
        .unwrap();

    let (alpha_inspector, go_inspector) = (Inspector::new(alpha.clone()), Inspector::new(go.clone()));
    let names = |queues: Vec<asynq_core::QueueName>| queues.iter().map(|q| q.as_str().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(alpha_inspector.queues().await.unwrap()), ["default", "only-alpha"]);
    assert_eq!(names(go_inspector.queues().await.unwrap()), ["default"]);
    assert_eq!(alpha_inspector.queue_info("default").await.unwrap().pending, 2);
    assert_eq!(go_inspector.queue_info("default").await.unwrap().pending, 2);
    assert!(go_inspector.queue_info("only-alpha").await.is_err(), "alpha's queue is not the default namespace's");
    let info = alpha_inspector.backend_info().await.unwrap();
    assert_eq!(info.namespace.as_deref(), Some(ALPHA));

    // A pause in one namespace leaves the other's queue of the same name running.
    alpha_inspector.pause_queue("default").await.unwrap();
    assert!(alpha_inspector.queue_info("default").await.unwrap().paused);
    assert!(!go_inspector.queue_info("default").await.unwrap().paused);
    alpha_inspector.unpause_queue("default").await.unwrap();

    let (mut alpha_server, alpha_ran) = serve(alpha.clone());
    let (mut go_server, go_ran) = serve(go.clone());
    wait_for("each namespace's server runs its tasks", || {
        let done = alpha_ran.lock().unwrap().len() == 3 && go_ran.lock().unwrap().len() == 2;
        async move { done }
    })
    .await;
    let row = |queue: &str, id: &str, payload: &str| (queue.to_owned(), id.to_owned(), payload.to_owned());
    assert_eq!(
        *alpha_ran.lock().unwrap(),
        BTreeSet::from([
            row("default", "same-id", ALPHA),
            row("default", "unique-alpha", "same payload"),
            row("only-alpha", "lonely", ALPHA)
        ])
    );
    assert_eq!(
        *go_ran.lock().unwrap(),
        BTreeSet::from([row("default", "same-id", "asynq"), row("default", "unique-asynq", "same payload")])
    );
    let (alpha_servers, go_servers) = (alpha_inspector.servers().await.unwrap(), go_inspector.servers().await.unwrap());
    assert_eq!((alpha_servers.len(), go_servers.len()), (1, 1), "each namespace lists its own server only");
    assert_ne!(alpha_servers[0].server.server_id, go_servers[0].server.server_id);
    alpha_server.shutdown().await;
    go_server.shutdown().await;

    let keys = all_keys();
    assert!(keys.iter().any(|k| k.starts_with("alpha:{only-alpha}:")), "{keys:?}");
    for key in &keys {
        let in_alpha = key.starts_with("alpha:");
        assert!(in_alpha || key.starts_with("asynq:"), "{key} is in neither namespace");
        if let Some(rest) = key.strip_prefix(if in_alpha { "alpha:{" } else { "asynq:{" }) {
            assert!(rest.contains("}:"), "{key}: the queue's hash tag is intact");
        }
    }
    let alpha_keys = alpha.namespace().queue("default");
    let go_keys = Namespace::DEFAULT.queue("default");
    assert_eq!(
        RedisCluster::key_slot(alpha_keys.pending()),
        RedisCluster::key_slot(go_keys.pending()),
        "a queue's slot is its name's, whatever the namespace"
    );
}

fn key_names(server: &RedisServer) -> Vec<String> {
    let reply = server.command(&["KEYS", "*"]).unwrap();
    reply.as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_namespaces_share_one_redis_without_meeting() {
    let redis = RedisServer::start();
    side_by_side(&redis.url(), || key_names(&redis)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_namespaces_share_one_cluster_without_meeting() {
    let cluster = RedisCluster::start(3);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    side_by_side(&url, || cluster.nodes().iter().flat_map(key_names).collect()).await;
}
