//! `finish_batch` on a real redis-server: a batch of every outcome across two queues leaves
//! exactly the keys, fields, members, counters and TTLs the same finishes one by one leave (the
//! archive trimmed to its limits, waiting clients told, idle servers woken, stalls counted),
//! and the failures of a queue cost one `settle_batch.lua` call, as its successes cost one
//! `done_batch.lua` call. The conformance suite checks what the inspector shows; this checks
//! the raw keys and the calls.

use asynq_conformance::fixture::{DAY, START_SECS};
use asynq_core::broker::{Dequeue, Enqueue, Outcome};
use asynq_core::time::{from_unix_secs, utc_date};
use asynq_core::{Error, QueueName, SimulatedClock, StoredTask, Task, TaskId, TaskOptions, resolve_enqueue};
use asynq_redis::RedisBroker;
use asynq_redis::keys::Namespace;
use asynq_tests::{KeyDump, RedisServer, RespValue, redis_broker};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

fn now() -> SystemTime {
    from_unix_secs(START_SECS)
}

async fn enqueue(broker: &RedisBroker, id: &str, type_name: &str, options: TaskOptions) {
    let task = Task::new(type_name, id.to_owned());
    let request = resolve_enqueue(&task, &options.task_id(id), now(), || unreachable!()).unwrap();
    broker.enqueue(request).await.unwrap();
}

/// Takes every pending task of `queue`, by ID.
async fn take_all(broker: &RedisBroker, queue: &str) -> BTreeMap<String, StoredTask> {
    let taken = broker.dequeue(&[QueueName::new(queue).unwrap()], 1_000).await.unwrap();
    taken.into_iter().map(|d| (d.message.id.to_string(), d.message)).collect()
}

fn retry(secs: i64, error: &str, is_failure: bool) -> Outcome {
    Outcome::Retry { retry_at: from_unix_secs(START_SECS + secs), error: error.to_owned(), is_failure }
}

fn archive(error: &str) -> Outcome {
    Outcome::Archive { error: error.to_owned() }
}

/// On an emptied server: active tasks of queues `q` and `o` (one of them finished already, so
/// its lease is gone), a pending one, a full archive of `q` with two tasks past 90 days, a client waiting on three tasks and an idle server on `q`; returns the batch.
async fn prepare(redis: &RedisServer, broker: &RedisBroker) -> Vec<(StoredTask, Outcome)> {
    redis.command(&["FLUSHALL"]).unwrap();
    let (q, o) = (Namespace::DEFAULT.queue("q"), Namespace::DEFAULT.queue("o"));
    let plain = || TaskOptions::new().queue("q");
    for id in ["d1", "d2", "r1", "r2", "r3", "a1", "a2", "rq", "st", "gone"] {
        enqueue(broker, id, "t", plain()).await;
    }
    enqueue(broker, "c", "report", plain().unique(Duration::from_secs(600)).retention(Duration::from_secs(120))).await;
    enqueue(broker, "cu", "t", plain().retention(Duration::from_secs(60))).await;
    enqueue(broker, "ru", "report", plain().unique(Duration::from_secs(600))).await;
    for id in ["od", "or", "oa", "orq", "ost"] {
        enqueue(broker, id, "t", TaskOptions::new().queue("o")).await;
    }
    let mut active = take_all(broker, "q").await;
    active.extend(take_all(broker, "o").await);
    let gone = active["gone"].clone();
    broker.finish(&gone, Outcome::Done).await.unwrap();
    enqueue(broker, "p", "t", plain()).await;
    let pending = StoredTask { id: TaskId::from_static("p"), ..active["d1"].clone() };

    // A full archive: 9 998 tasks archived a minute ago (their hashes left out) and two past the
    // 90 days, with their hashes.
    let mut zadd = vec!["ZADD".to_owned(), q.archived()];
    for i in 0..9_998 {
        zadd.extend([(START_SECS - 60).to_string(), format!("old{i:05}")]);
    }
    for id in ["ancient1", "ancient2"] {
        zadd.extend([(START_SECS - 91 * DAY).to_string(), id.to_owned()]);
        redis.command(&["HSET", &q.task(id), "msg", "x", "state", "archived"]).unwrap();
    }
    redis.command(&zadd).unwrap();
    // A client waits for an archived, a completed and a retried task; a server idles on `q`.
    for id in ["a1", "c", "r1"] {
        redis.command(&["HSET", &q.task(id), "waiters", "1"]).unwrap();
    }
    redis.command(&["HSET", &o.task("oa"), "waiters", "1"]).unwrap();
    for k in [&q, &o] {
        redis.command(&["SET", &k.waiting(), "1", "EX", "30"]).unwrap();
    }
    redis.command(&["SET", &q.idle_workers(), "1", "EX", "60"]).unwrap();

    let msg = |id: &str| active[id].clone();
    vec![
        (msg("r1"), retry(60, "boom", true)),
        (msg("od"), Outcome::Done),
        (msg("a1"), archive("gave up")),
        (msg("d1"), Outcome::Done),
        (msg("or"), retry(30, "boom", true)),
        (msg("rq"), Outcome::Requeue),
        (gone, retry(60, "late", true)),
        (msg("r2"), retry(30, "again", true)),
        (msg("c"), Outcome::Complete),
        (msg("st"), Outcome::Stalled),
        (msg("oa"), archive("no")),
        (msg("r3"), retry(90, "rate limited", false)),
        (pending, archive("not active")),
        (msg("ru"), retry(45, "locked", true)),
        (msg("a2"), archive("gave up too")),
        (msg("orq"), Outcome::Requeue),
        (msg("cu"), Outcome::Complete),
        (msg("ost"), Outcome::Stalled),
        (msg("d2"), Outcome::Done),
    ]
}

