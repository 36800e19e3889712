//! What the client refuses, and that a refusal writes nothing.

use asynq_client::{Error, Task, TaskOptions, TaskState};
use asynq_core::broker::Inspect;
use asynq_core::{QueueName, TaskId};
use asynq_server::{Config, Server};
use asynq_tests::{Harness, secs};
use std::time::{Duration, UNIX_EPOCH};

#[tokio::test(start_paused = true)]
async fn invalid_input_is_refused_before_anything_is_written() {
    let h = Harness::new();
    let cases = [
        (Task::new("", "p"), TaskOptions::new(), "task type"),
        (Task::new("t", "p"), TaskOptions::new().queue(" "), "queue"),
        (Task::new("t", "p"), TaskOptions::new().queue("a}b"), "queue"),
        (Task::new("t", "p"), TaskOptions::new().task_id(""), "task ID"),
        (Task::new("t", "p"), TaskOptions::new().max_retry(u32::MAX), "max retry"),
        (Task::new("t", "p"), TaskOptions::new().deadline(h.now() - secs(1)), "deadline"),
        (Task::new("t", "p"), TaskOptions::new().timeout(secs(0)), "timeout"),
        (Task::new("t", "p"), TaskOptions::new().unique(secs(0)), "unique"),
        (Task::new("t", "p"), TaskOptions::new().group(""), "group"),
        (Task::new(" ", "p"), TaskOptions::new(), "task type"),
        (Task::new("t", "p"), TaskOptions::new().queue(""), "queue"),
        (Task::new("t", "p"), TaskOptions::new().queue("a{b"), "queue"),
        // Durations Go's int64 nanoseconds cannot hold, and instants that far away.
        (Task::new("t", "p"), TaskOptions::new().timeout(Duration::MAX), "timeout"),
        (Task::new("t", "p"), TaskOptions::new().retention(Duration::MAX), "retention"),
        (Task::new("t", "p"), TaskOptions::new().unique(Duration::MAX), "unique"),
        (Task::new("t", "p"), TaskOptions::new().process_in(Duration::MAX), "process in"),
        (Task::new("t", "p"), TaskOptions::new().process_in(secs(300 * 365 * 86_400)), "process in"),
        (Task::new("t", "p"), TaskOptions::new().process_at(h.now() + secs(300 * 365 * 86_400)), "process at"),
        (Task::new("t", "p"), TaskOptions::new().deadline(h.now() + secs(300 * 365 * 86_400)), "deadline"),
        (Task::new("t", "p"), TaskOptions::new().deadline(UNIX_EPOCH - secs(1)), "deadline"),
    ];
    for (task, opts, expected) in cases {
        match h.client.enqueue(&task, opts).await {
            Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, expected),
            other => panic!("expected {expected} to be refused, got {other:?}"),
        }
    }
    assert!(h.broker.queues().await.unwrap().is_empty(), "nothing was written");
}

#[tokio::test(start_paused = true)]
async fn a_payload_over_the_clients_limit_is_refused_before_anything_is_written() {
    let h = Harness::new();
    let client = h.client.clone().with_max_payload(16);
    let big = Task::new("t", vec![7u8; 17]);
    let refused = client.enqueue(&big, TaskOptions::new()).await.unwrap_err();
    assert!(matches!(refused, Error::TooLarge { what: "payload", size: 17, limit: 16, .. }), "{refused:?}");
    assert!(!refused.is_transient(), "retrying cannot help");
    let message = refused.to_string();
    assert!(message.contains("17 bytes") && message.contains("16 bytes"), "{message}");
    let batch = client.enqueue_batch(&[(big.clone(), TaskOptions::new())]).await;
    assert!(matches!(batch[0], Err(Error::TooLarge { what: "payload", .. })), "{batch:?}");
    assert!(h.broker.queues().await.unwrap().is_empty(), "nothing was written");
    // At the limit, and under the default limit, the task is stored.
    client.enqueue(&Task::new("t", vec![7u8; 16]), TaskOptions::new()).await.unwrap();
    h.client.enqueue(&big, TaskOptions::new()).await.unwrap();
    assert_eq!(h.queue("default").await.pending, 2);
}

