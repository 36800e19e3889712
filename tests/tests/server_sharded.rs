//! Sharded queues served: a server configured with a logical queue runs the tasks of every shard
//! once, picks up a declaration made while it runs within its refresh interval, weighs the
//! logical queue as a whole against its other queues, and a configuration that names a sharded
//! queue wrongly is refused; a reshard while tasks run drains the old shards, each task run
//! once, and the servers drop them once empty; a task placed late on a dropped shard runs, and its
//! stray queue goes. On the memory broker with tokio's paused time.

use asynq_client::{Client, SHARD_REFRESH, Task, TaskOptions};
use asynq_core::broker::{Capabilities, Inspect, ShardedQueues};
use asynq_core::shard::{DRAIN_GRACE, RetiredTotals};
use asynq_core::{Clock, Error, QueueName};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, PlainProducer, Recorder, secs};
use std::collections::BTreeMap;
use std::sync::Arc;

fn shards(h: &Harness) -> Arc<dyn ShardedQueues> {
    Arc::new(h.broker.clone()).as_sharded_queues().unwrap()
}

/// A fresh client, which places tasks on shards by itself: it reads the declarations at its
/// first enqueue.
fn sharding_client(h: &Harness) -> Client {
    Client::new(h.broker.clone()).with_clock(h.clock.clone())
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

/// A producer that does not place tasks on shards (Go's, or a client over a broker that does not
/// show its declarations) puts them in the plain queue of the logical name: a sharded server runs
/// them too, and the logical queue's info counts them.
#[tokio::test(start_paused = true)]
async fn tasks_a_producer_left_in_the_plain_queue_of_the_logical_name_run() {
    let h = Harness::new();
    shards(&h).declare_sharded_queue(&q("orders"), 2).await.unwrap();
    let go = Client::new(PlainProducer(h.broker.clone())).with_clock(h.clock.clone());
    for n in 0..3 {
        go.enqueue(&Task::new("job", format!("go {n}")), TaskOptions::new().queue("orders")).await.unwrap();
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

/// 3 shards resharded to 5 while a server runs their tasks: the tasks already on the old shards
/// (scheduled ones due after the grace too) run there, the tasks enqueued once the client read
/// the new declaration go to the new shards, each task runs once, and the server drops the old
/// generation (its queues removed) only after the grace and once its last task ran.
#[tokio::test(start_paused = true)]
async fn a_reshard_from_3_to_5_while_tasks_run_drains_the_old_shards() {
    let h = Harness::new();
    let first = shards(&h).declare_sharded_queue(&q("orders"), 3).await.unwrap();
    let client = sharding_client(&h);
    let enqueue = |name: String, options: TaskOptions| {
        let client = client.clone();
        async move { client.enqueue(&Task::new("job", name.clone()), options.queue("orders").task_id(name)).await }
    };
    for n in 0..30 {
        enqueue(format!("before-{n}"), TaskOptions::new()).await.unwrap();
    }
    // Due after the grace: the old generation may not be dropped before they ran.
    let late = DRAIN_GRACE + secs(30);
    for n in 0..3 {
        let info = enqueue(format!("late-{n}"), TaskOptions::new().process_in(late)).await.unwrap();
        assert!(first.has_shard(&info.queue), "{info:?}");
    }
    let rec = Recorder::default();
    let config = Config::builder().concurrency(4).sharded_queue("orders", 1).clock(h.clock.clone()).build().unwrap();
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    // Each task takes a while, so that the reshard comes while tasks run.
    let slow = |_, _| async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        Ok(())
    };
    server.start(rec.handler(h.clock.clone(), slow)).unwrap();
    h.eventually(secs(5), "some tasks ran", || async { rec.len() >= 4 }).await;

    let resharded_at = h.clock.now();
    let second = asynq_client::Inspector::new(h.broker.clone()).reshard_queue("orders", 5).await.unwrap();
    assert_eq!((second.generation(), second.count()), (2, 5));
    tokio::time::sleep(SHARD_REFRESH).await;
    for n in 0..30 {
        let info = enqueue(format!("after-{n}"), TaskOptions::new()).await.unwrap();
        assert!(second.shards().contains(&info.queue), "placed on the newest generation: {info:?}");
    }
    h.eventually(secs(200), "every task ran", || async { rec.len() == 63 }).await;
    let declaration = || async { shards(&h).sharded_queue(&q("orders")).await.unwrap().unwrap() };
    h.eventually(secs(30), "the old shards are dropped", || async { declaration().await.draining().is_none() }).await;
    let dropped_at = h.clock.now();
    server.shutdown().await;

    let calls = rec.calls();
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    for call in &calls {
        *runs.entry(call.id.clone()).or_default() += 1;
        let on_first = first.has_shard(&call.queue);
        assert_eq!(on_first, !call.id.starts_with("after-"), "{call:?}");
        assert!(on_first || second.shards().iter().any(|s| s == &call.queue), "{call:?}");
    }
    assert_eq!(runs.len(), 63);
    assert!(runs.values().all(|n| *n == 1), "each task ran once: {runs:?}");
    let last_old_run = calls.iter().filter(|c| first.has_shard(&c.queue)).map(|c| c.at).max().unwrap();
    assert!(dropped_at >= resharded_at + DRAIN_GRACE && dropped_at >= last_old_run, "dropped too early");
    let registered = h.broker.queues().await.unwrap();
    assert!(first.shards().iter().all(|shard| !registered.contains(shard)), "{registered:?}");
    assert!(second.shards().iter().all(|shard| registered.contains(shard)), "{registered:?}");
    // The old generation's 33 tasks stay counted in the logical queue's totals.
    assert_eq!(declaration().await, second.drained(RetiredTotals { processed: 33, failed: 0 }));
    let info = asynq_client::Inspector::new(h.broker.clone()).queue_info("orders").await.unwrap();
    assert_eq!(info.processed_total, 63, "{info:?}");
}

/// A task placed on a shard after its generation was dropped (by a producer that read the
/// declarations before the reshard and was held up past the grace) is not stranded: the server
/// serves the stray queue it makes, runs the task, then removes the queue.
#[tokio::test(start_paused = true)]
async fn a_task_placed_late_on_a_dropped_shard_runs_and_its_queue_goes() {
    let h = Harness::new();
    let first = shards(&h).declare_sharded_queue(&q("orders"), 2).await.unwrap();
    let inspector = asynq_client::Inspector::new(h.broker.clone());
    inspector.reshard_queue("orders", 3).await.unwrap();
    let serve = || {
        let rec = Recorder::default();
        let config =
            Config::builder().concurrency(2).sharded_queue("orders", 1).clock(h.clock.clone()).build().unwrap();
        let mut server = Server::new(h.broker.clone(), config).unwrap();
        server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();
        (server, rec)
    };
    let (mut server, _) = serve();
    let declaration = || async { shards(&h).sharded_queue(&q("orders")).await.unwrap().unwrap() };
    let dropped = || async { declaration().await.draining().is_none() };
    h.eventually(DRAIN_GRACE + secs(10), "generation 1 is dropped", dropped).await;
    server.shutdown().await;

    let stray = first.shards()[1].clone();
    let late = Client::new(PlainProducer(h.broker.clone())).with_clock(h.clock.clone());
    late.enqueue(&Task::new("job", "late"), TaskOptions::new().queue(stray.as_str())).await.unwrap();
    let (mut server, rec) = serve();
    h.eventually(secs(5), "the late task ran", || async { rec.len() == 1 }).await;
    let gone = || async { !h.broker.queues().await.unwrap().contains(&stray) };
    h.eventually(secs(40), "the stray queue is removed", gone).await;
    server.shutdown().await;

    assert_eq!(rec.calls()[0].queue, stray.as_str());
    assert_eq!(inspector.queue_info("orders").await.unwrap().size, 0);
}
