//! What Go asynq v0.26 sees of prioritized tasks (`TaskOptions::priority`), through its scripts'
//! steps as the wire-format spec describes them (5.7, 5.13, 6.5, 6.9–6.11), run on a real
//! redis-server beside our broker: Go's pending list, stats and servers see only tasks of the default priority; Go's
//! task inspection reads a prioritized task as pending; Go's task actions on one fail and write
//! nothing; a prioritized task Go's forwarder makes pending runs at the default priority, and
//! keeps its priority field.

use asynq_client::{Client, Inspector, Page, Task, TaskOptions};
use asynq_core::broker::Dequeue;
use asynq_core::time::from_unix_secs;
use asynq_core::{QueueName, SimulatedClock, TaskState};
use asynq_tests::{RedisServer, RespValue, redis_broker};
use std::sync::Arc;
use std::time::Duration;

/// An instant in whole seconds, for the simulated clock.
const NOW: i64 = 1_795_000_000;

// Go v0.26's scripts as the wire-format spec (`asynq-wire-format.md`) describes their steps,
// written here for this test: what a Go server or Go's CLI does to the keys, reduced to the
// steps the test reaches (error replies are Redis errors, as Go's are; their texts are ours).

/// Go's dequeue (spec 5.7). KEYS: pending, paused, active, lease; ARGV: lease expiry (s), task
/// key prefix. Returns the message of the task taken, or nil.
const GO_DEQUEUE: &str = r#"
if redis.call("EXISTS", KEYS[2]) == 1 then
    return nil
end
local taken = redis.call("RPOPLPUSH", KEYS[1], KEYS[3])
if not taken then
    return nil
end
local task = ARGV[2] .. taken
redis.call("HSET", task, "state", "active")
redis.call("HDEL", task, "pending_since")
redis.call("ZADD", KEYS[4], ARGV[1], taken)
return redis.call("HGET", task, "msg")
"#;

/// Go's forward (spec 5.13), for tasks without a group. KEYS: scheduled or retry, pending;
/// ARGV: now (s), task key prefix, now (ns). Returns how many it moved.
const GO_FORWARD: &str = r#"
local due = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1], "LIMIT", 0, 100)
for _, id in ipairs(due) do
    redis.call("LPUSH", KEYS[2], id)
    redis.call("ZREM", KEYS[1], id)
    redis.call("HSET", ARGV[2] .. id, "state", "pending", "pending_since", ARGV[3])
end
return #due
"#;

/// Go's task inspection (spec 6.5). KEYS: task key; ARGV: id, now (s), queue prefix. Returns
/// {msg, state, next process time, result}.
const GO_TASK_INFO: &str = r#"
if redis.call("EXISTS", KEYS[1]) == 0 then
    return redis.error_reply("NOT FOUND")
end
local fields = redis.call("HMGET", KEYS[1], "msg", "state", "result")
local next_at = 0
if fields[2] == "scheduled" or fields[2] == "retry" then
    next_at = redis.call("ZSCORE", ARGV[3] .. fields[2], ARGV[1])
elseif fields[2] == "pending" then
    next_at = ARGV[2]
end
return {fields[1], fields[2], next_at, fields[3]}
"#;

/// Go's run of one task (spec 6.9), up to its refusals. KEYS: task key; ARGV: none. Returns 0
/// for a missing task, -1 for an active one, -2 for a pending one (nothing written).
const GO_RUN_TASK: &str = r#"
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
local state = redis.call("HGET", KEYS[1], "state")
if state == "active" then
    return -1
elseif state == "pending" then
    return -2
end
return redis.error_reply("this emulation stops at Go's refusals")
"#;

/// Go's archive or delete of one pending task (spec 6.10, 6.11), up to its first write: the
/// task is taken out of Go's pending list, and the script fails when it is not there. KEYS:
/// task key; ARGV: id, queue prefix. Returns 1 once removed (the rest of Go's steps are not
/// needed here).
const GO_TAKE_OUT_PENDING: &str = r#"
if redis.call("HGET", KEYS[1], "state") ~= "pending" then
    return redis.error_reply("this emulation covers pending tasks only")
end
if redis.call("LREM", ARGV[2] .. "pending", 1, ARGV[1]) == 0 then
    return redis.error_reply("task " .. ARGV[1] .. " not found in list " .. ARGV[2] .. "pending")
end
return 1
"#;

/// Runs `script` with `keys` and `args`: its reply, or its error reply.
fn eval(redis: &RedisServer, script: &str, keys: &[&str], args: &[&str]) -> Result<RespValue, String> {
    let count = keys.len().to_string();
    let mut command = vec!["EVAL", script, count.as_str()];
    command.extend(keys);
    command.extend(args);
    redis.command(&command)
}