#[tokio::test(start_paused = true)]
async fn a_taken_task_id_and_a_held_unique_lock_are_distinct_errors_and_write_nothing() {
    let h = Harness::new();
    let first = h.client.enqueue(&Task::new("t", "p"), TaskOptions::new().task_id("order-1")).await.unwrap();
    assert_eq!(first.id, "order-1");
    let again = h.client.enqueue(&Task::new("other", "x"), TaskOptions::new().task_id("order-1")).await;
    assert!(matches!(again, Err(Error::TaskIdConflict { ref id, .. }) if id == "order-1"), "{again:?}");

    h.client.enqueue(&Task::new("report", "2026-11"), TaskOptions::new().unique(secs(3600))).await.unwrap();
    let dup = h.client.enqueue(&Task::new("report", "2026-11"), TaskOptions::new().unique(secs(3600))).await;
    assert!(matches!(dup, Err(Error::DuplicateTask { .. })), "{dup:?}");
    // A different payload is a different task.
    h.client.enqueue(&Task::new("report", "2026-12"), TaskOptions::new().unique(secs(3600))).await.unwrap();

    let q = h.queue("default").await;
    assert_eq!(q.pending, 3);
    let stored = h.broker.task_info(&QueueName::from_static("default"), &TaskId::from_static("order-1")).await.unwrap();
    assert_eq!((stored.type_name.as_str(), stored.state), ("t", TaskState::Pending));
}

#[tokio::test(start_paused = true)]
async fn task_options_apply_under_enqueue_options() {
    let h = Harness::new();
    let task = Task::new("t", "p").with_options(TaskOptions::new().queue("low").max_retry(3).timeout(secs(10)));
    let info = h.client.enqueue(&task, TaskOptions::new().queue("high")).await.unwrap();
    assert_eq!((info.queue.as_str(), info.max_retry, info.timeout), ("high", 3, Some(secs(10))));
    let defaults = h.client.enqueue(&Task::new("t", "q"), TaskOptions::new()).await.unwrap();
    assert_eq!((defaults.queue.as_str(), defaults.max_retry, defaults.timeout), ("default", 25, Some(secs(1800))));
    let grouped = h.client.enqueue(&Task::new("t", "r"), TaskOptions::new().group("g")).await.unwrap();
    assert_eq!(
        (grouped.state, grouped.group.as_deref(), grouped.next_process_at),
        (TaskState::Aggregating, Some("g"), None)
    );
}

#[tokio::test]
async fn an_invalid_server_configuration_is_refused() {
    let h = Harness::new();
    let bad = [
        Config { concurrency: 0, ..Config::default() },
        Config { queues: [("".to_owned(), 1)].into(), ..Config::default() },
        Config { queues: [("q".to_owned(), 0)].into(), ..Config::default() },
        Config { heartbeat_interval: secs(0), ..Config::default() },
    ];
    for config in bad {
        assert!(matches!(Server::new(h.broker.clone(), config), Err(Error::InvalidArgument { .. })));
    }
}

#[tokio::test(start_paused = true)]
async fn the_default_payload_limit_is_64_mib() {
    let h = Harness::new();
    assert_eq!(asynq_client::DEFAULT_MAX_PAYLOAD, 64 * 1024 * 1024);
    let over = Task::new("t", vec![0u8; asynq_client::DEFAULT_MAX_PAYLOAD + 1]);
    let refused = h.client.enqueue(&over, TaskOptions::new()).await.unwrap_err();
    assert!(matches!(refused, Error::TooLarge { limit: asynq_client::DEFAULT_MAX_PAYLOAD, .. }), "{refused:?}");
    assert!(h.broker.queues().await.unwrap().is_empty(), "nothing was written");
}
