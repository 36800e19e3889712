//! `asynq task inspect` shows a task's durable steps and why its handler parked it.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod common;

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::{Dequeue, Steps};
use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord};
use asynq_tests::RedisServer;
use common::{asynq_at, block_on, broker};
use std::time::{Duration, SystemTime};

#[test]
fn task_inspect_shows_steps_and_why_a_task_is_parked() {
    let server = RedisServer::start();
    block_on(async {
        let broker = broker(&server).await;
        let client = Client::new(broker.clone());
        client.enqueue(&Task::new("order", "o"), TaskOptions::new().queue("shop").task_id("o-1")).await.unwrap();
        let taken = broker.dequeue(&[QueueName::from_static("shop")], 1).await.unwrap().remove(0);
        let now = SystemTime::now();
        let charge = StepRecord::new(StepName::new("charge").unwrap(), "\"r-1\"", now).unwrap();
        broker.record_step(&taken.message.queue, &taken.message.id, &charge).await.unwrap();
        let approved = StepName::new("approved").unwrap();
        let parked = Parked::new(ParkReason::Signal(approved), now + Duration::from_secs(3600));
        broker.park(&taken.message, &parked, None).await.unwrap();
    });
    let inspect = asynq_at(&server, &["task", "inspect", "-q", "shop", "-i", "o-1"]).ok();
    inspect.shows(&[
        "scheduled",
        "Parked",
        "waiting for signal \"approved\" until",
        "Steps",
        "charge = \"r-1\" (recorded",
    ]);
    let json = asynq_at(&server, &["task", "inspect", "-q", "shop", "-i", "o-1", "--json"]).ok().json();
    assert_eq!(json["state"], "scheduled");
    assert_eq!(json["parked"]["reason"], "waiting for signal \"approved\"");
    assert!(json["parked"]["until"].as_str().is_some_and(|t| t.ends_with('Z')), "{json}");
    assert_eq!(json["steps"][0]["name"], "charge");
    assert_eq!(json["steps"][0]["result"], "\"r-1\"");
    assert_eq!(json["steps"][0]["result_encoding"], "utf-8");
}
