//! Two of our servers on one Redis share one queue's rate limit: together they start no more
//! tasks a second than the limit allows, where two separate limits would allow twice as many.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::broker::Inspect;
use asynq_core::rate_limit::RateLimit;
use asynq_core::{Clock, QueueName, SystemClock};
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisServer};
use std::sync::Arc;
use std::time::Duration;

const TASKS: usize = 30;
const PER_SECOND: f64 = 20.0;
const BURST: u32 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_one_rate_limit() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let batch: Vec<_> = (0..TASKS).map(|i| (Task::new("job", i.to_string()), TaskOptions::new())).collect();
    assert!(client.enqueue_batch(&batch).await.iter().all(Result::is_ok));

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    let mut servers = Vec::new();
    for _ in 0..2 {
        // Each server has its own connection, as separate processes would.
        let own = RedisBroker::connect(&redis.url()).await.unwrap();
        let config = Config {
            concurrency: 10,
            task_check_interval: Duration::from_millis(20),
            rate_limits: [("default".to_owned(), RateLimit::new(PER_SECOND, BURST).unwrap())].into(),
            ..Config::default()
        };
        let mut server = Server::new(own, config).unwrap();
        server.start(rec.handler(clock.clone(), |_, _| async { Ok(()) })).unwrap();
        servers.push(server);
    }
    for _ in 0..250 {
        if broker.queue_info(&QueueName::from_static("default")).await.unwrap().processed_total as usize >= TASKS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for server in &mut servers {
        server.shutdown().await;
    }

    let mut starts: Vec<_> = rec.calls().into_iter().map(|c| c.at).collect();
    starts.sort();
    assert_eq!(starts.len(), TASKS, "every task ran once");
    // One shared bucket: 5 at once, the other 25 at 20 a second, about 1.25 s. Two separate
    // buckets would have run them all in about 0.5 s.
    let span = starts[TASKS - 1].duration_since(starts[0]).unwrap();
    assert!(span >= Duration::from_millis(1_000), "all {TASKS} tasks started within {span:?}");
    for (i, first) in starts.iter().enumerate() {
        let in_second =
            starts[i..].iter().take_while(|s| s.duration_since(*first).unwrap() < Duration::from_secs(1)).count();
        assert!(in_second <= PER_SECOND as usize + BURST as usize, "{in_second} tasks started within one second");
    }
    let info = broker.queue_info(&QueueName::from_static("default")).await.unwrap();
    assert_eq!((info.size, info.failed_total), (0, 0), "no task over the limit failed");
}
