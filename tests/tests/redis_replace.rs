//! Debounce and replace on a real Redis: producers racing on one debounce key leave exactly one
//! task; what Go sees of a debounced task is a plain scheduled task; a replaced task's waiting
//! client waits on for the replacement.

use asynq_client::{Client, Task, TaskOptions, TaskState};
use asynq_redis::RedisBroker;
use asynq_redis::keys::Namespace;
use asynq_tests::RedisServer;
use std::time::Duration;

const WINDOW: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_racing_on_one_debounce_key_leave_one_task() {
    let redis = RedisServer::start();
    // Four connections, as four processes would have, each shared by several concurrent
    // producers (whose enqueues a client gathers into batches).
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(Client::new(RedisBroker::connect(&redis.url()).await.unwrap()));
    }
    let mut producers = Vec::new();
    for producer in 0..16 {
        let client = clients[producer % clients.len()].clone();
        producers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..25 {
                let options = TaskOptions::new().queue("q").debounce("user:42", WINDOW);
                let info = client.enqueue(&Task::new("sync", format!("{producer}:{i}")), options).await.unwrap();
                assert_eq!(info.state, TaskState::Scheduled);
                ids.push(info.id);
            }
            ids
        }));
    }
    let mut all_ids = Vec::new();
    for producer in producers {
        all_ids.extend(producer.await.unwrap());
    }
    assert_eq!(all_ids.len(), 400);

    let keys = Namespace::DEFAULT.queue("q");
    let scheduled = redis.command(&["ZRANGE", &keys.scheduled(), "0", "-1"]).unwrap();
    let scheduled: Vec<&str> = scheduled.as_array().unwrap().iter().map(|id| id.as_str().unwrap()).collect();
    assert_eq!(scheduled.len(), 1, "one task is left of the burst: {scheduled:?}");
    let mark = redis.command(&["GET", &keys.debounce("user:42")]).unwrap();
    assert_eq!(mark.as_str(), Some(scheduled[0]), "the mark names the task left");
    let hashes = redis.command(&["KEYS", &format!("{}*", keys.task_prefix())]).unwrap();
    assert_eq!(hashes.as_array().unwrap().len(), 1, "the replaced tasks' hashes are gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_sees_a_debounced_task_as_a_plain_scheduled_one() {
    let redis = RedisServer::start();
    let client = Client::new(RedisBroker::connect(&redis.url()).await.unwrap());
    let options = TaskOptions::new().queue("q").task_id("t1").debounce("k", WINDOW);
    client.enqueue(&Task::new("sync", "v1"), options).await.unwrap();

    let keys = Namespace::DEFAULT.queue("q");
    let fields = redis.command(&["HKEYS", &keys.task("t1")]).unwrap();
    let mut fields: Vec<&str> = fields.as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["debounce", "msg", "state"], "the hash Go's schedule writes, and the key, which Go ignores");
    assert_eq!(redis.command(&["HGET", &keys.task("t1"), "state"]).unwrap().as_str(), Some("scheduled"));
    let ttl = redis.command(&["PTTL", &keys.debounce("k")]).unwrap().as_int().unwrap();
    assert!(ttl > WINDOW.as_millis() as i64, "the mark outlives the window: {ttl} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_waiting_for_a_replaced_task_waits_on_for_the_replacement() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let later = TaskOptions::new().queue("q").task_id("t1").process_in(WINDOW);
    client.enqueue(&Task::new("sync", "v1"), later).await.unwrap();
    let tracker = asynq_client::Tracker::new(broker);
    let wait = tokio::spawn(async move { tracker.wait("q", "t1", Duration::from_secs(30)).await });

    let keys = Namespace::DEFAULT.queue("q");
    let waiters = || redis.command(&["HEXISTS", &keys.task("t1"), "waiters"]).unwrap().as_int();
    asynq_tests::wait_for("the wait marks the task", || {
        let marked = waiters() == Some(1);
        async move { marked }
    })
    .await;
    let info = client.replace("t1", &Task::new("sync", "v2"), TaskOptions::new().queue("q")).await.unwrap();
    assert_eq!(info.state, TaskState::Pending);
    assert_eq!(waiters(), Some(1), "the replacement keeps the waiting client's mark");
    assert!(!wait.is_finished(), "the wait goes on");
    wait.abort();
}
