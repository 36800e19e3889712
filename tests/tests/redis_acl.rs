//! Redis ACL users: a client, a server and an inspector that log in as a user allowed only
//! asynq's keys and channels do all their work, and a wrong password is refused with an error
//! that does not repeat it.

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::{Clock, SystemClock};
use asynq_redis::{RedisBroker, RedisTarget};
use asynq_server::{Config, Server};
use asynq_tests::{Recorder, RedisServer, wait_for};
use std::sync::Arc;
use std::time::Duration;

const PASSWORD: &str = "s3cret-Pa55";

/// A server with a user `worker` that may touch only `asynq:*` keys and channels.
fn server_with_a_restricted_user() -> RedisServer {
    let redis = RedisServer::start();
    let rule = ["ACL", "SETUSER", "worker", "on", &format!(">{PASSWORD}"), "~asynq:*", "&asynq:*", "+@all"];
    redis.command(&rule).unwrap();
    redis
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_limited_to_asynqs_keys_can_do_everything() {
    let redis = server_with_a_restricted_user();
    let url = format!("redis://worker:{PASSWORD}@{}", redis.addr());
    let broker = RedisBroker::connect(&url).await.unwrap();
    let client = Client::new(broker.clone());
    let inspector = Inspector::new(broker.clone());
    for i in 0..20 {
        client.enqueue(&Task::new("job", i.to_string()), TaskOptions::new()).await.unwrap();
    }
    client.enqueue(&Task::new("later", ""), TaskOptions::new().process_in(Duration::from_secs(3600))).await.unwrap();

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Recorder::default();
    let config = Config { concurrency: 4, task_check_interval: Duration::from_millis(20), ..Config::default() };
    let mut server = Server::new(RedisBroker::connect(&url).await.unwrap(), config).unwrap();
    server.start(rec.handler(clock, |_, _| async { Ok(()) })).unwrap();
    wait_for("every task to run", || async { rec.len() == 20 }).await;
    server.shutdown().await;

    let info = inspector.queue_info("default").await.unwrap();
    assert_eq!((info.pending, info.scheduled, info.processed_total), (0, 1, 20));
    assert_eq!(
        inspector.run_all("default", &asynq_client::TaskSet::State(asynq_client::TaskState::Scheduled)).await.unwrap(),
        1
    );
    assert!(inspector.backend_info().await.unwrap().fields.contains_key("redis_version"));
}

#[tokio::test]
async fn a_wrong_password_is_refused_without_repeating_it() {
    let redis = server_with_a_restricted_user();
    let wrong = "not-the-Pa55word";
    let url = format!("redis://worker:{wrong}@{}", redis.addr());
    let err = RedisBroker::connect(&url).await.expect_err("a wrong password is refused");
    let text = format!("{err} {err:?}");
    assert!(!text.contains(wrong), "the error repeats the password: {text}");
    assert!(text.to_lowercase().contains("auth") || text.contains("WRONGPASS"), "{text}");
    let target = format!("{:?}", RedisTarget::from_url(&url).unwrap());
    assert!(!target.contains(wrong), "{target}");
}
