//! Sharded queues in `asynq queue ls` and `queue inspect`: the shards are listed as the queues
//! they are, with the logical queue they belong to, and a logical queue is inspected as the sum
//! of its shards; `asynq queue shard` declares one, and `task enqueue` places tasks on its shards.

mod common;

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Capabilities;
use asynq_tests::RedisServer;
use common::{asynq_at, block_on, broker};
use std::sync::Arc;

#[test]
fn a_sharded_queue_is_listed_with_its_shards_and_inspected_as_their_sum() {
    let server = RedisServer::start();
    block_on(async {
        let broker = Arc::new(broker(&server).await);
        let shards = broker.clone().as_sharded_queues().expect("the Redis broker shards queues");
        shards.declare_sharded_queue(&QueueName::from_static("orders"), 3).await.unwrap();
        let client = Client::from_shared(broker.clone()).with_sharded_queues(shards);
        for n in 0..5 {
            client.enqueue(&Task::new("ship", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
        }
        client.enqueue(&Task::new("ship", "x"), TaskOptions::new().queue("plain")).await.unwrap();
    });

    let ls = asynq_at(&server, &["queue", "ls"]).ok();
    let lines: Vec<&str> = ls.stdout.lines().collect();
    assert_eq!(lines[..4], ["orders~0", "orders~1", "orders~2", "plain"], "{}", ls.stdout);
    ls.shows(&["Sharded queues:", "orders (3 shards): orders~0, orders~1, orders~2"]);
    let json = asynq_at(&server, &["queue", "ls", "--json"]).ok().json();
    assert_eq!(json[0], serde_json::json!({"queue": "orders~0", "shard_of": "orders"}));
    assert_eq!(json[3], serde_json::json!({"queue": "plain"}));

    let inspect = asynq_at(&server, &["queue", "inspect", "orders"]).ok();
    inspect.shows(&["Name:    orders", "Size:    5", "Shards:  orders~0, orders~1, orders~2"]);
    let json = asynq_at(&server, &["queue", "inspect", "orders", "--json"]).ok().json();
    assert_eq!((json[0]["pending"].as_u64(), json[0]["shards"].as_array().map(Vec::len)), (Some(5), Some(3)));
    let shard = asynq_at(&server, &["queue", "inspect", "orders~1", "--json"]).ok().json();
    assert_eq!((shard[0]["pending"].as_u64(), shard[0].get("shards")), (Some(2), None));
}

#[test]
fn queue_shard_declares_once_and_refuses_what_it_cannot() {
    let server = RedisServer::start();
    let declared = asynq_at(&server, &["queue", "shard", "orders", "3"]).ok();
    declared.shows(&["Sharded queue \"orders\" has 3 shards: orders~0, orders~1, orders~2"]);
    // The same count again answers the declaration, in JSON too.
    let json = asynq_at(&server, &["queue", "shard", "orders", "3", "--json"]).ok().json();
    assert_eq!(json, serde_json::json!({"queue": "orders", "shards": ["orders~0", "orders~1", "orders~2"]}));
    asynq_at(&server, &["queue", "ls"]).ok().shows(&["orders (3 shards): orders~0, orders~1, orders~2"]);

    let other_count = asynq_at(&server, &["queue", "shard", "orders", "4"]);
    assert_eq!(other_count.code, 4, "a conflict: {other_count:#?}");
    assert!(other_count.stderr.contains("declared with 3 shards"), "{other_count:#?}");
    block_on(async {
        let broker = broker(&server).await;
        let client = Client::new(broker);
        client.enqueue(&Task::new("ship", "x"), TaskOptions::new().queue("plain")).await.unwrap();
    });
    let taken = asynq_at(&server, &["queue", "shard", "plain", "2"]);
    assert_eq!(taken.code, 4, "a queue of that name exists: {taken:#?}");
    for bad in [["a~b", "2"], ["fine", "0"], ["fine", "65"]] {
        let run = asynq_at(&server, &["queue", "shard", bad[0], bad[1]]);
        assert_eq!(run.code, 2, "{bad:?}: {run:#?}");
    }
    let not_a_number = asynq_at(&server, &["queue", "shard", "fine", "many"]);
    assert_eq!(not_a_number.code, 2, "{not_a_number:#?}");
    // Nothing refused was written.
    let json = asynq_at(&server, &["queue", "ls", "--json"]).ok().json();
    let queues: Vec<&str> = json.as_array().unwrap().iter().filter_map(|q| q["queue"].as_str()).collect();
    assert_eq!(queues, ["orders~0", "orders~1", "orders~2", "plain"]);
}

#[test]
fn queue_shard_reshard_makes_a_generation_and_shows_the_draining_shards() {
    let server = RedisServer::start();
    asynq_at(&server, &["queue", "shard", "orders", "2"]).ok();
    // `task enqueue` places the task on a shard, as every client does.
    let enqueued = asynq_at(&server, &["task", "enqueue", "-t", "ship", "-l", "old", "--queue", "orders"]).ok();
    enqueued.shows(&["in queue \"orders~0\""]);
    let resharded = asynq_at(&server, &["queue", "shard", "orders", "3", "--reshard"]).ok();
    resharded.shows(&[
        "Sharded queue \"orders\" has 3 shards: orders~g2~0, orders~g2~1, orders~g2~2",
        "Draining (still served until empty): orders~0, orders~1",
    ]);
    let json = asynq_at(&server, &["queue", "shard", "orders", "3", "--reshard", "--json"]).ok().json();
    assert_eq!(json["draining"], serde_json::json!(["orders~0", "orders~1"]), "the same count answers it: {json}");
    asynq_at(&server, &["queue", "ls"]).ok().shows(&[
        "orders (3 shards): orders~g2~0, orders~g2~1, orders~g2~2",
        "  draining generation 1 (2 shards): orders~0, orders~1",
    ]);
    let inspect = asynq_at(&server, &["queue", "inspect", "orders"]).ok();
    inspect.shows(&["Size:    1", "Shards:  orders~g2~0, orders~g2~1, orders~g2~2", "Draining: orders~0, orders~1"]);
    let json = asynq_at(&server, &["queue", "inspect", "orders", "--json"]).ok().json();
    assert_eq!(json[0]["draining_shards"], serde_json::json!(["orders~0", "orders~1"]));

    let before = asynq_at(&server, &["queue", "ls", "--json"]).ok().json();
    for (args, code) in [
        (&["orders", "4", "--reshard"][..], 4),
        (&["nothing", "2", "--reshard"][..], 4),
        (&["orders", "0", "--reshard"][..], 2),
        (&["orders", "2"][..], 4),
    ] {
        let run = asynq_at(&server, &[&["queue", "shard"][..], args].concat());
        assert_eq!(run.code, code, "{args:?}: {run:#?}");
    }
    assert!(asynq_at(&server, &["queue", "shard", "orders", "4", "--reshard"]).stderr.contains("still drains"));
    assert_eq!(asynq_at(&server, &["queue", "ls", "--json"]).ok().json(), before, "nothing refused was written");
}
