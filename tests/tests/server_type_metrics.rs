//! Per task type metrics: a server counts the attempts of each task type it runs and adds them
//! to the broker's record, which the inspector reads back per queue and type; on the memory
//! broker in paused time (also the periodic write, before shutdown) and on a real redis-server.

use asynq_client::{Client, Inspector, MetricsResolution, Task, TaskOptions, TypeMetricsReport};
use asynq_core::{Broker, Clock, SystemClock};
use asynq_redis::RedisBroker;
use asynq_server::{Config, HandlerError, Server, TASK_METRICS_FLUSH_INTERVAL, handler_fn};
use asynq_tests::{Harness, RedisServer, RespValue, secs};
use std::sync::Arc;
use std::time::Duration;

/// Runs three `email:send` tasks that succeed and two `image:resize` tasks that fail for good
/// (each after 40 ms), until all five have settled.
async fn run_two_types(broker: impl Broker + Clone, client: &Client, config: Config) -> Server {
    let inspector = Inspector::new(broker.clone());
    let mut server = Server::new(broker, Config { concurrency: 2, ..config }).unwrap();
    server
        .start(handler_fn(|_ctx, task: Task| async move {
            if task.type_name() == "image:resize" {
                tokio::time::sleep(Duration::from_millis(40)).await;
                return Err(HandlerError::skip_retry("corrupt image"));
            }
            Ok(())
        }))
        .unwrap();
    for i in 0..3 {
        client.enqueue(&Task::new("email:send", format!("{i}")), TaskOptions::new()).await.unwrap();
    }
    for i in 0..2 {
        client.enqueue(&Task::new("image:resize", format!("{i}")), TaskOptions::new().max_retry(0)).await.unwrap();
    }
    let give_up = tokio::time::Instant::now() + secs(20);
    loop {
        let info = inspector.queue_info("default").await.unwrap();
        if info.pending == 0 && info.active == 0 && info.archived == 2 {
            break;
        }
        assert!(tokio::time::Instant::now() < give_up, "the tasks did not settle: {info:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server
}

/// Checks the report holds exactly the five attempts, by type.
fn assert_two_types(report: &TypeMetricsReport) {
    assert_eq!(report.types.len(), 2, "{report:?}");
    let email = &report.types[0];
    assert_eq!((email.queue.as_str(), email.type_name.as_str()), ("default", "email:send"));
    assert_eq!((email.total.runs, email.total.failed), (3, 0));
    let image = &report.types[1];
    assert_eq!(image.type_name, "image:resize");
    assert_eq!((image.total.runs, image.total.failed), (2, 2));
    assert!(image.total.total_ms >= 80 && image.total.max_ms >= 40, "{:?}", image.total);
    let per_bucket: u64 = image.points.iter().map(|p| p.runs).sum();
    assert_eq!(per_bucket, 2, "the points add up to the total");
    assert_eq!(image.points.len(), report.buckets.len());
}

#[tokio::test(start_paused = true)]
async fn a_server_records_runs_failures_and_run_time_per_type_on_memory() {
    let h = Harness::new();
    let mut server = run_two_types(h.broker.clone(), &h.client, h.config("default", 2)).await;
    let inspector = Inspector::new(h.broker.clone());

    // Written by the periodic flush, while the server runs.
    tokio::time::sleep(TASK_METRICS_FLUSH_INTERVAL + secs(1)).await;
    let report = inspector.type_metrics(MetricsResolution::Minute, 60, h.now()).await.unwrap();
    assert_two_types(&report);
    assert_eq!(report.buckets.len(), 60);
    let hours = inspector.type_metrics(MetricsResolution::Hour, 24, h.now()).await.unwrap();
    assert_two_types(&hours);

    server.shutdown().await;
    let after = inspector.type_metrics(MetricsResolution::Minute, 60, h.now()).await.unwrap();
    assert_eq!(after, report, "nothing is counted twice at shutdown");

    let off = Config { task_metrics: false, ..h.config("other", 1) };
    let mut quiet = Server::new(h.broker.clone(), off).unwrap();
    quiet.start(handler_fn(|_ctx, _task| async { Ok(()) })).unwrap();
    h.client.enqueue(&Task::new("email:send", "x"), TaskOptions::new().queue("other")).await.unwrap();
    h.eventually(secs(10), "the task ran", || async { h.queue("other").await.pending == 0 }).await;
    quiet.shutdown().await;
    let still = inspector.type_metrics(MetricsResolution::Minute, 60, h.now()).await.unwrap();
    assert_eq!(still.types.len(), 2, "a server with task metrics off records none");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_records_runs_failures_and_run_time_per_type_on_redis() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let config = Config { queues: [("default".to_owned(), 1)].into(), ..Config::default() };
    let mut server = run_two_types(broker.clone(), &client, config).await;
    // Shutdown writes what the last interval counted.
    server.shutdown().await;
    let inspector = Inspector::new(broker);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let report = inspector.type_metrics(MetricsResolution::Minute, 60, clock.now()).await.unwrap();
    assert_two_types(&report);
    let hours = inspector.type_metrics(MetricsResolution::Hour, 24, clock.now()).await.unwrap();
    assert_two_types(&hours);

    // The buckets are our keys in the queue's slot, each expiring: minutes after 2 h, hours after 25 h.
    let keys = match redis.command(&["KEYS", "asynq:{default}:metrics:*"]).unwrap() {
        RespValue::Array(keys) => keys,
        other => panic!("{other:?}"),
    };
    assert!(keys.len() >= 2, "a minute and an hour bucket: {keys:?}");
    for key in keys {
        let RespValue::Bulk(key) = key else { panic!("{key:?}") };
        let key = String::from_utf8(key).unwrap();
        let RespValue::Integer(ttl) = redis.command(&["TTL", key.as_str()]).unwrap() else { panic!("a TTL") };
        let kept = if key.contains(":minute:") { 2 * 3600 } else { 25 * 3600 };
        assert!(ttl > kept - 60 && ttl <= kept, "{key} expires in {ttl} s");
    }
}
