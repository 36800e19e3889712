//! Group aggregation through a real redis-server: the task Go asynq added to a group is
//! aggregated together with ours and run by our server, and the aggregation sets we write, read
//! and reclaim have Go's key layout, so a Go server sharing the queue handles them alike (and
//! ours handles Go's).

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::broker::{AGGREGATION_TIMEOUT, Aggregate, AggregationLimits, Inspect};
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{Clock, GroupName, QueueName, SimulatedClock, resolve_enqueue};
use asynq_server::{Config, Server, aggregator_fn, handler_fn};
use asynq_tests::{RedisServer, load_fixture, read_fixture, redis_broker, wait_for};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// When Go wrote `v0.26.0-enqueued.json` (2026-11-22T03:24:56Z), and its group member joined
/// group `g1` of queue `interop`.
const FIXTURE_TIME: i64 = 1_795_317_896;
/// The ID of Go's group member.
const GO_MEMBER: &str = "6677ab5c-2c3e-4128-aa83-5bd227cae320";

/// The members of the sorted set `key` with their scores.
fn zset(redis: &RedisServer, key: &str) -> BTreeMap<String, String> {
    redis.command(&["ZRANGE", key, "0", "-1", "WITHSCORES"]).unwrap().to_map()
}

fn exists(redis: &RedisServer, key: &str) -> bool {
    redis.command(&["EXISTS", key]).unwrap().as_int() == Some(1)
}

