//! `enqueue_batch` on a real redis-server: a batch of every placement, unique or not, leaves
//! exactly the keys, fields, members and lock TTLs the same enqueues one by one leave, with the
//! same replies, and costs one script call per `ENQUEUE_BATCH` tasks of a queue whatever their
//! placement. The conformance suite checks what the inspector shows; this checks the raw keys.

use asynq_conformance::fixture::START_SECS;
use asynq_core::broker::Enqueue;
use asynq_core::time::from_unix_secs;
use asynq_core::{EnqueueRequest, Error, SimulatedClock, Task, TaskOptions, resolve_enqueue};
use asynq_redis::keys::Namespace;
use asynq_tests::{KeyDump, RedisServer, RespValue, redis_broker};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const QUEUE: &str = "q";

fn request(id: &str, type_name: &str, payload: &str, options: TaskOptions) -> EnqueueRequest {
    let options = options.queue(QUEUE).task_id(id);
    resolve_enqueue(&Task::new(type_name, payload.to_owned()), &options, from_unix_secs(START_SECS), || unreachable!())
        .unwrap()
}

/// The requests of the mixed batch: every placement, unique or not, and every reply.
fn mixed() -> Vec<EnqueueRequest> {
    let pending = TaskOptions::new;
    let scheduled = || TaskOptions::new().process_in(Duration::from_secs(30));
    let grouped = |group: &str| TaskOptions::new().group(group);
    let unique = |options: TaskOptions| options.unique(Duration::from_secs(600));
    vec![
        request("p1", "email", "1", pending()),
        request("s1", "report", "dec", scheduled()),
        request("g1", "digest", "1", grouped("g")),
        request("up", "lock", "up", unique(pending())),
        request("us", "lock", "us", unique(scheduled())),
        request("ug", "lock", "ug", unique(grouped("h"))),
        request("taken", "email", "2", grouped("g")),
        request("held", "lock", "held", unique(scheduled())),
        request("wrong", "wrong", "", unique(pending())),
        request("wrong-g", "wrong", "", unique(grouped("g"))),
        request("p1", "email", "again", unique(scheduled())),
        request("s1", "lock", "kept", unique(pending())),
        request("kept", "lock", "kept", unique(grouped("g"))),
        request("g2", "digest", "2", grouped("g")),
        request("p2", "email", "3", pending()),
        request("g1", "lock", "g1", unique(grouped("h"))),
    ]
}

fn kind(result: &asynq_core::Result<()>) -> String {
    match result {
        Ok(()) => "ok".to_owned(),
        Err(Error::TaskIdConflict { id, .. }) => format!("conflict {id}"),
        Err(Error::DuplicateTask { type_name, .. }) => format!("duplicate {type_name}"),
        Err(Error::FailedPrecondition(_)) => "not a lock".to_owned(),
        Err(other) => format!("{other:?}"),
    }
}

