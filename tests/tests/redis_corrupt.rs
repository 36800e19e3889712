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
//!
//! Messages that decode but hold absurd values run too: numbers at the ends of their types
//! (`timeout`, `deadline`, `retention`, `retry`, `retried`, `completed_at`, `last_failed_at`) are
//! clamped where they are read (asynq-core's `MAX_DURATION` and `time::MAX_UNIX_SECS`), and a
//! `unique_key` naming a list, a hash, another queue's key or a non-lock key of the queue fails no
//! settle (alone or in a `done_batch`) and no operator's delete, and is left as it was; an
//! enqueue whose lock key holds another type is a typed error that writes nothing.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::broker::{Dequeue, Inspect, Janitor, Manage, Outcome, Recover};
use asynq_core::{Clock, QueueName, StoredTask, SystemClock, TaskId, TaskState};
use asynq_redis::keys::{Namespace, QueueKeys};
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
    let k = Namespace::DEFAULT.queue(queue);
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
    // The 5 good tasks and `no-state` run, and so does `active-good`: its worker died once, which
    // the recoverer forgives (a first stall), so it goes back to pending charged nothing.
    wait_for("the good tasks run and the corrupt ones are settled", || async {
        let info = broker.queue_info(&QueueName::new(queue).unwrap()).await.unwrap();
        info.processed_total == 7
            && info.scheduled == 0
            && info.pending == 0
            && info.active == 0
            && info.archived == 4
            && info.retry == 0
    })
    .await;
    let ran: Vec<String> = rec.calls().into_iter().map(|c| c.id).collect();
    assert!(ran.contains(&"no-state".to_owned()) && ran.contains(&"active-good".to_owned()), "{ran:?}");
    assert_eq!(ran.len(), 7, "{ran:?}");

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
    assert_eq!(members(&redis, &k.retry(), false), Vec::<String>::new());
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
    let info = broker.task_info(&QueueName::new(queue).unwrap(), &TaskId::from_static("bad-utf8")).await;
    assert!(info.is_err(), "an undecodable archived task cannot be read: {info:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_calls_return_only_runnable_tasks_and_settle_the_rest_once() {
    logs();
    let queue = "direct";
    let k = Namespace::DEFAULT.queue(queue);
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let client = Client::new(broker.clone());
    client.enqueue(&Task::new("good", "1"), TaskOptions::new().queue(queue).task_id("good-1")).await.unwrap();
    let key = k.task("bad");
    redis_do(&redis, &[b"HSET", key.as_bytes(), b"msg", b"\x0a\xff", b"state", b"pending"]);
    redis_do(&redis, &[b"LPUSH", k.pending().as_bytes(), b"bad"]);
    client.enqueue(&Task::new("good", "2"), TaskOptions::new().queue(queue).task_id("good-2")).await.unwrap();

    // Asking for every slot: the corrupt task in the middle is archived, not returned.
    let queues = [QueueName::new(queue).unwrap()];
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
    let expired: Vec<String> = broker
        .list_lease_expired(&queues, far)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.id.into_string())
        .collect();
    assert_eq!(expired, ["good-1", "good-2"]);
    let expired = broker.list_lease_expired(&queues, far).await.unwrap();
    assert_eq!(expired.len(), 2);
    assert_eq!(members(&redis, &k.archived(), false), ["bad"]);
    assert_eq!(errors_naming(queue, "bad").len(), 2);
}

/// A message stored by hand for task `id` of `queue`, with `fields` applied over a good one.
fn msg_with(id: &str, queue: &str, type_name: &str, fields: impl FnOnce(&mut proto::TaskMessage)) -> Vec<u8> {
    let mut msg = proto::TaskMessage {
        r#type: type_name.into(),
        id: id.into(),
        queue: queue.into(),
        retry: 25,
        ..Default::default()
    };
    fields(&mut msg);
    msg.encode_to_vec()
}

/// Stores `msg` as the pending task `id` of `k`'s queue, as `enqueue.lua` does (with the
/// `unique_key` hash field when the message has one).
fn store_pending(redis: &RedisServer, k: &QueueKeys, id: &str, msg: &[u8]) {
    let key = k.task(id);
    let unique_key = proto::TaskMessage::decode(msg).unwrap().unique_key;
    let mut args: Vec<&[u8]> = vec![b"HSET", key.as_bytes(), b"msg", msg, b"state", b"pending"];
    if !unique_key.is_empty() {
        args.extend([&b"unique_key"[..], unique_key.as_bytes()]);
    }
    redis_do(redis, &args);
    redis_do(redis, &[b"LPUSH", k.pending().as_bytes(), id.as_bytes()]);
}

