//! The `Inspector` on Redis: it reads and acts on the queues Go asynq v0.26 wrote
//! (`tests/fixtures/go-asynq/`), leaving what Go's Inspector scripts leave; and it
//! describes the backend on a single server, a Cluster and behind Sentinel.

use asynq_client::{Client, Error, Inspector, Page, Task, TaskOptions, TaskSet, TaskState};
use asynq_core::GroupName;
use asynq_core::SimulatedClock;
use asynq_core::time::from_unix_secs;
use asynq_redis::proto;
use asynq_tests::{RedisCluster, RedisSentinel, RedisServer, RespValue, load_fixture, read_fixture, redis_broker};
use prost::Message;
use std::sync::Arc;
use std::time::Duration;

/// A moment shortly after Go wrote both fixtures (2026-11-22T03:24:56Z, plus a minute).
const NOW: i64 = 1_795_317_956;
/// Go's tasks in `v0.26.0-enqueued.json`, queue `interop`.
const IMMEDIATE: &str = "4b44e079-4d60-4ce2-b4e4-983ec677a4de";
const UNIQUE: &str = "db1ba5b6-3b97-452d-b4a6-6aa70ac83140";
const SCHEDULED: &str = "42e783fc-ff38-4621-8d9d-a704dc91a525";
const GROUPED: &str = "6677ab5c-2c3e-4128-aa83-5bd227cae320";
const UNIQUE_LOCK: &str = "asynq:{interop}:unique:interop:unique:e34bfc4fa54af4601f41bd50b9214f56";

/// A redis-server holding both Go fixtures, and an inspector on it whose clock reads [`NOW`].
async fn go_data() -> (RedisServer, Inspector, SimulatedClock) {
    let redis = RedisServer::start();
    load_fixture(&redis, &read_fixture("v0.26.0-enqueued.json"));
    load_fixture(&redis, &read_fixture("v0.26.0-processed.json"));
    let clock = SimulatedClock::new(from_unix_secs(NOW));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    (redis, Inspector::new(broker), clock)
}

fn text(value: RespValue) -> Option<String> {
    value.as_str().map(str::to_owned)
}

