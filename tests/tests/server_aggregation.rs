//! Group aggregation on the memory broker and tokio's paused time: a server with a group
//! aggregator; grouped tasks are combined into one task that a handler
//! receives, when the grace period passes or the group reaches its max size; a set whose
//! aggregator panicked goes back to its group through the recoverer and is aggregated again.

use asynq_client::{Task, TaskOptions, TaskState};
use asynq_core::broker::{AGGREGATION_TIMEOUT, Aggregate, AggregationLimits, Inspect};
use asynq_core::{Clock, Error, GroupName, QueueName, TaskId};
use asynq_server::{Config, GroupAggregator, Server, aggregator_fn};
use asynq_tests::{Harness, secs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Joins the payloads of a group's tasks with commas into one `digest` task.
fn join_payloads(group: &str, tasks: Vec<Task>) -> Task {
    let parts: Vec<String> = tasks.iter().map(|t| String::from_utf8_lossy(t.payload()).into_owned()).collect();
    Task::new("digest", parts.join(",")).with_header("group", group)
}

/// The aggregated tasks a handler received: payload, `group` header and when, by the clock.
#[derive(Debug, Clone, Default)]
struct Digests(Arc<Mutex<Vec<(String, String, SystemTime)>>>);

impl Digests {
    fn payloads(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().map(|(payload, ..)| payload.clone()).collect()
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// A server on `h` serving "default" with `aggregator` under `limits` (checking every
/// `min(7 s, grace period)`), whose handler records every `digest` task it runs.
fn start_server(h: &Harness, limits: AggregationLimits, aggregator: Arc<dyn GroupAggregator>) -> (Server, Digests) {
    let digests = Digests::default();
    let seen = digests.clone();
    let clock = h.clock.clone();
    let config = Config {
        group_aggregator: Some(aggregator),
        group_grace_period: limits.grace_period,
        group_max_delay: limits.max_delay,
        group_max_size: limits.max_size,
        ..h.config("default", 2)
    };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(asynq_server::handler_fn(move |_ctx, task| {
            let payload = String::from_utf8_lossy(task.payload()).into_owned();
            let group = task.headers().get("group").cloned().unwrap_or_default();
            seen.0.lock().unwrap().push((payload, group, clock.now()));
            async { Ok(()) }
        }))
        .unwrap();
    (server, digests)
}

/// Enqueues a task with `payload` into `group` of "default".
async fn add(h: &Harness, group: &str, payload: &str) -> String {
    let task = Task::new("notify", payload.to_owned());
    h.client.enqueue(&task, TaskOptions::new().group(group)).await.unwrap().id.into_string()
}

#[tokio::test(start_paused = true)]
async fn an_idle_group_is_aggregated_into_one_task_that_a_handler_receives() {
    let h = Harness::new();
    let limits = AggregationLimits { grace_period: secs(10), ..AggregationLimits::default() };
    let (mut server, digests) = start_server(&h, limits, Arc::new(aggregator_fn(join_payloads)));

    let mut members = Vec::new();
    for payload in ["a", "b", "c"] {
        members.push(add(&h, "user:1", payload).await);
        tokio::time::sleep(secs(3)).await;
    }
    let last_joined = h.now() - secs(3);
    add(&h, "user:2", "z").await;

    h.eventually(secs(60), "both groups are aggregated and run", || async { digests.len() == 2 }).await;
    let mut received = digests.0.lock().unwrap().clone();
    received.sort_by(|a, b| a.1.cmp(&b.1));
    let (payload, group, at) = &received[0];
    assert_eq!((payload.as_str(), group.as_str()), ("a,b,c", "user:1"));
    assert!(*at >= last_joined + secs(10), "aggregated before the grace period passed");
    assert!(*at <= last_joined + secs(10 + 7 + 1), "the checks run every 7 s");
    assert_eq!((received[1].0.as_str(), received[1].1.as_str()), ("z", "user:2"));
    for id in &members {
        assert!(
            matches!(
                h.broker.task_info(&QueueName::from_static("default"), &TaskId::new(id).unwrap()).await,
                Err(Error::TaskNotFound { .. })
            ),
            "{id} is left"
        );
    }
    let q = h.queue("default").await;
    assert_eq!((q.size, q.groups, q.processed_total), (0, 0, 2));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_group_at_its_max_size_is_aggregated_one_batch_per_check() {
    let h = Harness::new();
    let limits = AggregationLimits { grace_period: secs(60), max_size: Some(2), ..AggregationLimits::default() };
    let (mut server, digests) = start_server(&h, limits, Arc::new(aggregator_fn(join_payloads)));
    let start = h.now();
    // A second apart: tasks that join in the same second are ordered by ID.
    for payload in ["a", "b", "c", "d", "e"] {
        add(&h, "g", payload).await;
        tokio::time::sleep(secs(1)).await;
    }

    h.eventually(secs(15), "two full batches run", || async { digests.len() == 2 }).await;
    assert_eq!(digests.payloads(), ["a,b", "c,d"]);
    assert_eq!(
        h.broker.groups(&QueueName::from_static("default")).await.unwrap().len(),
        1,
        "e waits for the grace period"
    );
    h.eventually(secs(70), "the last task is aggregated", || async { digests.len() == 3 }).await;
    assert_eq!(digests.payloads()[2], "e");
    let times: Vec<Duration> =
        digests.0.lock().unwrap().iter().map(|(.., at)| at.duration_since(start).unwrap()).collect();
    assert!(times[0] >= secs(7) && times[1] >= secs(14) && times[2] >= secs(4 + 60), "{times:?}");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn tasks_set_aside_by_a_panicking_aggregator_return_to_their_group_and_are_aggregated_again() {
    let h = Harness::new();
    let panicked = Arc::new(AtomicBool::new(false));
    let first_call = panicked.clone();
    let flaky = aggregator_fn(move |group: &str, tasks: Vec<Task>| {
        if !first_call.swap(true, Ordering::SeqCst) {
            panic!("the aggregator is broken");
        }
        join_payloads(group, tasks)
    });
    let limits = AggregationLimits { grace_period: secs(5), ..AggregationLimits::default() };
    // The server's recoverer (every 60 s) reclaims the set the panicking aggregator left.
    let (mut server, digests) = start_server(&h, limits, Arc::new(flaky));
    let a = add(&h, "g", "a").await;
    tokio::time::sleep(secs(1)).await;
    add(&h, "g", "b").await;

    h.eventually(secs(10), "the aggregator panics", || async { panicked.load(Ordering::SeqCst) }).await;
    assert!(h.broker.groups(&QueueName::from_static("default")).await.unwrap().is_empty(), "the tasks are set aside");
    assert_eq!(
        h.broker.task_info(&QueueName::from_static("default"), &TaskId::new(&*a).unwrap()).await.unwrap().state,
        TaskState::Aggregating
    );
    tokio::time::sleep(AGGREGATION_TIMEOUT - secs(10)).await;
    assert_eq!(digests.len(), 0, "nothing is aggregated before the set times out");

    h.eventually(secs(120), "the reclaimed tasks are aggregated", || async { digests.len() == 1 }).await;
    assert_eq!(digests.payloads(), ["a,b"]);
    assert!(matches!(
        h.broker.task_info(&QueueName::from_static("default"), &TaskId::new(&*a).unwrap()).await,
        Err(Error::TaskNotFound { .. })
    ));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn group_limits_below_go_minimums_are_refused_by_the_server() {
    let h = Harness::new();
    let refused = |config: Config| match Server::new(h.broker.clone(), config) {
        Err(Error::InvalidArgument { field, .. }) => field,
        other => panic!("expected an invalid argument, got {other:?}"),
    };
    assert_eq!(
        refused(Config { group_grace_period: Duration::from_millis(999), ..h.config("q", 1) }),
        "group grace period"
    );
    assert_eq!(refused(Config { group_max_delay: Some(Duration::ZERO), ..h.config("q", 1) }), "group max delay");
    assert_eq!(refused(Config { group_max_size: Some(0), ..h.config("q", 1) }), "group max size");
    let aggregating = Config {
        group_aggregator: Some(Arc::new(aggregator_fn(join_payloads))),
        group_grace_period: secs(1),
        group_max_delay: Some(secs(1)),
        group_max_size: Some(1),
        ..h.config("q", 1)
    };
    assert!(Server::new(h.broker.clone(), aggregating).is_ok());
}
#[tokio::test(start_paused = true)]
async fn a_server_configured_with_a_group_aggregator_aggregates_and_reclaims() {
    let h = Harness::new();
    let digests = Digests::default();
    let seen = digests.clone();
    let clock = h.clock.clone();
    let config = Config {
        group_aggregator: Some(Arc::new(aggregator_fn(join_payloads))),
        group_grace_period: secs(5),
        ..h.config("default", 2)
    };
    let mut server = Server::new(h.broker.clone(), config).unwrap();
    server
        .start(asynq_server::handler_fn(move |_ctx, task| {
            let payload = String::from_utf8_lossy(task.payload()).into_owned();
            seen.0.lock().unwrap().push((payload, String::new(), clock.now()));
            async { Ok(()) }
        }))
        .unwrap();
    add(&h, "g", "a").await;
    tokio::time::sleep(secs(1)).await;
    add(&h, "g", "b").await;
    h.eventually(secs(20), "the group is aggregated and run", || async { digests.len() == 1 }).await;
    assert_eq!(digests.payloads(), ["a,b"]);

    // A set left by a dead aggregator is reclaimed by the server's recoverer and aggregated again.
    add(&h, "g", "c").await;
    tokio::time::sleep(secs(1)).await;
    let limits = AggregationLimits { grace_period: secs(1), ..AggregationLimits::default() };
    assert!(
        h.broker
            .aggregation_check(&QueueName::from_static("default"), &GroupName::from_static("g"), limits)
            .await
            .unwrap()
            .is_some()
    );
    h.eventually(secs(200), "the reclaimed set is aggregated", || async { digests.len() == 2 }).await;
    assert_eq!(digests.payloads()[1], "c");
    server.shutdown().await;
}

/// More groups are ready at once than the aggregator asks the broker for in one call (1 000):
/// the first check still aggregates every one of them.
#[tokio::test(start_paused = true)]
async fn one_check_aggregates_more_ready_groups_than_one_ask_names() {
    let h = Harness::new();
    let tasks: Vec<(Task, TaskOptions)> =
        (0..1_500).map(|i| (Task::new("notify", i.to_string()), TaskOptions::new().group(format!("g{i}")))).collect();
    for result in h.client.enqueue_batch(&tasks).await {
        result.unwrap();
    }
    let limits = AggregationLimits { grace_period: secs(60), max_size: Some(1), ..AggregationLimits::default() };
    let (mut server, digests) = start_server(&h, limits, Arc::new(aggregator_fn(join_payloads)));
    let default = QueueName::from_static("default");
    h.eventually(secs(8), "the first check aggregates every group", || async {
        h.broker.groups(&default).await.unwrap().is_empty()
    })
    .await;
    h.eventually(secs(60), "every aggregated task runs", || async { digests.len() == 1_500 }).await;
    server.shutdown().await;
}
