//! Queues that appear while a server runs: a server serving the pattern `tenant:*` takes the
//! tasks of a tenant queue registered after it started within its refresh interval, leaves
//! queues the pattern does not match alone, shares its workers between a busy tenant and a
//! quiet one, and serves what a provider names as the provider's answer changes. On the memory
//! broker with tokio's paused time, and on a real redis-server for the registry count.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Inspect;
use asynq_redis::RedisBroker;
use asynq_server::{Config, QueueProvider, Server};
use asynq_tests::{Harness, Recorder, RedisServer, secs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A configuration serving the tenant pattern only, refreshed every second.
fn tenants(h: &Harness, concurrency: usize) -> Config {
    Config::builder().concurrency(concurrency).queue_pattern("tenant:*", 1).clock(h.clock.clone()).build().unwrap()
}

async fn enqueue(client: &Client, queue: &str, id: &str) {
    client.enqueue(&Task::new("job", id.to_owned()), TaskOptions::new().queue(queue).task_id(id)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_tenant_queue_registered_after_start_is_served_within_a_second() {
    let h = Harness::new();
    enqueue(&h.client, "tenant:a", "a1").await;
    enqueue(&h.client, "other", "o1").await;
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), tenants(&h, 2)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(2), "tenant:a's task ran", || async { rec.len() == 1 }).await;

    let registered = tokio::time::Instant::now();
    enqueue(&h.client, "tenant:b", "b1").await;
    h.eventually(secs(2), "tenant:b's task ran", || async { rec.len() == 2 }).await;
    assert!(registered.elapsed() <= Duration::from_millis(1_100), "took {:?}", registered.elapsed());
    server.shutdown().await;

    let ran: Vec<(String, String)> = rec.calls().into_iter().map(|c| (c.queue, c.id)).collect();
    assert_eq!(ran, [("tenant:a".to_owned(), "a1".to_owned()), ("tenant:b".to_owned(), "b1".to_owned())]);
    assert_eq!(h.queue("other").await.pending, 1, "a queue the pattern does not match is left alone");
}

#[tokio::test(start_paused = true)]
async fn a_quiet_tenant_is_not_starved_by_a_busy_one() {
    let h = Harness::new();
    let backlog = 2_000;
    for n in 0..backlog {
        enqueue(&h.client, "tenant:busy", &format!("busy-{n}")).await;
    }
    let rec = Recorder::default();
    // One task per fetch, so that each run is one draw between the tenants with work; each
    // task takes 10 ms, so the backlog would take 20 s alone.
    let config = Config { prefetch: Some(0), ..tenants(&h, 1) };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    let work = |_, _| async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(())
    };
    server.start(rec.handler(h.clock.clone(), work)).unwrap();
    h.eventually(secs(5), "the busy tenant's tasks run", || async { rec.len() >= 10 }).await;
    let enqueued = h.now();
    enqueue(&h.client, "tenant:quiet", "quiet-1").await;
    h.eventually(secs(30), "the quiet tenant's task ran", || async { rec.calls().iter().any(|c| c.id == "quiet-1") })
        .await;
    server.shutdown().await;

    let quiet = rec.calls().into_iter().find(|c| c.id == "quiet-1").unwrap();
    let waited = quiet.at.duration_since(enqueued).unwrap();
    // Found by the next refresh (within 1 s); from then on each fetch draws one of the two
    // tenants at even odds, so 20 busy runs in a row (0.2 s) would be a chance of 2^-20.
    assert!(waited <= Duration::from_millis(1_200), "the quiet tenant's task waited {waited:?}");
    assert!(h.queue("tenant:busy").await.pending > 1_000, "the busy tenant still had a backlog");
}

/// Names the queues it holds, which the test changes.
#[derive(Clone, Default)]
struct Tenants(Arc<Mutex<Vec<(QueueName, u32)>>>);

#[async_trait::async_trait]
impl QueueProvider for Tenants {
    async fn queues(&self) -> asynq_core::Result<Vec<(QueueName, u32)>> {
        Ok(self.0.lock().unwrap().clone())
    }
}

#[tokio::test(start_paused = true)]
async fn a_provider_s_queues_are_served_as_its_answer_changes() {
    let h = Harness::new();
    let provider = Tenants::default();
    provider.0.lock().unwrap().push((QueueName::from_static("acme"), 1));
    let config =
        Config::builder().concurrency(2).queue_provider(provider.clone()).clock(h.clock.clone()).build().unwrap();
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    enqueue(&h.client, "acme", "acme-1").await;
    enqueue(&h.client, "globex", "globex-1").await;
    h.eventually(secs(2), "acme's task ran", || async { rec.len() == 1 }).await;
    tokio::time::sleep(secs(3)).await;
    assert_eq!(rec.len(), 1, "globex is not served before the provider names it");

    provider.0.lock().unwrap().push((QueueName::from_static("globex"), 1));
    h.eventually(secs(2), "globex's task ran", || async { rec.len() == 2 }).await;
    provider.0.lock().unwrap().retain(|(queue, _)| queue != "acme");
    tokio::time::sleep(secs(2)).await;
    enqueue(&h.client, "acme", "acme-2").await;
    tokio::time::sleep(secs(3)).await;
    server.shutdown().await;
    assert_eq!(rec.len(), 2, "acme is no longer served once the provider stops naming it");
    assert_eq!(h.queue("acme").await.pending, 1);
}

#[test]
fn patterns_that_serve_everything_or_nothing_are_refused() {
    let refused = |pattern: &str, priority: u32| {
        let err = Config::builder().queue_pattern(pattern, priority).build().expect_err("refused");
        assert!(matches!(err, asynq_core::Error::InvalidArgument { .. }), "{pattern}: {err}");
    };
    refused("*", 1);
    refused("tenant", 1);
    refused("tenant:{*}", 1);
    refused("tenant:*", 0);
    let zero = Config::builder().queue_pattern("t:*", 1).queue_refresh_interval(Duration::ZERO).build();
    assert!(matches!(zero, Err(asynq_core::Error::InvalidArgument { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_on_redis_serves_a_tenant_queue_registered_by_another_client() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let config = Config::builder()
        .concurrency(2)
        .queue_pattern("tenant:*", 1)
        .queue_refresh_interval(Duration::from_millis(100))
        .build()
        .unwrap();
    let rec = Recorder::default();
    let mut server = Server::new(broker.clone(), config).unwrap();
    let clock: Arc<dyn asynq_core::Clock> = Arc::new(asynq_core::SystemClock);
    server.start(rec.handler(clock, |_, _| async { Ok(()) })).unwrap();
    for tenant in ["tenant:1", "tenant:2", "tenant:3"] {
        enqueue(&client, tenant, &format!("{tenant}-job")).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while rec.len() < 3 {
        assert!(tokio::time::Instant::now() < deadline, "only {} of 3 ran", rec.len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await;
    let mut queues: Vec<String> = rec.calls().into_iter().map(|c| c.queue).collect();
    queues.sort();
    assert_eq!(queues, ["tenant:1", "tenant:2", "tenant:3"]);
    let servers = broker.servers().await.unwrap();
    assert!(servers.is_empty(), "the server's records are gone after shutdown");
}