fn cmd(redis: &RedisServer, args: &[&str]) -> RespValue {
    redis.command(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The IDs of a list, head first, or of a sorted set with their scores.
fn list(redis: &RedisServer, key: &str) -> Vec<String> {
    let items = cmd(redis, &["LRANGE", key, "0", "-1"]);
    items.as_array().unwrap_or_default().iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

fn zscore(redis: &RedisServer, key: &str, member: &str) -> Option<i64> {
    text(cmd(redis, &["ZSCORE", key, member])).map(|s| s.parse().expect("an integral score"))
}

fn hget(redis: &RedisServer, key: &str, field: &str) -> Option<String> {
    text(cmd(redis, &["HGET", key, field]))
}

#[tokio::test]
async fn the_inspector_reads_what_go_wrote() {
    let (_redis, inspector, _clock) = go_data().await;
    assert_eq!(inspector.queues().await.unwrap(), ["interop", "interop-processed"]);

    let info = inspector.queue_info("interop").await.unwrap();
    assert_eq!((info.pending, info.scheduled, info.aggregating, info.groups, info.size), (4, 1, 1, 1, 6));
    assert!(info.memory_usage > 0, "{info:?}");
    let processed = inspector.queue_info("interop-processed").await.unwrap();
    assert_eq!((processed.retry, processed.archived, processed.completed), (1, 2, 1));
    assert_eq!(
        (processed.processed, processed.failed, processed.processed_total, processed.failed_total),
        (5, 3, 5, 3)
    );
    assert!(processed.memory_usage > 0, "{processed:?}");

    let task = inspector.task_info("interop", "fixed-id").await.unwrap();
    assert_eq!((task.type_name.as_str(), task.state), ("interop:taskid", TaskState::Pending));
    let retry = inspector.task_info("interop-processed", "fail-retry").await.unwrap();
    assert_eq!(retry.state, TaskState::Retry);
    assert_eq!(retry.next_process_at, Some(from_unix_secs(1_795_321_499)));

    // Pending in processing order: the right end of Go's list first.
    let pending = inspector.list_tasks("interop", TaskState::Pending, Page::default()).await.unwrap();
    let types: Vec<&str> = pending.iter().map(|t| t.type_name.as_str()).collect();
    assert_eq!(types, ["interop:immediate", "interop:unique", "interop:retention", "interop:taskid"]);
    let second = inspector.list_tasks("interop", TaskState::Pending, Page { size: 3, number: 1 }).await.unwrap();
    assert_eq!(second.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["fixed-id"]);
    let archived = inspector.list_tasks("interop-processed", TaskState::Archived, Page::default()).await.unwrap();
    assert_eq!(archived.len(), 2);
    let grouped = inspector.list_group_tasks("interop", "g1", Page::default()).await.unwrap();
    assert_eq!(
        grouped.iter().map(|t| (t.id.as_str(), t.state)).collect::<Vec<_>>(),
        [(GROUPED, TaskState::Aggregating)]
    );
    assert!(inspector.list_group_tasks("interop", "nope", Page::default()).await.unwrap().is_empty());

    let history = inspector.history("interop-processed", 2).await.unwrap();
    let days: Vec<(&str, u64, u64)> = history.iter().map(|d| (d.date.as_str(), d.processed, d.failed)).collect();
    assert_eq!(days, [("2026-11-22", 5, 3), ("2026-11-21", 0, 0)]);
    assert!(matches!(inspector.history("interop", 0).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(inspector.history("nope", 1).await, Err(Error::QueueNotFound { .. })));
    assert!(matches!(inspector.queue_location("interop").await, Ok(None)));
}

#[tokio::test]
async fn running_a_go_task_leaves_what_gos_run_task_leaves() {
    let (redis, inspector, _clock) = go_data().await;
    let q = "interop-processed";
    inspector.run_task(q, "fail-retry").await.unwrap();
    let task = "asynq:{interop-processed}:t:fail-retry";
    assert_eq!(hget(&redis, task, "state").as_deref(), Some("pending"));
    // As in Go, run does not set pending_since.
    assert_eq!(hget(&redis, task, "pending_since"), None);
    assert_eq!(list(&redis, "asynq:{interop-processed}:pending"), ["fail-retry"]);
    assert_eq!(zscore(&redis, "asynq:{interop-processed}:retry", "fail-retry"), None);
    let again = inspector.run_task(q, "fail-retry").await;
    assert!(
        matches!(&again, Err(Error::FailedPrecondition(m)) if m == "task is already in pending state"),
        "{again:?}"
    );

    // A completed task goes back to pending too (observed on Go), keeping its result.
    inspector.run_task(q, "ok-retained").await.unwrap();
    assert_eq!(list(&redis, "asynq:{interop-processed}:pending"), ["ok-retained", "fail-retry"]);
    assert_eq!(inspector.queue_info(q).await.unwrap().completed, 0);

    // A whole group: its tasks become pending and the group name leaves the set.
    assert_eq!(inspector.run_all("interop", &TaskSet::Group(GroupName::from_static("g1"))).await.unwrap(), 1);
    assert_eq!(list(&redis, "asynq:{interop}:pending").first().map(String::as_str), Some(GROUPED));
    assert_eq!(cmd(&redis, &["SCARD", "asynq:{interop}:groups"]).as_int(), Some(0));
    assert_eq!(cmd(&redis, &["EXISTS", "asynq:{interop}:g:g1"]).as_int(), Some(0));
    assert!(matches!(inspector.run_task(q, "missing").await, Err(Error::TaskNotFound { .. })));
    assert!(matches!(inspector.run_task("nope", "fail-retry").await, Err(Error::QueueNotFound { .. })));
}

#[tokio::test]
async fn archiving_a_go_task_leaves_what_gos_archive_task_leaves() {
    let (redis, inspector, _clock) = go_data().await;
    let key = format!("asynq:{{interop}}:t:{SCHEDULED}");
    let msg_before = cmd(&redis, &["HGET", &key, "msg"]);
    inspector.archive_task("interop", SCHEDULED).await.unwrap();
    assert_eq!(hget(&redis, &key, "state").as_deref(), Some("archived"));
    // The archive time is the score; the message is not modified (Go's archiveTask).
    assert_eq!(zscore(&redis, "asynq:{interop}:archived", SCHEDULED), Some(NOW));
    assert_eq!(zscore(&redis, "asynq:{interop}:scheduled", SCHEDULED), None);
    assert_eq!(cmd(&redis, &["HGET", &key, "msg"]), msg_before);

    // A pending task leaves the list; the uniqueness lock is kept.
    inspector.archive_task("interop", UNIQUE).await.unwrap();
    assert!(!list(&redis, "asynq:{interop}:pending").contains(&UNIQUE.to_owned()));
    assert_eq!(text(cmd(&redis, &["GET", UNIQUE_LOCK])).as_deref(), Some(UNIQUE));

    let twice = inspector.archive_task("interop", UNIQUE).await;
    let expected = format!("task is already archived: id={UNIQUE}, queue=interop");
    assert!(matches!(&twice, Err(Error::FailedPrecondition(m)) if *m == expected), "{twice:?}");

    // Archiving every pending task empties the list; Go's counters do not move.
    assert_eq!(inspector.archive_all("interop", &TaskSet::State(TaskState::Pending)).await.unwrap(), 3);
    assert_eq!(cmd(&redis, &["EXISTS", "asynq:{interop}:pending"]).as_int(), Some(0));
    assert_eq!(zscore(&redis, "asynq:{interop}:archived", IMMEDIATE), Some(NOW));
    assert_eq!(cmd(&redis, &["EXISTS", "asynq:{interop}:processed"]).as_int(), Some(0));
    assert_eq!(inspector.queue_info("interop").await.unwrap().archived, 5);
}

#[tokio::test]
async fn deleting_a_go_task_releases_its_lock() {
    let (redis, inspector, _clock) = go_data().await;
    inspector.delete_task("interop", UNIQUE).await.unwrap();
    assert_eq!(cmd(&redis, &["EXISTS", &format!("asynq:{{interop}}:t:{UNIQUE}")]).as_int(), Some(0));
    assert_eq!(cmd(&redis, &["EXISTS", UNIQUE_LOCK]).as_int(), Some(0));
    assert_eq!(list(&redis, "asynq:{interop}:pending").len(), 3);
    assert!(matches!(inspector.delete_task("interop", UNIQUE).await, Err(Error::TaskNotFound { .. })));

    // Deleting the archive removes the hashes with the set.
    assert_eq!(inspector.delete_all("interop-processed", &TaskSet::State(TaskState::Archived)).await.unwrap(), 2);
    assert_eq!(cmd(&redis, &["EXISTS", "asynq:{interop-processed}:t:fail-archive"]).as_int(), Some(0));
    assert_eq!(cmd(&redis, &["EXISTS", "asynq:{interop-processed}:archived"]).as_int(), Some(0));

    // A queue holding tasks is removed only by force; completed tasks and counters stay (Go).
    let refused = inspector.delete_queue("interop-processed", false).await;
    assert!(matches!(refused, Err(Error::QueueNotEmpty { .. })), "{refused:?}");
    inspector.delete_queue("interop-processed", true).await.unwrap();
    assert_eq!(inspector.queues().await.unwrap(), ["interop"]);
    assert_eq!(cmd(&redis, &["EXISTS", "asynq:{interop-processed}:t:fail-retry"]).as_int(), Some(0));
    assert_eq!(cmd(&redis, &["EXISTS", "asynq:{interop-processed}:t:ok-retained"]).as_int(), Some(1));
    assert!(matches!(inspector.queue_info("interop-processed").await, Err(Error::QueueNotFound { .. })));
}

#[tokio::test]
async fn a_go_scheduled_task_gets_a_new_payload_and_keeps_the_rest() {
    let (redis, inspector, _clock) = go_data().await;
    let key = format!("asynq:{{interop}}:t:{SCHEDULED}");
    let decode = |value: RespValue| match value {
        RespValue::Bulk(bytes) => proto::TaskMessage::decode(bytes.as_slice()).expect("a task message"),
        other => panic!("not a message: {other:?}"),
    };
    let before = decode(cmd(&redis, &["HGET", &key, "msg"]));
    let info = inspector.update_task_payload("interop", SCHEDULED, &b"{\"new\":1}"[..]).await.unwrap();
    assert_eq!((info.state, info.payload.as_ref()), (TaskState::Scheduled, &b"{\"new\":1}"[..]));
    assert_eq!(info.next_process_at, Some(from_unix_secs(1_795_321_496)));
    let after = decode(cmd(&redis, &["HGET", &key, "msg"]));
    assert_eq!(proto::TaskMessage { payload: before.payload.clone(), ..after.clone() }, before);
    assert_eq!(hget(&redis, &key, "state").as_deref(), Some("scheduled"));
    let pending = inspector.update_task_payload("interop", IMMEDIATE, &b"x"[..]).await;
    assert!(
        matches!(&pending, Err(Error::FailedPrecondition(m)) if m == "cannot update task that is not in scheduled state."),
        "{pending:?}"
    );
}

#[tokio::test]
async fn a_single_server_describes_itself() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SimulatedClock::new(from_unix_secs(NOW)))).await;
    let info = Inspector::new(broker).backend_info().await.unwrap();
    assert_eq!(info.kind, "redis");
    let version = redis.info("server").unwrap().get("redis_version").cloned();
    assert_eq!(info.fields.get("redis_version"), version.as_ref());
    assert!(info.fields.contains_key("used_memory_human"), "{info:?}");
    assert_eq!(info.nodes.iter().map(|n| n.addr.as_str()).collect::<Vec<_>>(), [redis.addr()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_describes_itself_and_where_a_queue_lives() {
    let cluster = RedisCluster::start(3);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    let clock = Arc::new(SimulatedClock::new(from_unix_secs(NOW)));
    let broker = redis_broker(&url, clock.clone()).await;
    let inspector = Inspector::new(broker.clone());
    let client = Client::new(broker).with_clock(clock);

    let info = inspector.backend_info().await.unwrap();
    assert_eq!(info.kind, "redis-cluster");
    assert_eq!(info.fields.get("cluster_state").map(String::as_str), Some("ok"));
    assert_eq!(info.fields.get("cluster_known_nodes").map(String::as_str), Some("3"));
    assert!(info.fields.contains_key("redis_version"), "{info:?}");
    let mut addrs: Vec<String> = info.nodes.iter().map(|n| n.addr.clone()).collect();
    addrs.sort();
    let mut expected = cluster.addrs();
    expected.sort();
    assert_eq!(addrs, expected);
    assert!(info.nodes.iter().all(|n| n.id.len() == 40), "{info:?}");

    for queue in ["default", "critical", "reports"] {
        client.enqueue(&Task::new("t", "p"), TaskOptions::new().queue(queue)).await.unwrap();
        let location = inspector.queue_location(queue).await.unwrap().expect("a Cluster has locations");
        let key = format!("asynq:{{{queue}}}:pending");
        let slot = cluster.nodes()[0].command(&["CLUSTER", "KEYSLOT", key.as_str()]).unwrap().as_int();
        assert_eq!(Some(i64::from(location.slot)), slot);
        assert_eq!(location.nodes.first().map(|n| n.addr.clone()), Some(cluster.node_for_slot(location.slot).addr()));
        // The queue's tasks are on that node.
        let len = cluster.node_for_slot(location.slot).command(&["LLEN", key.as_str()]).unwrap().as_int();
        assert_eq!(len, Some(1));
    }
    assert!(matches!(inspector.queue_location("nope").await, Err(Error::QueueNotFound { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_behind_sentinel_describes_itself() {
    let sentinel = RedisSentinel::start("inspector");
    let url = format!("redis-sentinel://{}?master={}", sentinel.sentinel_addr(), sentinel.master_name());
    let broker = redis_broker(&url, Arc::new(SimulatedClock::new(from_unix_secs(NOW)))).await;
    let info = Inspector::new(broker).backend_info().await.unwrap();
    assert_eq!(info.kind, "redis-sentinel");
    assert_eq!(info.fields.get("role").map(String::as_str), Some("master"));
    assert_eq!(info.nodes.iter().map(|n| n.addr.as_str()).collect::<Vec<_>>(), [sentinel.master().addr()]);
}

#[tokio::test]
async fn archiving_trims_old_tasks_with_their_hashes() {
    let (redis, inspector, clock) = go_data().await;
    // 91 days on, Go's two archived tasks are past the 90-day limit.
    clock.advance(Duration::from_secs(91 * 24 * 60 * 60));
    inspector.archive_task("interop-processed", "fail-retry").await.unwrap();
    let archived = inspector.list_tasks("interop-processed", TaskState::Archived, Page::default()).await.unwrap();
    assert_eq!(archived.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["fail-retry"]);
    // Unlike Go's Inspector scripts, no orphaned hash is left behind.
    for id in ["fail-archive", "fail-skipretry"] {
        let key = format!("asynq:{{interop-processed}}:t:{id}");
        assert_eq!(cmd(&redis, &["EXISTS", &key]).as_int(), Some(0), "{id}");
    }
}

#[tokio::test]
async fn queue_info_reports_no_memory_where_memory_usage_is_disabled() {
    let redis = RedisServer::start_with(&["--rename-command", "MEMORY", ""]);
    load_fixture(&redis, &read_fixture("v0.26.0-enqueued.json"));
    let broker = redis_broker(&redis.url(), Arc::new(SimulatedClock::new(from_unix_secs(NOW)))).await;
    let info = Inspector::new(broker).queue_info("interop").await.unwrap();
    assert_eq!((info.pending, info.memory_usage), (4, 0));
}

/// A queue's memory estimate (up to about 150 `MEMORY USAGE` calls) is reused for a minute,
/// and past 100 retakes a second an older one is kept: reading every queue's info over and
/// over, as a metrics scrape does, costs Redis a bounded share however many queues there are.
#[tokio::test]
async fn memory_estimates_are_reused_for_a_minute_and_retaken_within_a_budget() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(NOW));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let (client, inspector) = (Client::new(broker.clone()), Inspector::new(broker));
    let queues: Vec<String> = (0..150).map(|n| format!("q{n}")).collect();
    for queue in &queues {
        client.enqueue(&Task::new("t", "payload"), TaskOptions::new().queue(queue)).await.unwrap();
    }
    let estimated = || redis.command_calls("memory|usage");
    let read_all = || async {
        for queue in &queues {
            assert!(inspector.queue_info(queue).await.unwrap().memory_usage > 0, "{queue}");
        }
    };

    read_all().await;
    let first = estimated();
    assert!(first >= 150, "every queue estimated once: {first}");
    clock.advance(Duration::from_secs(59));
    read_all().await;
    assert_eq!(estimated(), first, "every estimate reused within the minute");

    clock.advance(Duration::from_secs(1));
    read_all().await;
    let retaken = estimated() - first;
    assert!(retaken > 0 && retaken <= first * 100 / 150, "100 of 150 retaken in one second: {retaken}");
    clock.advance(Duration::from_secs(1));
    read_all().await;
    assert_eq!(estimated() - first, first, "the other 50 the next second, then all are fresh");
}

/// A listing of aggregating tasks pages through the groups in name order, and within a group by
/// the time each task joined, across more groups than one round trip reads the sizes of; a
/// group whose name our rules refuse (Go registers any non-blank one) is left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregating_tasks_page_through_the_groups_in_name_order() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(NOW));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let (client, inspector) = (Client::new(broker.clone()), Inspector::new(broker));
    // Group g000 holds no task, g001 one, g002 two, g003 three, g004 none again, and so on.
    let size_of = |group: usize| group % 4;
    let groups = 450;
    let mut expected = Vec::new();
    for round in 0..3 {
        let tasks: Vec<_> = (0..groups)
            .filter(|&group| size_of(group) > round)
            .map(|group| {
                let id = format!("g{group:03}-{round}");
                (Task::new("digest", ""), TaskOptions::new().queue("agg").group(format!("g{group:03}")).task_id(id))
            })
            .collect();
        for chunk in tasks.chunks(100) {
            assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
        }
        clock.advance(Duration::from_secs(1));
    }
    for group in 0..groups {
        expected.extend((0..size_of(group)).map(|round| format!("g{group:03}-{round}")));
    }
    cmd(&redis, &["SADD", "asynq:{agg}:groups", "bad\u{1}name"]);
    cmd(&redis, &["ZADD", "asynq:{agg}:g:bad\u{1}name", "1", "stray"]);

    let mut listed = Vec::new();
    for number in 0.. {
        let page = inspector.list_tasks("agg", TaskState::Aggregating, Page { size: 7, number }).await.unwrap();
        assert!(page.iter().all(|task| task.state == TaskState::Aggregating && task.group.is_some()));
        if page.is_empty() {
            break;
        }
        listed.extend(page.into_iter().map(|task| task.id.into_string()));
    }
    assert_eq!(listed.len(), expected.len());
    assert_eq!(listed, expected);
}