/// The members of the list at `key`, head first.
fn list(redis: &RedisServer, key: &str) -> Vec<String> {
    let reply = redis.command(&["LRANGE", key, "0", "-1"]).unwrap();
    reply.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

/// Every field of the hash at `key`, but `msg`.
fn fields(redis: &RedisServer, key: &str) -> Vec<(String, String)> {
    let reply = redis.command(&["HGETALL", key]).unwrap();
    let mut pairs: Vec<(String, String)> = reply
        .as_array()
        .unwrap()
        .chunks_exact(2)
        .map(|pair| (pair[0].as_str().unwrap().to_owned(), pair[1].as_str().unwrap_or("<bytes>").to_owned()))
        .filter(|(field, _)| field != "msg")
        .collect();
    pairs.sort();
    pairs
}

/// Everything under `asynq:{q}:`, as DUMP sees it: to check that a refused Go action wrote
/// nothing.
fn dump(redis: &RedisServer) -> Vec<(String, Option<String>)> {
    let keys = redis.command(&["KEYS", "asynq:{q}:*"]).unwrap();
    let mut keys: Vec<String> = keys.as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_owned()).collect();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let value = redis.command(&["DUMP", &key]).unwrap();
            let value = value.as_str().map(str::to_owned);
            (key, value)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_sees_prioritized_tasks_as_pending_tasks_it_cannot_take_or_touch() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(from_unix_secs(NOW));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let client = Client::new(broker.clone()).with_clock(Arc::new(clock.clone()));
    let inspector = Inspector::new(broker.clone());
    let q = || TaskOptions::new().queue("q");
    for (id, options) in [
        ("plain", q()),
        ("high", q().priority(5)),
        ("low", q().priority(-5)),
        ("later", q().priority(3).process_in(Duration::from_secs(60))),
    ] {
        client.enqueue(&Task::new("t", id), options.task_id(id)).await.unwrap();
    }

    // Go's pending list holds the default priority's task only; ours are in a set of ours.
    assert_eq!(list(&redis, "asynq:{q}:pending"), ["plain"]);
    assert_eq!(redis.command(&["ZCARD", "asynq:{q}:prioritized"]).unwrap().as_int(), Some(2));
    // A prioritized task's hash is Go's (msg, state, pending_since) plus our `priority`, which
    // a scheduled one carries too; Go's message is the same as for any task.
    let since = (i128::from(NOW) * 1_000_000_000).to_string();
    let pending = |priority: &str| {
        vec![
            ("pending_since".to_owned(), since.clone()),
            ("priority".to_owned(), priority.to_owned()),
            ("state".to_owned(), "pending".to_owned()),
        ]
    };
    assert_eq!(fields(&redis, "asynq:{q}:t:high"), pending("5"));
    assert_eq!(fields(&redis, "asynq:{q}:t:low"), pending("-5"));
    assert_eq!(
        fields(&redis, "asynq:{q}:t:later"),
        [("priority".to_owned(), "3".to_owned()), ("state".to_owned(), "scheduled".to_owned())]
    );
    assert_eq!(fields(&redis, "asynq:{q}:t:plain"), [pending("")[0].clone(), pending("")[2].clone()]);

    // Go's task inspection reads a prioritized task as pending, due now.
    let info = eval(&redis, GO_TASK_INFO, &["asynq:{q}:t:high"], &["high", &NOW.to_string(), "asynq:{q}:"]).unwrap();
    let info = info.as_array().unwrap();
    assert_eq!((info[1].as_str(), info[2].as_str()), (Some("pending"), Some(NOW.to_string().as_str())));

    // Go's task actions on it fail before they write anything.
    let before = dump(&redis);
    for (action, id) in [("delete", "high"), ("archive", "low")] {
        let refused = eval(&redis, GO_TAKE_OUT_PENDING, &[&format!("asynq:{{q}}:t:{id}")], &[id, "asynq:{q}:"]);
        assert!(matches!(refused, Err(ref e) if e.contains("not found in list")), "Go's {action}: {refused:?}");
    }
    let run = eval(&redis, GO_RUN_TASK, &["asynq:{q}:t:high"], &[]);
    assert_eq!(run.unwrap().as_int(), Some(-2), "Go's runTask: already pending");
    assert_eq!(dump(&redis), before, "Go's refused actions wrote nothing");

    // Go's server takes the default priority's task and nothing else.
    let go_keys = ["asynq:{q}:pending", "asynq:{q}:paused", "asynq:{q}:active", "asynq:{q}:lease"];
    let lease = (NOW + 30).to_string();
    let taken = eval(&redis, GO_DEQUEUE, &go_keys, &[&lease, "asynq:{q}:t:"]).unwrap();
    assert!(matches!(taken, RespValue::Bulk(_)), "Go takes the plain task: {taken:?}");
    assert!(matches!(eval(&redis, GO_DEQUEUE, &go_keys, &[&lease, "asynq:{q}:t:"]), Ok(RespValue::Nil)));
    assert_eq!(list(&redis, "asynq:{q}:active"), ["plain"]);

    // Ours counts and lists prioritized tasks as pending, in the order they run; Go's
    // `currentStats` counts the list, now empty.
    let queue = QueueName::from_static("q");
    let info = inspector.queue_info("q").await.unwrap();
    assert_eq!((info.pending, info.active, info.scheduled), (2, 1, 1));
    assert_eq!(redis.command(&["LLEN", "asynq:{q}:pending"]).unwrap().as_int(), Some(0));
    let listed: Vec<String> = inspector
        .list_tasks("q", TaskState::Pending, Page::default())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id.into_string())
        .collect();
    assert_eq!(listed, ["high", "low"]);

    // A prioritized task that Go's forwarder makes pending joins Go's list: it runs at the
    // default priority (before "low", after "high"), and still shows its priority.
    clock.advance(Duration::from_secs(60));
    let now = (NOW + 60).to_string();
    let now_ns = (i128::from(NOW + 60) * 1_000_000_000).to_string();
    let moved =
        eval(&redis, GO_FORWARD, &["asynq:{q}:scheduled", "asynq:{q}:pending"], &[&now, "asynq:{q}:t:", &now_ns]);
    assert_eq!(moved.unwrap().as_int(), Some(1));
    assert_eq!(list(&redis, "asynq:{q}:pending"), ["later"]);
    assert_eq!(inspector.task_info("q", "later").await.unwrap().priority.get(), 3);
    let order: Vec<String> = broker
        .dequeue(std::slice::from_ref(&queue), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.message.id.into_string())
        .collect();
    assert_eq!(order, ["high", "later", "low"]);
}
