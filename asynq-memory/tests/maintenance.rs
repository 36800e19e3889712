//! The background roles' calls: forwarding due tasks, finding expired leases, and server
//! heartbeats.

mod support;

use asynq_core::broker::{Forward, Inspect, Recover, ServerState};
use asynq_core::{ServerInfo, ServerStatus, Task, TaskOptions, TaskState, WorkerInfo};
use std::collections::BTreeMap;
use std::time::Duration;
use support::{Fixture, START, at, names};

#[tokio::test]
async fn due_scheduled_tasks_become_pending_in_due_order() {
    let f = Fixture::new();
    for (id, delay) in [("late", 20), ("early", 10), ("later", 30)] {
        let options = TaskOptions::new().queue("q").process_in(Duration::from_secs(delay));
        f.enqueue(id, &Task::new("t", ""), options).await.unwrap();
    }
    let queues = names(&["q", "unknown"]);

    assert_eq!(f.broker.forward_ready(&queues).await.unwrap(), 0);
    f.advance(20);
    assert_eq!(f.broker.forward_ready(&queues).await.unwrap(), 2);

    let info = f.info("q").await;
    assert_eq!((info.pending, info.scheduled), (2, 1));
    f.advance(5);
    assert_eq!(f.info("q").await.latency, Duration::from_secs(5), "pending since it was forwarded");
    assert_eq!(f.dequeue_ids(&["q"], 5).await, ["early", "late"]);
}

#[tokio::test]
async fn a_scheduled_task_with_a_group_becomes_an_ordinary_pending_task() {
    let f = Fixture::new();
    let options = TaskOptions::new().queue("q").group("g").process_in(Duration::from_secs(10));
    f.enqueue("a", &Task::new("t", ""), options).await.unwrap();
    f.advance(10);

    assert_eq!(f.broker.forward_ready(&names(&["q"])).await.unwrap(), 1);

    let task = f.broker.task_info("q", "a").await.unwrap();
    assert_eq!((task.state, task.group.as_deref()), (TaskState::Pending, Some("g")));
    let info = f.info("q").await;
    assert_eq!((info.pending, info.aggregating, info.groups), (1, 0, 0));
}

#[tokio::test]
async fn a_grouped_task_aggregates_until_forwarded_elsewhere() {
    let f = Fixture::new();
    f.enqueue("a", &Task::new("t", ""), TaskOptions::new().queue("q").group("g")).await.unwrap();
    f.advance(3_600);

    assert_eq!(f.broker.forward_ready(&names(&["q"])).await.unwrap(), 0);
    let info = f.info("q").await;
    assert_eq!((info.aggregating, info.groups, info.size, info.pending), (1, 1, 1, 0));
    assert!(f.dequeue(&["q"], 1).await.is_empty());
}

#[tokio::test]
async fn expired_leases_are_found_by_cutoff() {
    let f = Fixture::new();
    f.enqueue_plain("q", "a").await;
    f.enqueue_plain("other", "b").await;
    let a = f.dequeue_one("q").await;
    f.advance(10);
    f.dequeue_one("other").await;

    let queues = names(&["q", "other"]);
    let expired = |cutoff| f.broker.list_lease_expired(&queues, cutoff);
    assert!(expired(at(START + 29)).await.unwrap().is_empty());
    assert_eq!(expired(at(START + 30)).await.unwrap(), [a.message]);
    assert_eq!(expired(at(START + 40)).await.unwrap().len(), 2);
}

fn server(host: &str, pid: u32) -> ServerInfo {
    ServerInfo {
        host: host.into(),
        pid,
        server_id: format!("{host}-{pid}"),
        concurrency: 4,
        queues: BTreeMap::from([("default".to_owned(), 1)]),
        strict_priority: false,
        status: ServerStatus::Active,
        started: at(START),
        active_workers: 1,
    }
}

#[tokio::test]
async fn servers_are_listed_until_their_ttl_runs_out_or_they_clear() {
    let f = Fixture::new();
    let (b, a1, a2) = (server("b", 1), server("a", 2), server("a", 1));
    let worker = WorkerInfo {
        host: "b".into(),
        pid: 1,
        server_id: "b-1".into(),
        task_id: "t1".into(),
        task_type: "t".into(),
        task_payload: "p".into(),
        queue: "default".into(),
        started: at(START),
        deadline: at(START + 60),
    };
    let ttl = Duration::from_secs(10);
    f.broker.write_server_state(&b, std::slice::from_ref(&worker), ttl).await.unwrap();
    f.broker.write_server_state(&a1, &[], ttl).await.unwrap();
    f.advance(5);
    f.broker.write_server_state(&a2, &[], ttl).await.unwrap();

    let listed = f.broker.servers().await.unwrap();
    assert_eq!(listed, [(a2.clone(), vec![]), (a1.clone(), vec![]), (b.clone(), vec![worker])]);

    f.advance(6);
    f.broker.clear_server_state(&a2).await.unwrap();
    assert!(f.broker.servers().await.unwrap().is_empty());
}