fn kind(result: &asynq_core::Result<()>) -> String {
    match result {
        Ok(()) => "ok".to_owned(),
        Err(Error::TaskNotFound { id, .. }) => format!("not found {id}"),
        Err(other) => format!("{other:?}"),
    }
}

/// [`prepare`], then the batch one by one or as one `finish_batch`. Returns the replies, the
/// keys left, the finish notifications and wake-ups published, and the script calls made.
async fn run(redis: &RedisServer, batch: bool) -> (Vec<String>, KeyDump, u64, u64) {
    let clock = Arc::new(SimulatedClock::new(now()));
    let broker = redis_broker(&redis.url(), clock.clone()).await;
    let items = prepare(redis, &broker).await;
    clock.advance(Duration::from_millis(1_400));
    redis.command(&["CONFIG", "RESETSTAT"]).unwrap();
    let replies = if batch {
        broker.finish_batch(items).await.iter().map(kind).collect()
    } else {
        let mut replies = Vec::new();
        for (msg, outcome) in items {
            replies.push(kind(&broker.finish(&msg, outcome).await));
        }
        replies
    };
    (replies, redis.dump(), redis.command_calls("publish"), redis.command_calls("evalsha"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_every_outcome_leaves_what_the_same_finishes_one_by_one_leave() {
    let redis = RedisServer::start();
    let (one_by_one, single_keys, single_publishes, single_calls) = run(&redis, false).await;
    let (batch, batch_keys, batch_publishes, batch_calls) = run(&redis, true).await;

    let mut want = vec!["ok"; 19];
    (want[6], want[12]) = ("not found gone", "not found p");
    assert_eq!(one_by_one, want);
    assert_eq!(batch, want);
    // a1, c, oa finished for good with a client waiting; one wake-up each for `q`'s and `o`'s
    // idle servers (the fetches that took their tasks came up short, and so marked them).
    assert_eq!((single_publishes, batch_publishes), (5, 5));
    assert_eq!(single_calls, 19);
    // `q`: done_batch.lua and settle_batch.lua; `o`: done.lua (alone of its kind), settle_batch.lua.
    assert_eq!(batch_calls, 4);

    // The same keys with the same contents; TTLs read a moment apart may differ by a second.
    let without_ttls = |dump: &KeyDump| -> BTreeMap<String, (String, RespValue)> {
        dump.iter().map(|(key, (kind, contents, _))| (key.clone(), (kind.clone(), contents.clone()))).collect()
    };
    let (single, batched) = (without_ttls(&single_keys), without_ttls(&batch_keys));
    let differing: Vec<_> =
        batched.keys().chain(single.keys()).filter(|key| single.get(*key) != batched.get(*key)).collect();
    assert!(differing.is_empty(), "keys that differ: {differing:?}");
    for (key, (_, _, ttl)) in &batch_keys {
        let single = single_keys[key].2;
        assert!((ttl - single).abs() <= 1, "{key}: TTL {ttl} in the batch, {single} one by one");
    }

    // What both left, spelled out.
    let q = Namespace::DEFAULT.queue("q");
    let text = |key: &str| format!("{:?}", batch_keys[key].1);
    let secs = |offset: i64| (START_SECS + offset).to_string();
    assert_eq!(text(&q.pending()), r#"Array([Bulk("p"), Bulk("rq"), Bulk("st")])"#);
    assert!(!batch_keys.contains_key(&q.active()) && !batch_keys.contains_key(&q.lease()), "nothing is active");
    assert_eq!(
        text(&q.retry()),
        format!(
            r#"Array([Bulk("r2"), Bulk("{}"), Bulk("ru"), Bulk("{}"), Bulk("r1"), Bulk("{}"), Bulk("r3"), Bulk("{}")])"#,
            secs(30),
            secs(45),
            secs(60),
            secs(90)
        )
    );
    let archived = batch_keys[&q.archived()].1.as_array().unwrap().to_vec();
    assert_eq!(archived.len(), 2 * 9_999, "trimmed to the newest 9 999");
    assert_eq!(archived[0].as_str(), Some("old00001"), "the oldest of the newest 9 999");
    let last: Vec<_> = archived[archived.len() - 4..].iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    assert_eq!(last, ["a1", &secs(1), "a2", &secs(1)]);
    assert!(!batch_keys.contains_key(&q.task("ancient1")) && !batch_keys.contains_key(&q.task("ancient2")));
    let day = utc_date(now());
    // Processed: gone, d1, d2, r1, r2, ru, a1, a2, c, cu; failed: r1, r2, ru, a1, a2. The daily
    // counters expire (the clock is a century ahead, so their TTLs are long).
    let counter = |key: String| (text(&key), batch_keys[&key].2 > 0);
    assert_eq!(counter(q.processed_on(&day)), (r#"Bulk("10")"#.to_owned(), true));
    assert_eq!(counter(q.failed_on(&day)), (r#"Bulk("5")"#.to_owned(), true));
    assert_eq!((text(&q.processed_total()), text(&q.failed_total())), (r#"Bulk("10")"#.into(), r#"Bulk("5")"#.into()));
    let field = |key: &str, name: &str| {
        let fields = batch_keys[key].1.as_array().unwrap().to_vec();
        fields.chunks(2).find(|pair| pair[0].as_str() == Some(name)).map(|pair| pair[1].as_str().unwrap().to_owned())
    };
    assert_eq!(field(&q.task("st"), "stalls").as_deref(), Some("1"));
    assert_eq!(field(&q.task("rq"), "stalls"), None);
    assert_eq!(field(&q.task("r3"), "state").as_deref(), Some("retry"));
    assert_eq!(field(&q.task("c"), "state").as_deref(), Some("completed"));
    assert!(!batch_keys.contains_key(&q.unique("report", b"c")), "the completed task released its lock");
    assert_eq!(batch_keys[&q.unique("report", b"ru")].1.as_str(), Some("ru"), "the retried task keeps its lock");
    assert!(!batch_keys.contains_key(&q.idle_workers()), "the requeue woke the idle server");
}

/// Runs `outcome(i)` for 100 active tasks of one queue as one batch; returns the script calls
/// made and the microseconds Redis spent in them.
async fn script_cost(redis: &RedisServer, batch: bool, outcome: impl Fn(usize) -> Outcome) -> (u64, u64) {
    redis.command(&["FLUSHALL"]).unwrap();
    let broker = redis_broker(&redis.url(), Arc::new(SimulatedClock::new(now()))).await;
    for i in 0..100 {
        enqueue(&broker, &format!("t{i:03}"), "t", TaskOptions::new().queue("q")).await;
    }
    let items: Vec<_> = take_all(&broker, "q").await.into_values().enumerate().map(|(i, m)| (m, outcome(i))).collect();
    redis.command(&["CONFIG", "RESETSTAT"]).unwrap();
    let results = if batch {
        broker.finish_batch(items).await
    } else {
        let mut results = Vec::new();
        for (msg, outcome) in items {
            results.push(broker.finish(&msg, outcome).await);
        }
        results
    };
    assert!(results.iter().all(Result::is_ok), "{:?}", results.iter().find(|r| r.is_err()));
    assert_eq!(redis.command_calls("eval"), 0);
    redis.command_stat("evalsha")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_failures_of_a_queue_are_one_script_call() {
    let redis = RedisServer::start();
    let every_failure = |i: usize| match i % 5 {
        0 => retry(60, "boom", true),
        1 => retry(60, "later", false),
        2 => archive("gave up"),
        3 => Outcome::Requeue,
        _ => Outcome::Stalled,
    };
    let with_successes = |i: usize| match i % 3 {
        0 => Outcome::Done,
        1 => Outcome::Complete,
        _ => retry(60, "boom", true),
    };

    let (retries, retries_usec) = script_cost(&redis, true, |_| retry(60, "boom", true)).await;
    assert_eq!(retries, 1, "100 retries");
    let (archives, archives_usec) = script_cost(&redis, true, |_| archive("gave up")).await;
    assert_eq!(archives, 1, "100 archives");
    assert_eq!(script_cost(&redis, true, every_failure).await.0, 1, "100 failures, requeues and stalls");
    assert_eq!(script_cost(&redis, true, with_successes).await.0, 2, "successes in done_batch.lua, the rest in one");

    // Redis's time in the scripts, one by one as before the batch script, for the record.
    let (single, single_usec) = script_cost(&redis, false, |_| retry(60, "boom", true)).await;
    assert_eq!(single, 100);
    let (_, single_archives_usec) = script_cost(&redis, false, |_| archive("gave up")).await;
    let (_, successes_usec) = script_cost(&redis, true, |_| Outcome::Done).await;
    eprintln!(
        "100 retries: {single_usec} µs in 100 retry.lua calls, {retries_usec} µs in one settle_batch.lua call; \
         100 archives: {single_archives_usec} µs one by one, {archives_usec} µs batched; \
         100 successes: {successes_usec} µs in one done_batch.lua call"
    );
}
