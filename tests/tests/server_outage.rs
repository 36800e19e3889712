//! The server rides out a broker outage: failed outcome writes are retried by the syncer, the
//! health check reports the outage, and processing resumes when the broker is back.

use asynq_client::{Task, TaskOptions};
use asynq_server::{Config, Server};
use asynq_tests::{FlakyBroker, Harness, Recorder, secs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(start_paused = true)]
async fn an_outcome_that_could_not_be_written_is_written_by_the_syncer() {
    let h = Harness::new();
    let flaky = FlakyBroker::new(h.broker.clone());
    let health = Arc::new(Mutex::new(Vec::<bool>::new()));
    let reports = health.clone();
    let config = Config {
        health_check: Some(Arc::new(move |result| reports.lock().unwrap().push(result.is_ok()))),
        health_check_interval: secs(1),
        ..h.config("default", 1)
    };
    let mut server = Server::new(flaky.clone(), config).unwrap();
    let down = flaky.clone();
    server
        .start(Recorder::default().handler(h.clock.clone(), move |_, _| {
            // The broker goes away while the handler runs, so the outcome write fails.
            down.go_down();
            async { Ok(()) }
        }))
        .unwrap();

    h.client.enqueue(&Task::new("job", ""), TaskOptions::new()).await.unwrap();
    h.eventually(secs(5), "the health check sees the outage", || async { health.lock().unwrap().contains(&false) })
        .await;
    assert_eq!(h.queue("default").await.active, 1, "the outcome is not written while the broker is down");

    flaky.come_back();
    h.eventually(secs(10), "the syncer writes the outcome", || async { h.queue("default").await.processed_total == 1 })
        .await;
    let q = h.queue("default").await;
    assert_eq!((q.active, q.size, q.failed_total), (0, 0, 0));
    assert_eq!(health.lock().unwrap().last(), Some(&true));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn processing_resumes_after_an_outage() {
    let h = Harness::new();
    let flaky = FlakyBroker::new(h.broker.clone());
    let rec = Recorder::default();
    let mut server = Server::new(flaky.clone(), h.config("default", 2)).unwrap();
    flaky.go_down();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.client.enqueue(&Task::new("job", ""), TaskOptions::new()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(rec.is_empty());

    flaky.come_back();
    h.eventually(secs(5), "the task runs", || async { h.queue("default").await.processed_total == 1 }).await;
    server.shutdown().await;
}