/// The encoding of the stored task `id`'s `msg`.
fn stored_msg(redis: &RedisServer, k: &QueueKeys, id: &str) -> proto::TaskMessage {
    match redis.command(&["HGET", &k.task(id), "msg"]).unwrap() {
        asynq_tests::RespValue::Bulk(bytes) => proto::TaskMessage::decode(bytes.as_slice()).unwrap(),
        other => panic!("no msg for {id}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_runs_tasks_whose_numbers_are_at_the_ends_of_their_types() {
    logs();
    let queue = "extremes";
    let k = Namespace::DEFAULT.queue(queue);
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let broker = redis_broker(&redis.url(), Arc::clone(&clock)).await;
    let client = Client::new(broker.clone());
    let start = asynq_core::time::unix_secs(clock.now());
    // Each once made a worker panic, or a completed task expire at once.
    let stored = [
        ("timeout-max", msg_with("timeout-max", queue, "ok", |m| m.timeout = i64::MAX)),
        ("timeout-near-max", msg_with("timeout-near-max", queue, "ok", |m| m.timeout = i64::MAX - 1)),
        ("timeout-min", msg_with("timeout-min", queue, "ok", |m| m.timeout = i64::MIN)),
        ("deadline-max", msg_with("deadline-max", queue, "ok", |m| (m.timeout, m.deadline) = (i64::MAX, i64::MAX))),
        (
            "retention-max",
            msg_with("retention-max", queue, "ok", |m| {
                (m.timeout, m.retention, m.completed_at, m.last_failed_at) = (i64::MAX, i64::MAX, i64::MIN, i64::MAX)
            }),
        ),
        ("retried-max", msg_with("retried-max", queue, "fail", |m| (m.retry, m.retried) = (i32::MAX, i32::MAX - 1))),
        // A deadline in the past, however far, ends the attempt at once (as in Go).
        ("deadline-min", msg_with("deadline-min", queue, "hang", |m| (m.deadline, m.retry) = (i64::MIN, 0))),
        ("deadline-negative", msg_with("deadline-negative", queue, "hang", |m| (m.deadline, m.retry) = (-1, 0))),
    ];
    for (id, msg) in &stored {
        store_pending(&redis, &k, id, msg);
    }
    for i in 0..4 {
        client.enqueue(&Task::new("ok", format!("{i}")), TaskOptions::new().queue(queue)).await.unwrap();
    }

    let rec = Recorder::default();
    let mut server = Server::new(broker.clone(), fast_config(queue)).unwrap();
    server
        .start(rec.handler(Arc::clone(&clock), |_, task| async move {
            match task.type_name() {
                "fail" => Err(asynq_server::HandlerError::new("boom")),
                "hang" => std::future::pending().await,
                _ => Ok(()),
            }
        }))
        .unwrap();
    wait_for("every task settles", || async {
        let info = broker.queue_info(&QueueName::new(queue).unwrap()).await.unwrap();
        info.processed_total == 12 && info.pending == 0 && info.active == 0
    })
    .await;

    let info = broker.queue_info(&QueueName::new(queue).unwrap()).await.unwrap();
    assert_eq!((info.completed, info.retry, info.archived, info.failed_total), (1, 1, 2, 3));
    for id in ["timeout-max", "timeout-near-max", "timeout-min", "deadline-max"] {
        assert!(!exists(&redis, &k.task(id)), "{id} is done");
    }
    // The completed task stays for Go's longest duration, not for a wrapped one.
    let longest = asynq_core::MAX_DURATION.as_secs() as i64;
    let score = redis.command(&["ZSCORE", &k.completed(), "retention-max"]).unwrap();
    let score: i64 = score.as_str().unwrap().parse().unwrap();
    let completed_at = stored_msg(&redis, &k, "retention-max").completed_at;
    assert!(completed_at >= start && score == completed_at + longest, "score {score}, completed at {completed_at}");
    assert_eq!(broker.delete_expired_completed(&QueueName::new(queue).unwrap(), 100).await.unwrap(), 0);
    let completed =
        broker.task_info(&QueueName::new(queue).unwrap(), &TaskId::from_static("retention-max")).await.unwrap();
    assert_eq!(
        (completed.state, completed.retention),
        (TaskState::Completed, Some(Duration::from_secs(longest as u64)))
    );
    // The retry count reaches `i32::MAX`: the default delay would overflow, the custom one holds.
    let retried = broker.task_info(&QueueName::new(queue).unwrap(), &TaskId::from_static("retried-max")).await.unwrap();
    assert_eq!((retried.state, retried.retried), (TaskState::Retry, i32::MAX as u32));
    for id in ["deadline-min", "deadline-negative"] {
        let archived = broker.task_info(&QueueName::new(queue).unwrap(), &TaskId::new(id).unwrap()).await.unwrap();
        assert_eq!(archived.state, TaskState::Archived, "{id}");
        assert_eq!(archived.last_error.as_deref(), Some("context deadline exceeded"), "{id}");
    }
    // The handlers ran (but maybe not those whose deadline had passed before they started).
    let ran: Vec<String> = rec.calls().into_iter().map(|c| c.id).collect();
    for (id, _) in stored.iter().filter(|(id, _)| !["deadline-min", "deadline-negative"].contains(id)) {
        assert!(ran.contains(&id.to_string()), "{id} ran: {ran:?}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_key_naming_a_key_of_another_type_fails_nothing_and_writes_nothing_half() {
    logs();
    let queue = "locks";
    let k = Namespace::DEFAULT.queue(queue);
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let client = Client::new(broker.clone());
    let list_lock = format!("{}unique:list", k.prefix());
    let hash_lock = format!("{}unique:hash", k.prefix());
    redis_do(&redis, &[b"RPUSH", list_lock.as_bytes(), b"x"]);
    redis_do(&redis, &[b"HSET", hash_lock.as_bytes(), b"f", b"v"]);
    let other_slot = Namespace::DEFAULT.queue("elsewhere").unique("t", b"");
    redis_do(&redis, &[b"SET", other_slot.as_bytes(), b"batch-elsewhere"]);
    let with_lock = |id: &str, lock: &str| msg_with(id, queue, "ok", |m| m.unique_key = lock.to_owned());
    // A batch of successes: good tasks, a real unique one, and corrupt locks of every kind.
    let unique = TaskOptions::new().queue(queue).unique(Duration::from_secs(600));
    client.enqueue(&Task::new("report", "nov"), unique.clone().task_id("real-unique")).await.unwrap();
    client.enqueue(&Task::new("ok", "1"), TaskOptions::new().queue(queue).task_id("good-1")).await.unwrap();
    let corrupt = [
        ("batch-list", list_lock.as_str()),
        ("batch-hash", hash_lock.as_str()),
        ("batch-pending", &*k.pending()),
        ("batch-elsewhere", other_slot.as_str()),
        ("alone-list", list_lock.as_str()),
        ("complete-hash", hash_lock.as_str()),
    ];
    for (id, lock) in corrupt {
        store_pending(&redis, &k, id, &with_lock(id, lock));
    }
    client.enqueue(&Task::new("ok", "2"), TaskOptions::new().queue(queue).task_id("good-2")).await.unwrap();

    let taken = broker.dequeue(&[QueueName::new(queue).unwrap()], 20).await.unwrap();
    assert_eq!(taken.len(), 9);
    let (mut batch, mut singles) = (Vec::new(), Vec::new());
    for task in taken {
        match task.message.id.as_str() {
            "alone-list" => singles.push((task.message, Outcome::Done)),
            "complete-hash" => singles
                .push((StoredTask { retention: Some(Duration::from_secs(60)), ..task.message }, Outcome::Complete)),
            _ => batch.push((task.message, Outcome::Done)),
        }
    }
    // `done_batch.lua` settles the seven together, `done.lua` and `complete.lua` one each.
    let results = broker.finish_batch(batch).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    for (msg, outcome) in singles {
        broker.finish(&msg, outcome).await.unwrap_or_else(|e| panic!("{}: {e}", msg.id));
    }

    let info = broker.queue_info(&QueueName::new(queue).unwrap()).await.unwrap();
    assert_eq!((info.processed_total, info.active, info.pending, info.completed), (9, 0, 0, 1));
    assert_eq!(members(&redis, &k.active(), true), Vec::<String>::new());
    assert_eq!(members(&redis, &k.lease(), false), Vec::<String>::new());
    for id in [
        "real-unique",
        "good-1",
        "good-2",
        "batch-list",
        "batch-hash",
        "batch-pending",
        "batch-elsewhere",
        "alone-list",
    ] {
        assert!(!exists(&redis, &k.task(id)), "{id} is done");
    }
    // The keys the corrupt messages named are untouched; the real lock is released.
    assert_eq!(redis.command(&["LLEN", &list_lock]).unwrap().as_int(), Some(1));
    assert_eq!(redis.command(&["HLEN", &hash_lock]).unwrap().as_int(), Some(1));
    assert_eq!(redis.command(&["GET", &other_slot]).unwrap().as_str(), Some("batch-elsewhere"));
    client.enqueue(&Task::new("report", "nov"), unique.clone().task_id("real-unique-2")).await.unwrap();
    assert_eq!(members(&redis, &k.pending(), true), ["real-unique-2"]);

    // An operator's delete of a task whose hash names a list as its lock.
    store_pending(&redis, &k, "delete-me", &with_lock("delete-me", &list_lock));
    broker.delete_task(&QueueName::new(queue).unwrap(), &TaskId::from_static("delete-me")).await.unwrap();
    assert!(!exists(&redis, &k.task("delete-me")));
    assert_eq!(redis.command(&["LLEN", &list_lock]).unwrap().as_int(), Some(1));

    // An enqueue whose lock key holds a list: a typed error, and nothing stored.
    let lock = k.unique("report", b"dec");
    redis_do(&redis, &[b"RPUSH", lock.as_bytes(), b"x"]);
    let err = client.enqueue(&Task::new("report", "dec"), unique.task_id("blocked")).await.unwrap_err();
    assert!(matches!(&err, asynq_client::Error::FailedPrecondition(m) if m.contains(&lock)), "{err:?}");
    assert!(!exists(&redis, &k.task("blocked")));
    assert!(!members(&redis, &k.pending(), true).contains(&"blocked".to_owned()));
    assert_eq!(redis.command(&["LLEN", &lock]).unwrap().as_int(), Some(1));
}

/// Go checks only that names are not blank; ours also refuse control characters, and braces in a
/// queue name. A task Go stored with such an ID or group is corrupt to our servers (archived as
/// it is, and logged), the good tasks beside it run, and queues and groups so named are left out
/// of the inspector's listings, with a warning, while Go still sees them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_go_accepts_and_ours_refuse_are_corrupt_to_us_and_left_out_of_listings() {
    logs();
    let queue = "names";
    let k = Namespace::DEFAULT.queue(queue);
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let client = Client::new(broker.clone());
    client.enqueue(&Task::new("good", "1"), TaskOptions::new().queue(queue).task_id("good-1")).await.unwrap();
    store_pending(&redis, &k, "bell\u{7}", &msg_with("bell\u{7}", queue, "good", |_| {}));
    store_pending(&redis, &k, "grouped", &msg_with("grouped", queue, "good", |m| m.group_key = "g\n".into()));

    let queues = [QueueName::new(queue).unwrap()];
    let taken = broker.dequeue(&queues, 10).await.unwrap();
    let ids: Vec<&str> = taken.iter().map(|d| d.message.id.as_str()).collect();
    assert_eq!(ids, ["good-1"]);
    let mut archived = members(&redis, &k.archived(), false);
    archived.sort();
    assert_eq!(archived, ["bell\u{7}", "grouped"]);
    assert_eq!(errors_naming(queue, "grouped").len(), 1);

    // A queue and a group Go registered under names ours refuse.
    redis_do(&redis, &[b"SADD", b"asynq:queues", b"a{b}"]);
    redis_do(&redis, &[b"SADD", k.groups().as_bytes(), b"bad\tgroup", b"fine"]);
    let listed = broker.queues().await.unwrap();
    assert_eq!(listed, [QueueName::new(queue).unwrap()]);
    let groups = asynq_core::broker::Aggregate::groups(&broker, &queues[0]).await.unwrap();
    assert_eq!(groups.iter().map(|g| g.group.as_str()).collect::<Vec<_>>(), ["fine"]);
    let warnings = logs().text();
    assert!(warnings.contains("skipping a queue whose name is not ours"), "{warnings}");
    assert!(warnings.contains("skipping a group whose name is not ours"), "{warnings}");
}
