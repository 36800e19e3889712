//! The scheduler on a real redis-server: what it writes has the shape Go asynq's scheduler
//! writes (so `asynq cron ls` and `asynq cron history` read it), and replicas, each on its own
//! connection, enqueue each fire once.

use asynq_client::{Task, TaskOptions, TaskState};
use asynq_core::broker::{Dequeue, Inspect, Outcome, Page};
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{Clock, Error, QueueName, SimulatedClock, SystemClock};
use asynq_redis::proto::{SchedulerEnqueueEvent, SchedulerEntry, Timestamp};
use asynq_scheduler::{FireOutcome, Scheduler, SchedulerConfig};
use asynq_tests::{RedisServer, RespValue, redis_broker};
use prost::Message;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// 2026-11-22T00:00:00Z.
const START: i64 = 1_795_305_600;

fn bulk(value: &RespValue) -> &[u8] {
    match value {
        RespValue::Bulk(bytes) => bytes,
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

fn int(redis: &RedisServer, args: &[&str]) -> i64 {
    redis.command(args).unwrap().as_int().unwrap()
}

fn text(redis: &RedisServer, args: &[&str]) -> String {
    redis.command(args).unwrap().as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_records_have_the_shape_go_asynq_writes() {
    let redis = RedisServer::start();
    let clock = Arc::new(SimulatedClock::new(from_unix_secs(START)));
    let broker = redis_broker(&redis.url(), clock.clone()).await;
    let mut s =
        Scheduler::new(broker.clone(), SchedulerConfig { clock: clock.clone(), ..SchedulerConfig::default() }).unwrap();
    let options = TaskOptions::new().queue("periodic").max_retry(3);
    let entry = s.register("@every 30s", Task::new("report", r#"{"k":1}"#), options).unwrap();
    s.start().unwrap();

    // The first heartbeat is written at start.
    let key = format!("asynq:schedulers:{{{}}}", s.id());
    for _ in 0..200 {
        if int(&redis, &["EXISTS", &key]) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let live = redis.command(&["ZRANGE", "asynq:schedulers", "0", "-1", "WITHSCORES"]).unwrap();
    let live: Vec<&str> = live.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(live, [key.as_str(), &(START + 20).to_string()], "scored by expiry: now + 2 × 10 s");
    assert_eq!(text(&redis, &["TYPE", &key]), "list");
    let ttl = int(&redis, &["TTL", &key]);
    assert!((1..=20).contains(&ttl), "the entries list expires in 20 s, not {ttl}");
    let items = redis.command(&["LRANGE", &key, "0", "-1"]).unwrap();
    let [item] = items.as_array().unwrap() else { panic!("one entry expected: {items:?}") };
    let written = SchedulerEntry::decode(bulk(item)).unwrap();
    assert_eq!(
        written,
        SchedulerEntry {
            id: entry.clone(),
            spec: "@every 30s".into(),
            task_type: "report".into(),
            task_payload: r#"{"k":1}"#.into(),
            enqueue_options: vec![r#"Queue("periodic")"#.into(), "MaxRetry(3)".into()],
            next_enqueue_time: Some(Timestamp { seconds: START + 30, nanos: 0 }),
            prev_enqueue_time: Some(Timestamp { seconds: -62_135_596_800, nanos: 0 }),
        },
        "never fired: the previous time is Go's zero time, which Go shows as never"
    );
    assert_eq!(written.prev_enqueue_time, Some(Timestamp::go_zero()));

    let fired = s.fire(&entry, from_unix_secs(START + 30)).await.unwrap();
    let FireOutcome::Enqueued(info) = fired else { panic!("expected an enqueue, got {fired:?}") };
    let history = format!("asynq:scheduler_history:{entry}");
    assert_eq!(text(&redis, &["TYPE", &history]), "zset");
    assert_eq!(int(&redis, &["TTL", &history]), -1, "the history has no TTL");
    let events = redis.command(&["ZRANGE", &history, "0", "-1", "WITHSCORES"]).unwrap();
    let [member, score] = events.as_array().unwrap() else { panic!("one event expected: {events:?}") };
    assert_eq!(score.as_str(), Some(START.to_string().as_str()), "scored by the enqueue time in Unix seconds");
    let event = SchedulerEnqueueEvent::decode(bulk(member)).unwrap();
    assert_eq!(
        event,
        SchedulerEnqueueEvent { task_id: info.id.to_string(), enqueue_time: Some(Timestamp::from_time(clock.now())) }
    );
    assert_eq!(int(&redis, &["EXISTS", &format!("asynq:{{periodic}}:t:{}", info.id)]), 1);
    let mark = format!("asynq:scheduler_fire:{}", info.id);
    assert_eq!(text(&redis, &["TYPE", &mark]), "string");
    assert!(int(&redis, &["TTL", &mark]) > 0, "fire marks expire");

    s.shutdown().await;
    assert_eq!(int(&redis, &["ZCARD", "asynq:schedulers"]), 0);
    assert_eq!(int(&redis, &["EXISTS", &key, &history]), 0, "entries and history are removed at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_their_own_connections_enqueue_each_fire_once() {
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(SimulatedClock::new(from_unix_secs(START)));
    let mut replicas = Vec::new();
    for _ in 0..3 {
        let broker = redis_broker(&redis.url(), clock.clone()).await;
        let s = Scheduler::new(broker, SchedulerConfig { clock: clock.clone(), ..SchedulerConfig::default() }).unwrap();
        let entry = s.register("@every 10s", Task::new("sync", "all"), TaskOptions::new().queue("q")).unwrap();
        replicas.push((s, entry));
    }

    for n in 1..=5 {
        let at = from_unix_secs(START + 10 * n);
        let outcomes = futures::future::join_all(replicas.iter().map(|(s, entry)| s.fire(entry, at))).await;
        let enqueued = outcomes.iter().filter(|o| matches!(o, Ok(FireOutcome::Enqueued(_)))).count();
        let skipped = outcomes.iter().filter(|o| matches!(o, Ok(FireOutcome::AlreadyEnqueued { .. }))).count();
        assert_eq!((enqueued, skipped), (1, 2), "fire {n}: {outcomes:?}");
    }
    let observer = redis_broker(&redis.url(), clock.clone()).await;
    assert_eq!(observer.queue_info(&QueueName::from_static("q")).await.unwrap().pending, 5);

    // A worker runs and deletes the first fire's task; a replica that fires it late finds the
    // mark and enqueues nothing.
    let taken = observer.dequeue(&[QueueName::from_static("q")], 1).await.unwrap();
    observer.finish(&taken[0].message, Outcome::Done).await.unwrap();
    let (late, entry) = &replicas[2];
    let outcome = late.fire(entry, from_unix_secs(START + 10)).await.unwrap();
    assert_eq!(outcome, FireOutcome::AlreadyEnqueued { fire_id: taken[0].message.id.to_string() });
    let info = observer.queue_info(&QueueName::from_static("q")).await.unwrap();
    assert_eq!((info.pending, info.processed_total), (4, 1));
}

/// Per fire second (Unix): the task IDs the replicas enqueued, and how many replicas found the
/// task ID taken.
type BySecond = BTreeMap<i64, (Vec<String>, usize)>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_replicas_enqueue_each_second_once() {
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let results: Arc<Mutex<BySecond>> = Arc::default();
    let mut replicas = Vec::new();
    for _ in 0..3 {
        let (seen, at) = (results.clone(), clock.clone());
        let config = SchedulerConfig {
            clock: clock.clone(),
            post_enqueue: Some(Arc::new(move |result| {
                let mut seen = seen.lock().unwrap();
                let second = seen.entry(unix_secs(at.now())).or_default();
                match result {
                    Ok(info) => second.0.push(info.id.to_string()),
                    Err(Error::TaskIdConflict { .. }) => second.1 += 1,
                    Err(e) => panic!("unexpected enqueue error: {e}"),
                }
            })),
            ..SchedulerConfig::default()
        };
        let mut s = Scheduler::new(redis_broker(&redis.url(), clock.clone()).await, config).unwrap();
        s.register("@every 1s", Task::new("tick", ""), TaskOptions::new().queue("ticks")).unwrap();
        s.start().unwrap();
        replicas.push(s);
    }

    for _ in 0..400 {
        if results.lock().unwrap().values().map(|(ids, _)| ids.len()).sum::<usize>() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for s in &mut replicas {
        s.shutdown().await;
    }

    let results = results.lock().unwrap().clone();
    let enqueued: Vec<String> = results.values().flat_map(|(ids, _)| ids.clone()).collect();
    assert!(enqueued.len() >= 2, "two fires within four seconds: {results:?}");
    for (second, (ids, _)) in &results {
        assert_eq!(ids.len(), 1, "second {second} was enqueued once: {results:?}");
    }
    let observer = redis_broker(&redis.url(), clock).await;
    let page = Page { size: 100, number: 0 };
    let mut stored: Vec<String> = observer
        .list_tasks(&QueueName::from_static("ticks"), TaskState::Pending, page)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id.into_string())
        .collect();
    stored.sort();
    let mut enqueued = enqueued;
    enqueued.sort();
    assert_eq!(stored, enqueued, "the queue holds exactly the tasks the replicas reported");
}