/// On an emptied server: a scheduled task `taken`, a scheduled unique task holding the lock of
/// `lock`/`held` (so that nothing is pending yet), a set where the lock of `wrong`/"" would be, and a waiting server's idle mark; then `requests`
/// one by one or as one batch. Returns the replies, the keys left and the wake-ups published.
async fn run(redis: &RedisServer, requests: Vec<EnqueueRequest>, batch: bool) -> (Vec<String>, KeyDump, u64) {
    redis.command(&["FLUSHALL"]).unwrap();
    let broker = redis_broker(&redis.url(), Arc::new(SimulatedClock::new(from_unix_secs(START_SECS)))).await;
    let k = Namespace::DEFAULT.queue(QUEUE);
    let later = TaskOptions::new().process_in(Duration::from_secs(90));
    broker.enqueue(request("taken", "email", "0", later.clone())).await.unwrap();
    broker.enqueue(request("first", "lock", "held", later.unique(Duration::from_secs(900)))).await.unwrap();
    redis.command(&["SADD", &k.unique("wrong", b""), "not-a-lock"]).unwrap();
    redis.command(&["SET", &k.idle_workers(), "1"]).unwrap();
    redis.command(&["CONFIG", "RESETSTAT"]).unwrap();
    let replies = if batch {
        broker.enqueue_batch(requests).await.iter().map(kind).collect()
    } else {
        let mut replies = Vec::new();
        for request in requests {
            replies.push(kind(&broker.enqueue(request).await));
        }
        replies
    };
    (replies, redis.dump(), redis.command_calls("publish"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_batch_leaves_what_the_same_enqueues_one_by_one_leave() {
    let redis = RedisServer::start();
    let (one_by_one, single_keys, single_wakes) = run(&redis, mixed(), false).await;
    let (batch, batch_keys, batch_wakes) = run(&redis, mixed(), true).await;

    let want = [
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "conflict taken",
        "duplicate lock",
        "not a lock",
        "not a lock",
        "conflict p1",
        "conflict s1",
        "duplicate lock",
        "ok",
        "ok",
        "conflict g1",
    ];
    assert_eq!(one_by_one, want);
    assert_eq!(batch, want);
    // One wake-up each (the first pending task wakes the waiting server) and one due notice
    // each (the first scheduled task is the earliest its set holds).
    assert_eq!((single_wakes, batch_wakes), (2, 2), "one wake-up and one due notice, once each");

    // The same keys with the same contents; TTLs read a moment apart may differ by a second. The
    // idle mark aside: a single enqueue wakes servers without deleting it, a batch deletes it
    // (one DEL per call), and each writes the one wake-up the servers wait for.
    let idle_mark = Namespace::DEFAULT.queue(QUEUE).idle_workers();
    assert!(single_keys.contains_key(&idle_mark) && !batch_keys.contains_key(&idle_mark));
    let without_ttls = |dump: &KeyDump| -> BTreeMap<String, (String, RespValue)> {
        dump.iter()
            .filter(|(key, _)| **key != idle_mark)
            .map(|(key, (kind, contents, _))| (key.clone(), (kind.clone(), contents.clone())))
            .collect()
    };
    assert_eq!(without_ttls(&batch_keys), without_ttls(&single_keys));
    for (key, (_, _, ttl)) in &batch_keys {
        let single = single_keys[key].2;
        assert!((ttl - single).abs() <= 1, "{key}: TTL {ttl} in the batch, {single} one by one");
    }

    // What both left, spelled out.
    let k = Namespace::DEFAULT.queue(QUEUE);
    let text = |key: &str| format!("{:?}", batch_keys[key].1);
    assert_eq!(text(&k.pending()), r#"Array([Bulk("p2"), Bulk("up"), Bulk("p1")])"#);
    let (due, later) = (START_SECS + 30, START_SECS + 90);
    assert_eq!(
        text(&k.scheduled()),
        format!(
            r#"Array([Bulk("s1"), Bulk("{due}"), Bulk("us"), Bulk("{due}"), Bulk("first"), Bulk("{later}"), Bulk("taken"), Bulk("{later}")])"#
        )
    );
    assert_eq!(text(&k.groups()), r#"Array([Bulk("g"), Bulk("h")])"#);
    let now = START_SECS;
    assert_eq!(text(&k.group("g")), format!(r#"Array([Bulk("g1"), Bulk("{now}"), Bulk("g2"), Bulk("{now}")])"#));
    assert!(!batch_keys.contains_key(&k.idle_workers()), "the wake-up cleared the idle mark");
    let field = |id: &str, name: &str| {
        let fields = batch_keys[&k.task(id)].1.as_array().unwrap().to_vec();
        fields.chunks(2).find(|pair| pair[0].as_str() == Some(name)).map(|pair| pair[1].as_str().unwrap().to_owned())
    };
    assert_eq!(field("up", "unique_key"), Some(k.unique("lock", b"up")));
    assert_eq!(field("us", "unique_key"), Some(k.unique("lock", b"us")));
    assert_eq!(field("ug", "unique_key"), None, "Go records no lock on a grouped task's hash");
    assert_eq!(field("ug", "group").as_deref(), Some("h"));
    assert_eq!(field("p1", "unique_key"), None);
    assert_eq!(field("us", "state").as_deref(), Some("scheduled"));
    assert_eq!(field("up", "pending_since"), Some((START_SECS as i128 * 1_000_000_000).to_string()));
    assert!(!batch_keys.contains_key(&k.task("wrong")) && !batch_keys.contains_key(&k.task("wrong-g")));
    // Locks: each held by the task that took it, the two taken before an ID conflict included.
    for (payload, holder, ttl) in
        [("up", "up", 600), ("us", "us", 630), ("ug", "ug", 600), ("kept", "s1", 600), ("again", "p1", 630)]
    {
        let lock = if payload == "again" { k.unique("email", b"again") } else { k.unique("lock", payload.as_bytes()) };
        let (kind, value, left) = &batch_keys[&lock];
        assert_eq!((kind.as_str(), value.as_str()), ("string", Some(holder)), "{lock}");
        assert!((ttl - 2..=ttl).contains(left), "{lock}: TTL {left}, expected about {ttl}");
    }
    assert_eq!(batch_keys[&k.unique("lock", b"g1")].1.as_str(), Some("g1"), "taken just before its ID conflict");
    assert_eq!(batch_keys[&k.unique("wrong", b"")].0, "set", "the key that is no lock is left alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_one_script_call_per_500_tasks_or_per_100_grouped_ones() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SimulatedClock::new(from_unix_secs(START_SECS)))).await;
    let scheduled = TaskOptions::new().process_in(Duration::from_secs(60));
    let batch = |prefix: &str, n: usize, options: &dyn Fn(usize) -> TaskOptions| -> Vec<EnqueueRequest> {
        (0..n).map(|i| request(&format!("{prefix}{i}"), "t", &format!("{prefix}{i}"), options(i))).collect()
    };
    let script_calls = async |requests: Vec<EnqueueRequest>| {
        redis.command(&["CONFIG", "RESETSTAT"]).unwrap();
        let n = requests.len();
        let results = broker.enqueue_batch(requests).await;
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), n, "{:?}", results.iter().find(|r| r.is_err()));
        (redis.command_calls("evalsha"), redis.command_calls("eval"))
    };

    assert_eq!(script_calls(batch("s", 100, &|_| scheduled.clone())).await, (1, 0), "100 scheduled tasks");
    let every_placement = |i: usize| match i % 6 {
        0 => TaskOptions::new(),
        1 => scheduled.clone(),
        2 => TaskOptions::new().group("g"),
        3 => TaskOptions::new().unique(Duration::from_secs(60)),
        4 => scheduled.clone().unique(Duration::from_secs(60)),
        _ => TaskOptions::new().group("h").unique(Duration::from_secs(60)),
    };
    assert_eq!(script_calls(batch("m", 100, &every_placement)).await, (1, 0), "100 tasks of every placement");
    assert_eq!(
        script_calls(batch("l", 1_001, &every_placement)).await,
        (4, 0),
        "1001 tasks, a third of them grouped, at most 100 grouped a call: 302, 300, 300 and 99"
    );

    let k = Namespace::DEFAULT.queue(QUEUE);
    let count = |command: &str, key: String| redis.command(&[command, &key]).unwrap().as_int().unwrap();
    // Of every six tasks, two are scheduled and two pending: 17 + 16 and 167 + 167 of each.
    assert_eq!(count("ZCARD", k.scheduled()), 100 + 33 + 334);
    assert_eq!(count("LLEN", k.pending()), 34 + 334);
}