fn is_member(redis: &RedisServer, set: &str, member: &str) -> bool {
    redis.command(&["SISMEMBER", set, member]).unwrap().as_int() == Some(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_go_added_to_a_group_is_aggregated_with_ours_and_run_by_our_server() {
    let redis = RedisServer::start();
    load_fixture(&redis, &read_fixture("v0.26.0-enqueued.json"));
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME + 30));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let client = Client::new(broker.clone()).with_clock(Arc::new(clock.clone()));
    for n in 1..=2 {
        let task = Task::new("interop:group", format!(r#"{{"k":"rust-{n}"}}"#));
        client.enqueue(&task, TaskOptions::new().queue("interop").group("g1")).await.unwrap();
        // A second apart: tasks that join in the same second are ordered by ID.
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(zset(&redis, "asynq:{interop}:g:g1").len(), 3, "Go's member and ours share the group");
    // Our first enqueue found the group unindexed (Go keeps no index) and indexed all of it.
    assert_eq!(zset(&redis, "asynq:{interop}:groups:size"), BTreeMap::from([("g1".into(), "3".into())]));
    assert_eq!(
        zset(&redis, "asynq:{interop}:groups:oldest"),
        BTreeMap::from([("g1".into(), FIXTURE_TIME.to_string())])
    );
    assert_eq!(redis.command(&["GET", "asynq:{interop}:groups:tasks"]).unwrap().as_str(), Some("3"));
    clock.advance(Duration::from_secs(2));

    let digests = Arc::new(Mutex::new(Vec::new()));
    let seen = digests.clone();
    let join = aggregator_fn(|_group: &str, tasks: Vec<Task>| {
        let parts: Vec<String> = tasks.iter().map(|t| String::from_utf8_lossy(t.payload()).into_owned()).collect();
        Task::new("interop:digest", format!("[{}]", parts.join(",")))
    });
    // The grace period is over by the clock: the server's aggregator takes the group at its first
    // check, a second after it starts.
    let config = Config {
        queues: [("interop".to_owned(), 1)].into(),
        clock: Arc::new(clock.clone()),
        task_check_interval: Duration::from_millis(20),
        group_aggregator: Some(Arc::new(join)),
        group_grace_period: Duration::from_secs(1),
        ..Config::default()
    };
    let mut server = Server::new(broker.clone(), config).unwrap();
    server
        .start(handler_fn(move |_ctx, task| {
            if task.type_name() == "interop:digest" {
                seen.lock().unwrap().push(String::from_utf8_lossy(task.payload()).into_owned());
            }
            async { Ok(()) }
        }))
        .unwrap();

    wait_for("the aggregated task runs", || async { !digests.lock().unwrap().is_empty() }).await;
    // Go's member joined first, so it comes first.
    assert_eq!(*digests.lock().unwrap(), [r#"[{"k":"group"},{"k":"rust-1"},{"k":"rust-2"}]"#]);
    assert!(!exists(&redis, &format!("asynq:{{interop}}:t:{GO_MEMBER}")), "Go's member is deleted");
    assert!(!exists(&redis, "asynq:{interop}:g:g1"));
    assert!(!is_member(&redis, "asynq:{interop}:groups", "g1"));
    assert!(zset(&redis, "asynq:{interop}:aggregation_sets").is_empty());
    let info = broker.queue_info(&QueueName::from_static("interop")).await.unwrap();
    assert_eq!((info.aggregating, info.groups), (0, 0));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregation_sets_follow_go_key_layout_through_check_reclaim_and_completion() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let client = Client::new(broker.clone()).with_clock(Arc::new(clock.clone()));
    let first = client.enqueue(&Task::new("t", "1"), TaskOptions::new().queue("q").group("g")).await.unwrap();
    clock.advance(Duration::from_secs(3));
    let second = client.enqueue(&Task::new("t", "2"), TaskOptions::new().queue("q").group("g")).await.unwrap();
    clock.advance(Duration::from_secs(60));
    let joined = BTreeMap::from([
        (first.id.to_string(), FIXTURE_TIME.to_string()),
        (second.id.into_string(), (FIXTURE_TIME + 3).to_string()),
    ]);

    // The check moves the members, scores kept, into asynq:{q}:g:<group>:<set id>, indexed by
    // its deadline, and unregisters the emptied group.
    let set_id = broker
        .aggregation_check(&QueueName::from_static("q"), &GroupName::from_static("g"), AggregationLimits::default())
        .await
        .unwrap()
        .expect("ready");
    let set_key = format!("asynq:{{q}}:g:g:{set_id}");
    assert_eq!(zset(&redis, &set_key), joined);
    let deadline = unix_secs(clock.now() + AGGREGATION_TIMEOUT);
    assert_eq!(zset(&redis, "asynq:{q}:aggregation_sets"), BTreeMap::from([(set_key.clone(), deadline.to_string())]));
    assert!(!exists(&redis, "asynq:{q}:g:g") && !is_member(&redis, "asynq:{q}:groups", "g"));
    let state = redis.command(&["HGET", &format!("asynq:{{q}}:t:{}", first.id), "state"]).unwrap();
    assert_eq!(state.as_str(), Some("aggregating"));

    // Once stale, the set goes back into the group, scores kept; the group is registered again.
    clock.advance(AGGREGATION_TIMEOUT);
    assert_eq!(broker.reclaim_stale_aggregation_sets(&QueueName::from_static("q")).await.unwrap(), 1);
    assert!(!exists(&redis, &set_key) && zset(&redis, "asynq:{q}:aggregation_sets").is_empty());
    assert_eq!(zset(&redis, "asynq:{q}:g:g"), joined);
    assert!(is_member(&redis, "asynq:{q}:groups", "g"));

    // A set Go wrote for a server that then died is reclaimed, read and completed alike.
    let go_set = "asynq:{q}:g:g:0b6f4c6e-8d5e-4a36-9d5a-2a7f4c3c9b11";
    let go_deadline = (unix_secs(clock.now()) + 120).to_string();
    redis.command(&["ZADD", go_set, &FIXTURE_TIME.to_string(), &first.id]).unwrap();
    redis.command(&["ZREM", "asynq:{q}:g:g", &first.id]).unwrap();
    redis.command(&["ZADD", "asynq:{q}:aggregation_sets", &go_deadline, go_set]).unwrap();
    let read = broker
        .read_aggregation_set(
            &QueueName::from_static("q"),
            &GroupName::from_static("g"),
            "0b6f4c6e-8d5e-4a36-9d5a-2a7f4c3c9b11",
        )
        .await
        .unwrap();
    assert_eq!(read.messages.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), [first.id.as_str()]);
    assert_eq!(unix_secs(read.deadline).to_string(), go_deadline);
    let aggregated = Task::new("t:sum", "1");
    let request =
        resolve_enqueue(&aggregated, &TaskOptions::new().queue("q").task_id("sum"), clock.now(), String::new).unwrap();
    broker
        .complete_aggregation(
            &QueueName::from_static("q"),
            &GroupName::from_static("g"),
            "0b6f4c6e-8d5e-4a36-9d5a-2a7f4c3c9b11",
            request,
        )
        .await
        .unwrap();
    assert!(!exists(&redis, go_set) && zset(&redis, "asynq:{q}:aggregation_sets").is_empty());
    assert!(!exists(&redis, &format!("asynq:{{q}}:t:{}", first.id)));
    let pending = redis.command(&["LRANGE", "asynq:{q}:pending", "0", "-1"]).unwrap();
    assert_eq!(pending.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>(), ["sum"]);
    assert_eq!(
        broker.groups(&QueueName::from_static("q")).await.unwrap().len(),
        1,
        "the other member still waits in its group"
    );
    assert!(is_member(&redis, "asynq:queues", "q"));
}

/// The group index (ours) follows the writers that do not keep it: a group a Go producer
/// registered and one it added to, and one a Go server or CLI emptied and unregistered, are
/// reconciled by the next `ready_groups`, which finds the index and Go's set of groups apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_index_is_reconciled_with_what_go_wrote() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let client = Client::new(broker.clone()).with_clock(Arc::new(clock.clone()));
    for group in ["a", "b"] {
        client.enqueue(&Task::new("t", group), TaskOptions::new().queue("q").group(group)).await.unwrap();
    }
    assert_eq!(
        zset(&redis, "asynq:{q}:groups:size"),
        BTreeMap::from([("a".into(), "1".into()), ("b".into(), "1".into())])
    );
    assert_eq!(redis.command(&["GET", "asynq:{q}:groups:tasks"]).unwrap().as_str(), Some("2"));

    // What Go's producer, server and CLI write, none of which keeps the index.
    let joined = FIXTURE_TIME.to_string();
    redis.command(&["ZADD", "asynq:{q}:g:c", &joined, "go-c"]).unwrap();
    redis.command(&["SADD", "asynq:{q}:groups", "c"]).unwrap();
    redis.command(&["ZADD", "asynq:{q}:g:a", &joined, "go-a"]).unwrap();
    redis.command(&["DEL", "asynq:{q}:g:b"]).unwrap();
    redis.command(&["SREM", "asynq:{q}:groups", "b"]).unwrap();

    let q = QueueName::from_static("q");
    let by_size = AggregationLimits { max_size: Some(2), ..AggregationLimits::default() };
    let named = broker.ready_groups(&q, by_size, 10).await.unwrap();
    assert_eq!(named, [GroupName::from_static("a")], "the size Go's producer added to is reconciled");
    assert_eq!(
        zset(&redis, "asynq:{q}:groups:size"),
        BTreeMap::from([("a".into(), "2".into()), ("c".into(), "1".into())])
    );
    assert_eq!(zset(&redis, "asynq:{q}:groups:oldest").len(), 2);
    assert_eq!(redis.command(&["GET", "asynq:{q}:groups:tasks"]).unwrap().as_str(), Some("3"));
    clock.advance(Duration::from_secs(60));
    let mut named = broker.ready_groups(&q, AggregationLimits::default(), 10).await.unwrap();
    named.sort();
    assert_eq!(named, [GroupName::from_static("a"), GroupName::from_static("c")]);
    let info = broker.queue_info(&q).await.unwrap();
    assert_eq!((info.groups, info.aggregating), (2, 3));
    assert!(!exists(&redis, "asynq:{q}:groups:scan"), "cursors at the start leave no key behind");
}

/// Past 100 groups an operator's count of aggregating tasks reads the group index, which Go's
/// producers do not keep: a queue whose groups only Go wrote is counted right on the first
/// read all the same (the read brings the index in step, in bounded calls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_count_the_groups_only_go_wrote() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SimulatedClock::new(from_unix_secs(FIXTURE_TIME)))).await;
    let joined = FIXTURE_TIME.to_string();
    // What Go's producer writes for 150 groups of 2 tasks (addToGroup, spec 5.4), never our index.
    redis.command(&["SADD", "asynq:queues", "q"]).unwrap();
    for group in 0..150 {
        for member in 0..2 {
            let (group, id) = (format!("g{group}"), format!("go-{group}-{member}"));
            redis.command(&["HSET", &format!("asynq:{{q}}:t:{id}"), "state", "aggregating", "group", &group]).unwrap();
            redis.command(&["ZADD", &format!("asynq:{{q}}:g:{group}"), &joined, &id]).unwrap();
            redis.command(&["SADD", "asynq:{q}:groups", &group]).unwrap();
        }
    }
    let info = broker.queue_info(&QueueName::from_static("q")).await.unwrap();
    assert_eq!((info.groups, info.aggregating), (150, 300));
    assert_eq!(redis.command(&["GET", "asynq:{q}:groups:tasks"]).unwrap().as_str(), Some("300"));
}
