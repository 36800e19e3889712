//! Durable steps, a sleep and a signal through a server on a real redis-server, on a simulated
//! clock: what a parked task looks like in Redis (what Go's tools see), and that it goes on
//! when due and when signalled, each step running once; the `parked` field goes when the park
//! ends; a parked task that was once grouped is one Go's forwarder makes pending.

use asynq_client::{Client, Task, TaskOptions, TaskState};
use asynq_core::broker::{Dequeue, Enqueue, Forward, Inspect, Manage, Steps};
use asynq_core::steps::{ParkReason, Parked, StepName};
use asynq_core::{Clock, QueueName, SimulatedClock, TaskId};
use asynq_server::{Config, HandlerError, Server, TaskContext, handler_fn};
use asynq_tests::{RedisServer, RespValue, redis_broker, wait_for};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn bulk(value: RespValue) -> Option<String> {
    match value {
        RespValue::Bulk(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_sleeps_waits_for_a_signal_and_runs_each_step_once_on_redis() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(std::time::UNIX_EPOCH + Duration::from_secs(1_795_305_600));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let client = Client::new(broker.clone()).with_clock(Arc::new(clock.clone())).with_steps(Arc::new(broker.clone()));
    let runs = Arc::new(Mutex::new(Vec::<String>::new()));
    let handler = handler_fn({
        let runs = runs.clone();
        move |ctx: TaskContext, _task| {
            let runs = runs.clone();
            async move {
                let r = runs.clone();
                ctx.step("a", || async move {
                    r.lock().unwrap().push("a".into());
                    Ok::<_, HandlerError>(1)
                })
                .await?;
                ctx.sleep(Duration::from_secs(60)).await?;
                let approved = ctx.wait_for_signal::<String>("go", Duration::from_secs(3600)).await?;
                let r = runs.clone();
                ctx.step("b", || async move {
                    r.lock().unwrap().push(format!("b {approved:?}"));
                    Ok::<_, HandlerError>(())
                })
                .await?;
                Ok(())
            }
        }
    });
    let config = Config {
        queues: [("default".to_owned(), 1)].into(),
        clock: Arc::new(clock.clone()),
        task_check_interval: Duration::from_millis(20),
        delayed_task_check_interval: Duration::from_millis(50),
        ..Config::default()
    };
    let mut server = Server::new(broker.clone(), config).unwrap();
    server.start(handler).unwrap();
    let info =
        client.enqueue(&Task::new("flow", ""), TaskOptions::new().retention(Duration::from_secs(600))).await.unwrap();
    let (q, id) = (QueueName::from_static("default"), info.id.clone());
    let parked_for = |reason: &'static str| {
        let (broker, q, id) = (broker.clone(), q.clone(), id.clone());
        async move {
            let info = broker.task_info(&q, &id).await.unwrap();
            match (&info.state, info.parked.as_ref().map(|p| &p.reason)) {
                (TaskState::Scheduled, Some(ParkReason::Sleep)) => reason == "sleep",
                (TaskState::Scheduled, Some(ParkReason::Signal(_))) => reason == "signal",
                _ => false,
            }
        }
    };
    wait_for("the task sleeps", || parked_for("sleep")).await;

    // What Go's tools see: a scheduled task, in the scheduled set, with fields they ignore.
    let key = format!("asynq:{{default}}:t:{id}");
    assert_eq!(bulk(redis.command(&["HGET", &key, "state"]).unwrap()).as_deref(), Some("scheduled"));
    assert!(bulk(redis.command(&["HGET", &key, "parked"]).unwrap()).is_some_and(|p| p.starts_with("sleep:")));
    assert!(bulk(redis.command(&["HGET", &key, "step:a"]).unwrap()).is_some_and(|v| v.ends_with(":1")));
    let score = redis.command(&["ZSCORE", "asynq:{default}:scheduled", id.as_str()]).unwrap();
    assert_eq!(bulk(score), Some((asynq_core::time::unix_secs(clock.now()) + 60).to_string()));
    assert_eq!(broker.task_info(&q, &id).await.unwrap().retried, 0);

    clock.advance(Duration::from_secs(61));
    wait_for("the task waits for its signal", || parked_for("signal")).await;
    assert!(client.signal("default", &id, "go", &"yes").await.unwrap(), "the signal wakes it");
    wait_for("the task completes", || async {
        broker.task_info(&q, &id).await.is_ok_and(|info| info.state == TaskState::Completed)
    })
    .await;
    assert_eq!(runs.lock().unwrap().clone(), ["a", "b Received(\"yes\")"]);
    let info = broker.task_info(&q, &id).await.unwrap();
    let names: Vec<&str> = info.steps.iter().map(|s| s.name().as_str()).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    for name in ["a", "sleep#1", "wait:go", "signal:go", "b"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert_eq!(redis.command(&["HEXISTS", &key, "parked"]).unwrap(), RespValue::Integer(0), "the park ended");
    server.shutdown().await;
}

/// The `parked` field goes when the park ends: when the signal the task waits for wakes it, or
/// when the attempt that goes on reads its records (after the forwarder made it due); a read
/// while it is parked keeps it.
#[tokio::test]
async fn the_parked_field_goes_when_the_task_goes_on() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(std::time::UNIX_EPOCH + Duration::from_secs(1_795_305_600));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let (q, id) = (QueueName::from_static("q"), TaskId::from_static("a"));
    let options = TaskOptions::new().queue("q").task_id("a");
    let request = asynq_core::resolve_enqueue(&Task::new("t", ""), &options, clock.now(), || unreachable!()).unwrap();
    broker.enqueue(request).await.unwrap();
    let take = || async { broker.dequeue(std::slice::from_ref(&q), 1).await.unwrap().remove(0).message };
    let has_parked = || redis.command(&["HEXISTS", "asynq:{q}:t:a", "parked"]).unwrap() == RespValue::Integer(1);

    let message = take().await;
    broker.park(&message, &Parked::new(ParkReason::Sleep, clock.now() + Duration::from_secs(10)), None).await.unwrap();
    broker.step_records(&q, &id).await.unwrap();
    assert!(has_parked(), "a read while parked keeps it");
    clock.advance(Duration::from_secs(10));
    assert_eq!(broker.forward_ready(std::slice::from_ref(&q)).await.unwrap().moved, 1);
    let message = take().await;
    assert!(has_parked(), "kept until the attempt reads its records: nothing added to the dequeue");
    broker.step_records(&q, &id).await.unwrap();
    assert!(!has_parked());

    let go = StepName::new("go").unwrap();
    let wait = Parked::new(ParkReason::Signal(go.clone()), clock.now() + Duration::from_secs(60));
    broker.park(&message, &wait, None).await.unwrap();
    assert!(has_parked());
    assert!(broker.signal(&q, &id, &go, bytes::Bytes::new()).await.unwrap());
    assert!(!has_parked(), "the signal that wakes it ends the park");
}

/// Go v0.26's forward (wire-format spec 5.13) as the spec describes its steps, written here for
/// this test. KEYS: scheduled or retry, pending; ARGV: now (s), task key prefix, now (ns), group
/// key prefix. Returns how many tasks it moved.
const GO_FORWARD: &str = r#"
local due = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1], "LIMIT", 0, 100)
for _, id in ipairs(due) do
    local key = ARGV[2] .. id
    local group = redis.call("HGET", key, "group")
    if group and group ~= "" then
        redis.call("ZADD", ARGV[4] .. group, ARGV[1], id)
        redis.call("ZREM", KEYS[1], id)
        redis.call("HSET", key, "state", "aggregating")
    else
        redis.call("LPUSH", KEYS[2], id)
        redis.call("ZREM", KEYS[1], id)
        redis.call("HSET", key, "state", "pending", "pending_since", ARGV[3])
    end
