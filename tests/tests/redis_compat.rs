//! Wire compatibility with Go asynq through a real redis-server: Go's tasks run on our server,
//! and what our client writes has the shape of what Go's wrote (`tests/fixtures/go-asynq/`).
//! Also: our client and server end to end on a single server, a Cluster and behind Sentinel.

use asynq_client::{Client, Error, Task, TaskOptions, TaskState};
use asynq_core::broker::Inspect;
use asynq_core::time::from_unix_secs;
use asynq_core::{Clock, QueueName, SimulatedClock, TaskId};
use asynq_server::{Config, HandlerError, Server};
use asynq_tests::{
    Recorder, RedisCluster, RedisSentinel, RedisServer, load_fixture, read_fixture, redis_broker, wait_for,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// When Go wrote `v0.26.0-enqueued.json`: 2026-11-22T03:24:56Z.
const FIXTURE_TIME: i64 = 1_795_317_896;

/// Enqueues a plain task with each of `ids` as its ID into `queue`, through a client of `broker`
/// on `clock`, oldest first.
async fn enqueue_ids(broker: &asynq_redis::RedisBroker, clock: &SimulatedClock, queue: &str, ids: &[&str]) {
    let client = Client::new(broker.clone()).with_clock(Arc::new(clock.clone()));
    for id in ids {
        client.enqueue(&Task::new("plain", ""), TaskOptions::new().queue(queue).task_id(*id)).await.unwrap();
    }
}

/// A server configuration with short intervals, so real-time tests finish quickly.
fn fast_config(queues: &[&str], clock: Arc<dyn Clock>) -> Config {
    Config {
        concurrency: 4,
        queues: queues.iter().map(|q| ((*q).to_owned(), 1)).collect(),
        clock,
        task_check_interval: Duration::from_millis(20),
        delayed_task_check_interval: Duration::from_millis(50),
        retry_delay: Arc::new(|_, _, _| Duration::from_secs(1)),
        ..Config::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_a_go_client_enqueued_are_run_by_our_server() {
    let redis = RedisServer::start();
    load_fixture(&redis, &read_fixture("v0.26.0-enqueued.json"));
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let client = Client::new(broker.clone()).with_clock(Arc::new(clock.clone()));

    // Go's uniqueness lock and task ID hold against our client.
    let unique = Task::new("interop:unique", r#"{"k":"unique"}"#);
    let dup = client.enqueue(&unique, TaskOptions::new().queue("interop").unique(Duration::from_secs(3600))).await;
    assert!(matches!(dup, Err(Error::DuplicateTask { .. })), "{dup:?}");
    let taken = client.enqueue(&Task::new("x", ""), TaskOptions::new().queue("interop").task_id("fixed-id")).await;
    assert!(matches!(taken, Err(Error::TaskIdConflict { .. })), "{taken:?}");

    let info = broker.queue_info(&QueueName::from_static("interop")).await.unwrap();
    assert_eq!((info.pending, info.scheduled, info.aggregating, info.groups), (4, 1, 1, 1));

    let rec = Recorder::default();
    let mut server = Server::new(broker.clone(), fast_config(&["interop"], Arc::new(clock.clone()))).unwrap();
    server.start(rec.handler(Arc::new(clock.clone()), |_, _| async { Ok(()) })).unwrap();
    wait_for("Go's four pending tasks run", || async {
        broker.queue_info(&QueueName::from_static("interop")).await.unwrap().processed_total == 4
    })
    .await;
    let ran: BTreeSet<String> = rec.calls().into_iter().map(|c| c.type_name).collect();
    assert_eq!(
        ran,
        ["interop:immediate", "interop:retention", "interop:taskid", "interop:unique"].map(String::from).into()
    );

    // The task with retention is kept as completed; the unique task's lock was released.
    let completed =
        broker.list_tasks(&QueueName::from_static("interop"), TaskState::Completed, Default::default()).await.unwrap();
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].type_name, "interop:retention");
    client.enqueue(&unique, TaskOptions::new().queue("interop").unique(Duration::from_secs(3600))).await.unwrap();
    wait_for("our unique task runs", || async {
        broker.queue_info(&QueueName::from_static("interop")).await.unwrap().processed_total == 5
    })
    .await;

    // The scheduled task moves at its time (one hour later); the group member waits for
    // aggregation. (The clock jumps only once nothing runs: a jump of an hour would expire the
    // lease of a running task.)
    clock.advance(Duration::from_secs(3600));
    wait_for("the scheduled task runs", || async {
        broker.queue_info(&QueueName::from_static("interop")).await.unwrap().processed_total == 6
    })
    .await;
    let info = broker.queue_info(&QueueName::from_static("interop")).await.unwrap();
    assert_eq!((info.scheduled, info.aggregating, info.pending, info.active), (0, 1, 0, 0));
    server.shutdown().await;
}

/// A key's shape: its name with task IDs replaced, its type, its hash fields and whether it
/// expires.
fn shape(redis: &RedisServer, ids: &BTreeMap<String, &'static str>) -> BTreeSet<String> {
    let keys = redis.command(&["KEYS", "asynq:*"]).unwrap();
    let mut shapes = BTreeSet::new();
    for key in keys.as_array().unwrap() {
        let key = key.as_str().unwrap().to_owned();
        let mut name = key.clone();
        for (id, kind) in ids {
            name = name.replace(id.as_str(), &format!("<{kind}>"));
        }
        let kind = redis.command(&["TYPE", &key]).unwrap().as_str().unwrap().to_owned();
        let ttl = redis.command(&["PTTL", &key]).unwrap().as_int().unwrap();
        let mut line = format!("{name} {kind} expires={}", ttl > 0);
        if kind == "hash" {
            let fields = redis.command(&["HKEYS", &key]).unwrap();
            let mut fields: Vec<&str> = fields.as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
            fields.sort_unstable();
            line += &format!(" fields={}", fields.join(","));
        }
        shapes.insert(line);
    }
    shapes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_our_client_writes_has_the_shape_of_what_go_wrote() {
    let go = RedisServer::start();
    let fixture = read_fixture("v0.26.0-enqueued.json");
    load_fixture(&go, &fixture);
    let go_ids: BTreeMap<String, &'static str> = fixture
        .iter()
        .filter(|(_, k)| k.kind == "hash")
        .map(|(key, k)| {
            let msg = asynq_core_msg(&k.fields["msg"]);
            (key.rsplit(':').next().unwrap().to_owned(), kind_of(&msg.type_name))
        })
        .collect();

    let ours = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let client = Client::new(redis_broker(&ours.url(), Arc::new(clock.clone())).await).with_clock(Arc::new(clock));
    let q = TaskOptions::new().queue("interop");
    let hour = Duration::from_secs(3600);
    let mut our_ids = BTreeMap::new();
    for (type_name, opts) in [
        ("interop:immediate", q.clone()),
        ("interop:scheduled", q.clone().process_in(hour)),
        ("interop:unique", q.clone().unique(hour)),
        ("interop:retention", q.clone().retention(hour)),
        ("interop:group", q.clone().group("g1")),
        ("interop:taskid", q.clone().task_id("fixed-id")),
    ] {
        let payload = format!(r#"{{"k":"{}"}}"#, type_name.trim_start_matches("interop:"));
        let info = client.enqueue(&Task::new(type_name, payload), opts).await.unwrap();
        our_ids.insert(info.id.into_string(), kind_of(type_name));
    }
    // Beside Go's keys, the group index of ours (the guide, "Groups and aggregation"), which Go
    // neither reads nor writes.
    let (index, ours): (BTreeSet<String>, BTreeSet<String>) =
        shape(&ours, &our_ids).into_iter().partition(|line| line.starts_with("asynq:{interop}:groups:"));
    assert_eq!(
        index,
        BTreeSet::from(
            ["newest zset", "oldest zset", "size zset", "tasks string"]
                .map(|key| format!("asynq:{{interop}}:groups:{key} expires=false"))
        )
    );
    assert_eq!(ours, shape(&go, &go_ids));
}

fn kind_of(type_name: &str) -> &'static str {
    match type_name {
        "interop:immediate" => "immediate",
        "interop:scheduled" => "scheduled",
        "interop:unique" => "unique",
        "interop:retention" => "retention",
        "interop:group" => "group",
        _ => "taskid",
    }
}

fn asynq_core_msg(bytes: &[u8]) -> asynq_core::StoredTask {
    use prost::Message;
    asynq_redis::proto::TaskMessage::decode(bytes).unwrap().try_into().unwrap()
}

/// Our client and server on one queue set: immediate, scheduled and failing-then-passing tasks
/// all finish.
async fn run_end_to_end(url: &str, queues: &[&str]) {
    run_end_to_end_with(url, queues, true).await;
}

/// [`run_end_to_end`], the server recording starts in its fetches if `start_with_fetch` (the
/// default), else in a call of its own after each fetch.
async fn run_end_to_end_with(url: &str, queues: &[&str], start_with_fetch: bool) {
    let clock: Arc<dyn Clock> = Arc::new(asynq_core::SystemClock);
    let broker = redis_broker(url, clock.clone()).await;
    let client = Client::new(broker.clone());
    let mut expected = 0;
    for queue in queues {
        for i in 0..20 {
            let opts = TaskOptions::new().queue(*queue);
            let opts = if i % 5 == 0 { opts.process_in(Duration::from_secs(1)) } else { opts };
            let type_name = if i % 7 == 0 { "flaky" } else { "ok" };
            client.enqueue(&Task::new(type_name, format!("{i}")), opts).await.unwrap();
            expected += 1;
        }
    }
    let rec = Recorder::default();
    let config = Config { start_with_fetch, ..fast_config(queues, clock.clone()) };
    let mut server = Server::new(broker.clone(), config).unwrap();
    server
        .start(rec.handler(clock, |ctx, task| async move {
            if task.type_name() == "flaky" && ctx.retry_count() == 0 {
                return Err(HandlerError::new("first attempt fails"));
            }
            Ok(())
        }))
        .unwrap();
    wait_for("every task finishes", || async {
        let mut done = 0;
        for queue in queues {
            let info = broker.queue_info(&QueueName::new(*queue).unwrap()).await.unwrap();
            if info.size > 0 {
                return false;
            }
            done += info.processed_total - info.failed_total;
        }
        done == expected
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_server_run_tasks_through_redis() {
    let redis = RedisServer::start();
    run_end_to_end(&redis.url(), &["critical", "default"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_recording_starts_apart_from_its_fetches_runs_tasks_through_redis() {
    let redis = RedisServer::start();
    run_end_to_end_with(&redis.url(), &["critical", "default"], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_server_run_tasks_through_a_redis_cluster() {
    let cluster = RedisCluster::start(3);
    let url = format!("redis-cluster://{}", cluster.addrs().join(","));
    // Queues whose keys live on different masters.
    run_end_to_end(&url, &["critical", "default", "low", "reports"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_server_run_tasks_behind_sentinel() {
    let sentinel = RedisSentinel::start("asynq-master");
    let url = format!("redis-sentinel://{}?master={}", sentinel.sentinel_addr(), sentinel.master_name());
    run_end_to_end(&url, &["default"]).await;
}

/// The members of the list or sorted set at `key`, head or lowest score first.
fn members(redis: &RedisServer, command: &str, key: &str) -> Vec<String> {
    let reply = redis.command(&[command, key, "0", "-1"]).unwrap();
    reply.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

/// `dequeue.lua` takes many tasks with one LRANGE/LTRIM and `done_batch.lua` settles many with
/// one ZREM and DEL; Redis must be left exactly as Go's one-task-at-a-time scripts leave it, so
/// that a Go server sharing the queue sees nothing unusual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_dequeue_and_done_leave_what_one_at_a_time_calls_leave() {
    use asynq_core::broker::{Dequeue, Outcome};

    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    enqueue_ids(&broker, &clock, "q", &["t1", "t2", "t3", "t4", "t5"]).await;

    let taken = broker.dequeue(&[QueueName::from_static("q")], 3).await.unwrap();
    let taken_ids: Vec<&str> = taken.iter().map(|d| d.message.id.as_str()).collect();
    assert_eq!(taken_ids, ["t1", "t2", "t3"], "oldest first");
    // Go's RPOPLPUSH, three times: the newest taken at the head of the active list.
    assert_eq!(members(&redis, "LRANGE", "asynq:{q}:pending"), ["t5", "t4"]);
    assert_eq!(members(&redis, "LRANGE", "asynq:{q}:active"), ["t3", "t2", "t1"]);
    assert_eq!(members(&redis, "ZRANGE", "asynq:{q}:lease"), ["t1", "t2", "t3"]);
    // Go's 30 s lease, half a second later until a handler starts the task: Go compares lease
    // scores only with whole-second cutoffs, so to Go it expires a second later, well within
    // its recoverer's 30 s grace.
    let score = |id: &str| redis.command(&["ZSCORE", "asynq:{q}:lease", id]).unwrap();
    assert_eq!(score("t2").as_str(), Some(format!("{}.5", FIXTURE_TIME + 30).as_str()), "Go's 30 s lease, not started");
    let expired = |cutoff: i64| {
        let reply = redis.command(&["ZRANGEBYSCORE", "asynq:{q}:lease", "-inf", &cutoff.to_string()]).unwrap();
        reply.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert!(expired(FIXTURE_TIME + 30).is_empty());
    assert_eq!(expired(FIXTURE_TIME + 31), ["t1", "t2", "t3"], "Go's listLeaseExpired a second later");
    broker.extend_leases(&QueueName::from_static("q"), &[TaskId::from_static("t2")]).await.unwrap();
    assert_eq!(score("t2").as_str(), Some((FIXTURE_TIME + 30).to_string().as_str()), "started: Go's whole second");
    for id in ["t1", "t2", "t3"] {
        let key = format!("asynq:{{q}}:t:{id}");
        assert_eq!(redis.command(&["HGET", &key, "state"]).unwrap().as_str(), Some("active"));
        assert_eq!(redis.command(&["HEXISTS", &key, "pending_since"]).unwrap().as_int(), Some(0));
    }

    // t1 and t3 succeed; t4 was never dequeued, and t1 comes twice: only the first t1 counts.
    let message = |n: usize| taken.get(n).map(|d| d.message.clone());
    let mut pending_t4 = message(0).unwrap();
    pending_t4.id = TaskId::from_static("t4");
    let items = vec![message(0).unwrap(), message(2).unwrap(), pending_t4, message(0).unwrap()];
    let results = broker.finish_batch(items.into_iter().map(|m| (m, Outcome::Done)).collect()).await;
    let outcomes: Vec<bool> = results.iter().map(Result::is_ok).collect();
    assert_eq!(outcomes, [true, true, false, false], "{results:?}");
    assert_eq!(members(&redis, "LRANGE", "asynq:{q}:active"), ["t2"]);
    assert_eq!(members(&redis, "ZRANGE", "asynq:{q}:lease"), ["t2"]);
    assert_eq!(members(&redis, "LRANGE", "asynq:{q}:pending"), ["t5", "t4"]);
    for (id, exists) in [("t1", 0), ("t2", 1), ("t3", 0), ("t4", 1)] {
        let key = format!("asynq:{{q}}:t:{id}");
        assert_eq!(redis.command(&["EXISTS", &key]).unwrap().as_int(), Some(exists), "{key}");
    }
    assert_eq!(redis.command(&["GET", "asynq:{q}:processed"]).unwrap().as_str(), Some("2"));
}

/// A fetch for a worker that runs its first tasks at once leases them as started in the
/// dequeue's own step, in Go's expiry second plus the fetch's token (a fraction under a half),
/// and the rest half a second later, taken; every task is in Go's active list and lease set as a
/// plain dequeue leaves it, and to Go's whole-second cutoffs every lease expires a second later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_that_starts_its_first_tasks_leases_them_as_go_does() {
    use asynq_core::broker::{Dequeue, LeaseStage};
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    enqueue_ids(&broker, &clock, "q", &["t1", "t2", "t3"]).await;
    let taken = broker.dequeue_starting(&[QueueName::from_static("q")], 3, 2).await.unwrap();
    let stages: Vec<(&str, LeaseStage)> = taken.iter().map(|d| (d.message.id.as_str(), d.stage)).collect();
    assert_eq!(stages, [("t1", LeaseStage::Started), ("t2", LeaseStage::Started), ("t3", LeaseStage::Taken)]);
    assert_eq!(members(&redis, "LRANGE", "asynq:{q}:active"), ["t3", "t2", "t1"]);
    let score = |id: &str| redis.command(&["ZSCORE", "asynq:{q}:lease", id]).unwrap().as_str().unwrap().to_owned();
    let whole = FIXTURE_TIME + 30;
    let started: f64 = score("t1").parse().unwrap();
    let token = started - whole as f64;
    assert!(token > 0.0 && token < 0.5, "started: Go's second plus the fetch's token, {started}");
    assert_eq!(score("t2"), score("t1"), "one token per fetch");
    assert_eq!(score("t3"), format!("{whole}.5"), "taken");
    let expired = |cutoff: i64| {
        let reply = redis.command(&["ZRANGEBYSCORE", "asynq:{q}:lease", "-inf", &cutoff.to_string()]).unwrap();
        reply.as_array().unwrap().len()
    };
    assert_eq!((expired(whole), expired(whole + 1)), (0, 3), "Go's listLeaseExpired, a second later");
}

/// Two fetches of one queue for one expiry second that draw the same token: the second starts
/// nothing (its tasks are taken, and the worker records their start itself), so that a lost
/// reply of either never gives back the other's tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_whose_token_is_held_starts_nothing() {
    use asynq_core::broker::{Dequeue, LeaseStage};
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    enqueue_ids(&broker, &clock, "tok", &["t1", "t2", "t3"]).await;
    let queue = QueueName::from_static("tok");
    asynq_redis::testing::fix_fetch_token(&queue, 7);
    let mut stages = Vec::new();
    for advance in [0, 0, 1] {
        clock.advance(Duration::from_secs(advance));
        let taken = broker.dequeue_starting(std::slice::from_ref(&queue), 1, 1).await.unwrap();
        stages.extend(taken.iter().map(|d| (d.message.id.as_str().to_owned(), d.stage)));
    }
    let expected = [("t1", LeaseStage::Started), ("t2", LeaseStage::Taken), ("t3", LeaseStage::Started)];
    assert_eq!(stages, expected.map(|(id, stage)| (id.to_owned(), stage)), "the second fetch drew t1's score");
    let score = |id: &str| redis.command(&["ZSCORE", "asynq:{tok}:lease", id]).unwrap().as_str().unwrap().to_owned();
    let whole = FIXTURE_TIME + 30;
    assert_eq!(score("t1").parse::<f64>().unwrap(), whole as f64 + 7.0 / f64::from(1 << 20));
    assert_eq!(score("t2"), format!("{whole}.5"));
    assert_eq!(score("t3").parse::<f64>().unwrap(), (whole + 1) as f64 + 7.0 / f64::from(1 << 20));
}

/// A fetch whose reply is lost after Redis ran it (here the reply comes after the response
/// timeout: Redis was paused) leaves no task started with no handler: the broker gives the tasks
/// it started back to their queue, uncharged, once Redis answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tasks_of_a_fetch_whose_reply_was_lost_go_back_uncharged() {
    use asynq_core::broker::{Dequeue, Recover};
    use asynq_core::{FailureKind, LEASE_DURATION};
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(FIXTURE_TIME));
    let config = asynq_redis::RedisConfig {
        clock: Arc::new(clock.clone()),
        response_timeout: Duration::from_millis(200),
        ..asynq_redis::RedisConfig::from_url(&redis.url()).unwrap()
    };
    let broker = asynq_redis::RedisBroker::connect_with(config).await.unwrap();
    enqueue_ids(&broker, &clock, "q", &["t1", "t2", "t3"]).await;
    // Redis holds the fetch's script until unpaused, so its reply comes after the timeout.
    redis.command(&["CLIENT", "PAUSE", "600000", "WRITE"]).unwrap();
    let lost = broker.dequeue_starting(&[QueueName::from_static("q")], 2, 2).await.unwrap_err();
    assert_eq!(lost.kind(), FailureKind::OutcomeUnknown, "{lost}");
    redis.command(&["CLIENT", "UNPAUSE"]).unwrap();

    // The script ran once unpaused, then the give-back (tried again until Redis answers).
    let pending = || members(&redis, "LRANGE", "asynq:{q}:pending");
    wait_for("the fetch's tasks given back", || async { pending().len() == 3 }).await;
    assert_eq!(pending(), ["t3", "t2", "t1"], "next in line, in their order");
    assert!(members(&redis, "LRANGE", "asynq:{q}:active").is_empty());
    assert!(members(&redis, "ZRANGE", "asynq:{q}:lease").is_empty());
    for id in ["t1", "t2"] {
        let key = format!("asynq:{{q}}:t:{id}");
        assert_eq!(redis.command(&["HGET", &key, "state"]).unwrap().as_str(), Some("pending"));
        assert_eq!(redis.command(&["HEXISTS", &key, "stalls"]).unwrap().as_int(), Some(0), "no stall counted");
    }
    // Nothing is left for the recoverer once the leases would have expired.
    clock.advance(LEASE_DURATION * 2);
    let expired = broker.list_lease_expired(&[QueueName::from_static("q")], clock.now()).await.unwrap();
    assert!(expired.is_empty());
    // And the tasks run as any others: oldest first.
    let taken = broker.dequeue(&[QueueName::from_static("q")], 3).await.unwrap();
    let ids: Vec<&str> = taken.iter().map(|d| d.message.id.as_str()).collect();
    assert_eq!(ids, ["t1", "t2", "t3"]);
}

/// The commands Redis ran since the last `CONFIG RESETSTAT`, by name, with the test's own reads
/// and the broker's periodic read of the event log settings left out.
fn commands_run(redis: &RedisServer) -> BTreeMap<String, u64> {
    let stats = redis.info("commandstats").unwrap();
    stats
        .keys()
        .filter_map(|field| field.strip_prefix("cmdstat_"))
        .filter(|command| {
            !command.starts_with("config") && !command.starts_with("slowlog") && !["info", "hgetall"].contains(command)
        })
        .map(|command| (command.to_owned(), redis.command_calls(command)))
        .collect()
}

/// A task with a queue and options Go's enqueue script takes (no uniqueness, group, priority,
/// schedule or event log) makes the commands of that script, and stores what Go stores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_task_costs_redis_the_commands_of_gos_enqueue() {
    let redis = RedisServer::start();
    let client = Client::new(redis_broker(&redis.url(), Arc::new(asynq_core::SystemClock)).await);
    let q = TaskOptions::new().queue("plain");
    // The first registers the queue and, making the list non-empty, publishes a wake-up.
    client.enqueue(&Task::new("plain:first", "1"), q.clone()).await.unwrap();
    redis.command(&["CONFIG", "RESETSTAT"]).unwrap();
    redis.command(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]).unwrap();
    redis.command(&["SLOWLOG", "RESET"]).unwrap();
    let info = client
        .enqueue(&Task::new("plain:second", "2"), q.clone().max_retry(3).retention(Duration::from_secs(60)))
        .await
        .unwrap();
    let expected = ["evalsha", "exists", "hset", "lpush"].map(|command| (command.to_owned(), 1));
    assert_eq!(commands_run(&redis), BTreeMap::from(expected));
    // Go's width: two keys (the task hash, the pending list), and the message, ID and time,
    // with the wake-up channel.
    let log = redis.command(&["SLOWLOG", "GET", "100"]).unwrap();
    let calls: Vec<Vec<&str>> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            entry.as_array().unwrap()[3]
                .as_array()
                .unwrap()
                .iter()
                .map(|arg| arg.as_str().unwrap_or("<bytes>"))
                .collect()
        })
        .filter(|args: &Vec<&str>| args[0].eq_ignore_ascii_case("evalsha"))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!((calls[0][2], calls[0].len()), ("2", 3 + 2 + 4), "{calls:?}");
    let task = format!("asynq:{{plain}}:t:{}", info.id);
    let fields = redis.command(&["HKEYS", &task]).unwrap();
    let mut fields: Vec<&str> = fields.as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["msg", "pending_since", "state"]);
    assert_eq!(redis.command(&["HGET", &task, "state"]).unwrap().as_str(), Some("pending"));
    assert_eq!(members(&redis, "LRANGE", "asynq:{plain}:pending").len(), 2);
    let asynq_tests::RespValue::Bulk(msg) = redis.command(&["HGET", &task, "msg"]).unwrap() else { panic!("no msg") };
    let stored = asynq_core_msg(&msg);
    assert_eq!((stored.type_name.as_str(), stored.max_retry), ("plain:second", 3));
    assert_eq!(stored.retention, Some(Duration::from_secs(60)));
}
