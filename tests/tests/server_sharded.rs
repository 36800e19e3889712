//! Sharded queues served: a server configured with a logical queue runs the tasks of every shard
//! once, picks up a declaration made while it runs within its refresh interval, weighs the
//! logical queue as a whole against its other queues, and a configuration that names a sharded
//! queue wrongly is refused. On the memory broker with tokio's paused time.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::broker::{Capabilities, ShardedQueues};
use asynq_core::{Error, QueueName};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, Recorder, secs};
use std::collections::BTreeMap;
use std::sync::Arc;

fn shards(h: &Harness) -> Arc<dyn ShardedQueues> {
    Arc::new(h.broker.clone()).as_sharded_queues().unwrap()
}

fn sharding_client(h: &Harness) -> Client {
    Client::new(h.broker.clone()).with_clock(h.clock.clone()).with_sharded_queues(shards(h))
}

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

#[tokio::test(start_paused = true)]
async fn every_shard_is_served_and_each_task_runs_once() {
    let h = Harness::new();
    let orders = shards(&h).declare_sharded_queue(&q("orders"), 4).await.unwrap();
    let client = sharding_client(&h);
    for n in 0..40 {
        client.enqueue(&Task::new("job", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    let rec = Recorder::default();
    let config = Config::builder().concurrency(4).sharded_queue("orders", 1).clock(h.clock.clone()).build().unwrap();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(5), "every task ran", || async { rec.len() == 40 }).await;
    server.shutdown().await;

    let mut per_shard: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids: Vec<String> = Vec::new();
    for call in rec.calls() {
        *per_shard.entry(call.queue).or_default() += 1;
        ids.push(call.id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 40, "each task ran once");
    let expected: BTreeMap<String, usize> = orders.shards().iter().map(|s| (s.to_string(), 10)).collect();
    assert_eq!(per_shard, expected);
}

/// A producer that does not place tasks on shards (Go's, or a client without the declarations)
/// puts them in the plain queue of the logical name: a sharded server runs them too, and the
/// logical queue's info counts them.
#[tokio::test(start_paused = true)]
async fn tasks_a_producer_left_in_the_plain_queue_of_the_logical_name_run() {
    let h = Harness::new();
    shards(&h).declare_sharded_queue(&q("orders"), 2).await.unwrap();
    for n in 0..3 {
        h.client.enqueue(&Task::new("job", format!("go {n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    sharding_client(&h).enqueue(&Task::new("job", "placed"), TaskOptions::new().queue("orders")).await.unwrap();
    let inspector = asynq_client::Inspector::new(h.broker.clone());
    assert_eq!(inspector.queue_info("orders").await.unwrap().pending, 4);

    let rec = Recorder::default();
    let config = Config::builder().concurrency(2).sharded_queue("orders", 1).clock(h.clock.clone()).build().unwrap();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(5), "every task ran", || async { rec.len() == 4 }).await;
    server.shutdown().await;
    let plain = rec.calls().iter().filter(|c| c.queue == "orders").count();
    assert_eq!(plain, 3, "the plain queue's tasks ran where they were");
}

#[tokio::test(start_paused = true)]
async fn a_declaration_made_while_the_server_runs_is_served_within_its_refresh() {
    let h = Harness::new();
    let rec = Recorder::default();
    let config = Config::builder()
        .concurrency(2)
        .queue("plain", 1)
        .sharded_queue("late", 1)
        .clock(h.clock.clone())
        .build()
        .unwrap();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.client.enqueue(&Task::new("job", "p"), TaskOptions::new().queue("plain")).await.unwrap();
    h.eventually(secs(2), "the plain queue is served", || async { rec.len() == 1 }).await;

    shards(&h).declare_sharded_queue(&q("late"), 3).await.unwrap();
    let client = sharding_client(&h);
    for n in 0..6 {
        client.enqueue(&Task::new("job", format!("{n}")), TaskOptions::new().queue("late")).await.unwrap();
    }
    h.eventually(secs(3), "the late shards' tasks ran", || async { rec.len() == 7 }).await;
    server.shutdown().await;
    let shard_runs = rec.calls().iter().filter(|c| c.queue.starts_with("late~")).count();
    assert_eq!(shard_runs, 6);
}

#[tokio::test(start_paused = true)]
async fn a_logical_queue_weighs_its_priority_as_a_whole() {
    let h = Harness::new();
    shards(&h).declare_sharded_queue(&q("orders"), 4).await.unwrap();
    let client = sharding_client(&h);
    let backlog = 400;
    for n in 0..backlog {
        client.enqueue(&Task::new("job", format!("o{n}")), TaskOptions::new().queue("orders")).await.unwrap();
        h.client.enqueue(&Task::new("job", format!("p{n}")), TaskOptions::new().queue("plain")).await.unwrap();
    }
    let rec = Recorder::default();
    // One task per fetch, so that each run is one draw among the queues.
    let config = Config {
        prefetch: Some(0),
        ..Config::builder()
            .concurrency(1)
            .queue("plain", 1)
            .sharded_queue("orders", 1)
            .clock(h.clock.clone())
            .build()
            .unwrap()
    };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
    h.eventually(secs(30), "200 tasks ran", || async { rec.len() >= 200 }).await;
    server.shutdown().await;
    let calls = rec.calls();
    let sharded = calls.iter().take(200).filter(|c| c.queue.starts_with("orders~")).count();
    // Even odds per draw: 200 draws land within 100 ± 40 with a chance of failure below 1e-8;
    // unsplit, the 4 shards would take 4 draws in 5 (160).
    assert!((60..=140).contains(&sharded), "{sharded} of 200 runs were the sharded queue's");
}

#[tokio::test]
async fn a_sharded_queue_named_wrongly_is_refused() {
    let h = Harness::new();
    for (builder, field) in [
        (Config::builder().sharded_queue("a~b", 1), "queue"),
        (Config::builder().sharded_queue("a", 0), "sharded_queues"),
        (Config::builder().queue("a", 1).sharded_queue("a", 1), "sharded_queues"),
    ] {
        let refused = builder.build().and_then(|config| Server::new(h.broker.clone(), config).map(|_| ()));
        match refused {
            Err(Error::InvalidArgument { field: got, .. }) => assert_eq!(got, field),
            other => panic!("expected InvalidArgument({field}), got {other:?}"),
        }
    }
}
