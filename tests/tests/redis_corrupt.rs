//! Corrupt task data in Redis, written directly beside good tasks: a `msg` that does not decode
//! (bad bytes, a string field holding invalid UTF-8 as a buggy Go-format writer could store), a
//! `msg` naming another task, task hashes without `msg` or `state`, IDs without a task hash in
//! the pending list, the scheduled set and the lease set, and a task hash no container lists.
//!
//! What the Redis broker does with each (its `archive_corrupt.lua` says why): a `msg` that cannot
//! be run is archived as it is; an ID with no `msg` to archive is dropped from its container
//! together with its stub hash; a hash without `state` runs; a hash no container lists is left
//! alone (nothing but a keyspace scan would find it, and Go's server does not look either). Every
//! archive or drop is an error log naming the queue, the task ID and what is wrong, the good
//! tasks all run, and nothing stays active.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::broker::{Dequeue, Inspect, Recover};
use asynq_core::{Clock, SystemClock};
use asynq_redis::keys::QueueKeys;
use asynq_redis::proto;
use asynq_server::{Config, Server};
use asynq_tests::{CapturedLogs, Recorder, RedisServer, capture_logs, redis_broker, wait_for};
use prost::Message;
use std::sync::Arc;
use std::time::Duration;

/// Everything logged in this test binary at WARN or above.
fn logs() -> &'static CapturedLogs {
    capture_logs(tracing::Level::WARN)
}

/// The ERROR lines logged so far that mention `queue` and `id`.
fn errors_naming(queue: &str, id: &str) -> Vec<String> {
    let text = logs().text();
    text.lines()
        .filter(|l| l.contains(" ERROR ") && l.contains(&format!("queue={queue}")) && l.contains(id))
        .map(str::to_owned)
        .collect()
}

/// A well-formed encoded message for task `id` of `queue`.
fn good_msg(id: &str, queue: &str) -> Vec<u8> {
    proto::TaskMessage {
        r#type: "good".into(),
        id: id.into(),
        queue: queue.into(),
        retry: 25,
        timeout: 1800,
        ..Default::default()
    }
    .encode_to_vec()
}

/// `good_msg` followed by a second `type` field (tag 1) holding invalid UTF-8: protobuf keeps the
/// last value of a scalar field, so a decoder meets the invalid string.
fn invalid_utf8_msg(id: &str, queue: &str) -> Vec<u8> {
    let mut bytes = good_msg(id, queue);
    bytes.extend_from_slice(&[0x0a, 0x02, 0xff, 0xfe]);
    bytes
}

/// Sends one command, panicking with the reply on failure.
fn redis_do(redis: &RedisServer, args: &[&[u8]]) {
    redis.command(args).unwrap_or_else(|e| panic!("{:?}: {e}", args.first().map(|a| String::from_utf8_lossy(a))));
}

/// Whether `key` exists.
fn exists(redis: &RedisServer, key: &str) -> bool {
    redis.command(&["EXISTS", key]).unwrap().as_int() == Some(1)
}