end
return #due
"#;

/// The members of the sorted set or list at `key`, as Redis gives them.
fn members(redis: &RedisServer, command: &[&str]) -> Vec<String> {
    let reply = redis.command(command).unwrap();
    reply.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

/// A grouped task an operator ran, whose handler parks, has no `group` field in its hash any
/// more (its message keeps its group): Go's forwarder, which reads the field, makes it pending
/// when due rather than put it back into its group, as ours does.
#[tokio::test]
async fn a_parked_task_once_grouped_is_made_pending_by_go_s_forwarder() {
    let redis = RedisServer::start();
    let clock = SimulatedClock::new(std::time::UNIX_EPOCH + Duration::from_secs(1_795_305_600));
    let broker = redis_broker(&redis.url(), Arc::new(clock.clone())).await;
    let (q, a) = (QueueName::from_static("q"), TaskId::from_static("a"));
    for id in ["a", "b"] {
        let options = TaskOptions::new().queue("q").task_id(id).group("g");
        let request = asynq_core::resolve_enqueue(&Task::new("t", ""), &options, clock.now(), || unreachable!());
        broker.enqueue(request.unwrap()).await.unwrap();
    }
    broker.run_task(&q, &a).await.unwrap();
    let message = broker.dequeue(std::slice::from_ref(&q), 1).await.unwrap().remove(0).message;
    assert_eq!(message.id, "a");
    broker.park(&message, &Parked::new(ParkReason::Sleep, clock.now() + Duration::from_secs(10)), None).await.unwrap();
    assert_eq!(redis.command(&["HEXISTS", "asynq:{q}:t:a", "group"]).unwrap(), RespValue::Integer(0));
    assert_eq!(broker.task_info(&q, &a).await.unwrap().group.map(|g| g.into_string()).as_deref(), Some("g"));

    clock.advance(Duration::from_secs(10));
    let now = clock.now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let (secs, nanos) = (now.as_secs().to_string(), now.as_nanos().to_string());
    let keys = ["asynq:{q}:scheduled", "asynq:{q}:pending"];
    let args = [secs.as_str(), "asynq:{q}:t:", nanos.as_str(), "asynq:{q}:g:"];
    let mut command = vec!["EVAL", GO_FORWARD, "2"];
    command.extend(keys);
    command.extend(args);
    assert_eq!(redis.command(&command).unwrap(), RespValue::Integer(1));
    assert_eq!(bulk(redis.command(&["HGET", "asynq:{q}:t:a", "state"]).unwrap()).as_deref(), Some("pending"));
    assert_eq!(members(&redis, &["LRANGE", "asynq:{q}:pending", "0", "-1"]), ["a"]);
    assert_eq!(members(&redis, &["ZRANGE", "asynq:{q}:g:g", "0", "-1"]), ["b"], "the group keeps only b");
    let taken = broker.dequeue(std::slice::from_ref(&q), 1).await.unwrap();
    assert_eq!(taken[0].message.id, "a", "and our server runs it");
}