/// The members of the sorted set or list `key`.
fn members(redis: &RedisServer, key: &str, list: bool) -> Vec<String> {
    let reply = if list {
        redis.command(&["LRANGE", key, "0", "-1"]).unwrap()
    } else {
        redis.command(&["ZRANGE", key, "0", "-1"]).unwrap()
    };
    reply.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

/// A server configuration with short intervals, so the real-time test finishes quickly.
fn fast_config(queue: &str) -> Config {
    Config {
        concurrency: 4,
        queues: [(queue.to_owned(), 1)].into(),
        task_check_interval: Duration::from_millis(20),
        delayed_task_check_interval: Duration::from_millis(50),
        retry_delay: Arc::new(|_, _, _| Duration::from_secs(3600)),
        ..Config::default()
    }
}

#[test]
fn a_string_field_with_invalid_utf8_does_not_decode() {
    // What Go's runtime refuses (spec 3.7), prost refuses too, so such a task is corrupt for both.
    let err = proto::TaskMessage::decode(invalid_utf8_msg("x", "q").as_slice()).unwrap_err();
    assert!(err.to_string().contains("UTF-8"), "{err}");
    assert!(proto::TaskMessage::decode(good_msg("x", "q").as_slice()).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_archives_or_drops_corrupt_tasks_and_runs_the_good_ones() {
    logs();
    let queue = "corrupt";
    let k = QueueKeys::new(queue);
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let broker = redis_broker(&redis.url(), Arc::clone(&clock)).await;
    let client = Client::new(broker.clone());
    for i in 0..5 {
        client.enqueue(&Task::new("good", format!("{i}")), TaskOptions::new().queue(queue)).await.unwrap();
    }
    let (pending, active, lease, scheduled) = (k.pending(), k.active(), k.lease(), k.scheduled());
    let task = |id: &str| k.task(id);
    let push = |container: &str, id: &str| redis_do(&redis, &[b"LPUSH", container.as_bytes(), id.as_bytes()]);
    let hset = |id: &str, fields: &[(&str, &[u8])]| {
        let key = task(id);
        let mut args: Vec<&[u8]> = vec![b"HSET", key.as_bytes()];
        for (field, value) in fields {
            args.extend([field.as_bytes(), *value]);
        }
        redis_do(&redis, &args);
    };
    // Pending: corrupt messages, hashes missing fields, an ID without a hash.
    let bad_bytes: &[u8] = b"\xff\xff\xff\xff";
    hset("bad-bytes", &[("msg", bad_bytes), ("state", b"pending")]);
    hset("bad-utf8", &[("msg", &invalid_utf8_msg("bad-utf8", queue)), ("state", b"pending")]);
    hset("wrong-id", &[("msg", &good_msg("someone-else", queue)), ("state", b"pending")]);
    hset("no-msg", &[("state", b"pending")]);
    hset("no-state", &[("msg", &good_msg("no-state", queue))]);
    for id in ["bad-bytes", "bad-utf8", "wrong-id", "no-msg", "no-state", "no-hash"] {
        push(&pending, id);
    }
    // A due scheduled ID without a hash: the forwarder moves it to pending, the processor drops it.
    redis_do(&redis, &[b"ZADD", scheduled.as_bytes(), b"1", b"ghost-scheduled"]);
    // Active with an expired lease (a dead worker's): a corrupt message, Go's stub hash holding
    // only `state` (its dequeue quirk, spec 16), an ID without a hash, and a good task.
    hset("active-bad", &[("msg", bad_bytes), ("state", b"active")]);
    hset("active-stub", &[("state", b"active")]);
    hset("active-good", &[("msg", &good_msg("active-good", queue)), ("state", b"active")]);
    for id in ["active-bad", "active-stub", "active-nohash", "active-good"] {
        push(&active, id);
        redis_do(&redis, &[b"ZADD", lease.as_bytes(), b"1", id.as_bytes()]);
    }
    // A hash no container lists.
    hset("orphan", &[("msg", &good_msg("orphan", queue)), ("state", b"pending")]);

    let rec = Recorder::default();
    let mut server = Server::new(broker.clone(), fast_config(queue)).unwrap();
    server.start(rec.handler(Arc::clone(&clock), |_, _| async { Ok(()) })).unwrap();
    // The 5 good tasks and `no-state` run, and the recoverer sends `active-good` to retry (due in
    // an hour), which counts it as processed too.
    wait_for("the good tasks run and the corrupt ones are settled", || async {
        let info = broker.queue_info(queue).await.unwrap();
        info.processed_total == 7
            && info.scheduled == 0
            && info.pending == 0
            && info.active == 0
            && info.archived == 4
            && info.retry == 1
    })
    .await;
    let ran: Vec<String> = rec.calls().into_iter().map(|c| c.id).collect();
    assert!(ran.contains(&"no-state".to_owned()), "{ran:?}");
    assert_eq!(ran.len(), 6, "{ran:?}");

    // The undecodable messages are archived byte for byte; nothing is left active or leased.
    let mut archived = members(&redis, &k.archived(), false);
    archived.sort();
    assert_eq!(archived, ["active-bad", "bad-bytes", "bad-utf8", "wrong-id"]);
    for id in &archived {
        assert_eq!(redis.command(&["HGET", &task(id), "state"]).unwrap().as_str(), Some("archived"), "{id}");
    }
    assert_eq!(
        redis.command(&["HGET", &task("bad-bytes"), "msg"]).unwrap(),
        asynq_tests::RespValue::Bulk(bad_bytes.to_vec())
    );
    assert_eq!(members(&redis, &active, true), Vec::<String>::new());
    assert_eq!(members(&redis, &lease, false), Vec::<String>::new());
    assert_eq!(members(&redis, &k.retry(), false), ["active-good"]);
    // What had no message is gone, stub hashes included; the unlisted hash is untouched.
    for id in ["no-msg", "no-hash", "ghost-scheduled", "active-stub", "active-nohash"] {
        assert!(!exists(&redis, &task(id)), "{id}");
    }
    assert_eq!(redis.command(&["HGET", &task("orphan"), "state"]).unwrap().as_str(), Some("pending"));

    // Each is named in an error log with what is wrong.
    let expect = [
        ("bad-bytes", "cannot be decoded"),
        ("bad-utf8", "UTF-8"),
        ("wrong-id", "someone-else"),
        ("active-bad", "cannot be decoded"),
        ("no-msg", "missing or has no msg"),
        ("no-hash", "missing or has no msg"),
        ("ghost-scheduled", "missing or has no msg"),
        ("active-stub", "missing or has no msg"),
        ("active-nohash", "missing or has no msg"),
    ];
    for (id, what) in expect {
        let lines = errors_naming(queue, id);
        assert_eq!(lines.len(), 1, "one error naming {id}: {lines:#?}");
        assert!(lines[0].contains(what), "{id}: {}", lines[0]);
    }

    // The server goes on processing.
    client.enqueue(&Task::new("good", "after"), TaskOptions::new().queue(queue).task_id("after")).await.unwrap();
    wait_for("a task enqueued afterwards runs", || async { rec.calls().iter().any(|c| c.id == "after") }).await;
    let info = broker.task_info(queue, "bad-utf8").await;
    assert!(info.is_err(), "an undecodable archived task cannot be read: {info:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_calls_return_only_runnable_tasks_and_settle_the_rest_once() {
    logs();
    let queue = "direct";
    let k = QueueKeys::new(queue);
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let client = Client::new(broker.clone());
    client.enqueue(&Task::new("good", "1"), TaskOptions::new().queue(queue).task_id("good-1")).await.unwrap();
    let key = k.task("bad");
    redis_do(&redis, &[b"HSET", key.as_bytes(), b"msg", b"\x0a\xff", b"state", b"pending"]);
    redis_do(&redis, &[b"LPUSH", k.pending().as_bytes(), b"bad"]);
    client.enqueue(&Task::new("good", "2"), TaskOptions::new().queue(queue).task_id("good-2")).await.unwrap();

    // Asking for every slot: the corrupt task in the middle is archived, not returned.
    let queues = [queue.to_owned()];
    let taken = broker.dequeue(&queues, 10).await.unwrap();
    let ids: Vec<&str> = taken.iter().map(|d| d.message.id.as_str()).collect();
    assert_eq!(ids, ["good-1", "good-2"]);
    assert_eq!(members(&redis, &k.archived(), false), ["bad"]);
    assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
    assert_eq!(errors_naming(queue, "bad").len(), 1);

    // The recoverer's listing skips and settles an expired corrupt task, once.
    redis_do(&redis, &[b"HSET", key.as_bytes(), b"msg", b"\x0a\xff", b"state", b"active"]);
    redis_do(&redis, &[b"ZREM", k.archived().as_bytes(), b"bad"]);
    redis_do(&redis, &[b"LPUSH", k.active().as_bytes(), b"bad"]);
    redis_do(&redis, &[b"ZADD", k.lease().as_bytes(), b"1", b"bad"]);
    let far = std::time::SystemTime::now() + Duration::from_secs(3600);
    let expired: Vec<String> =
        broker.list_lease_expired(&queues, far).await.unwrap().into_iter().map(|m| m.message.id).collect();
    assert_eq!(expired, ["good-1", "good-2"]);
    let expired = broker.list_lease_expired(&queues, far).await.unwrap();
    assert_eq!(expired.len(), 2);
    assert_eq!(members(&redis, &k.archived(), false), ["bad"]);
    assert_eq!(errors_naming(queue, "bad").len(), 2);
}
