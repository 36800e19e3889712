//! A running server's relayer is the one owner of the workflow relay, and it is prompt: on a real
//! redis-server, the dependents a parent's settle leaves in the outbox (more than a settle
//! releases in its own step, and one in another queue) are all released before the relayer's
//! first periodic pass could run, so by the relay the settle asked for, not by the periodic one.

use asynq_client::{FlowProducer, Task, TaskOptions, TaskState};
use asynq_core::QueueName;
use asynq_core::TaskId;
use asynq_core::broker::Inspect;
use asynq_core::workflow::Flow;
use asynq_redis::RedisBroker;
use asynq_server::{Config, Server, TaskContext, WORKFLOW_RELAY_INTERVAL, handler_fn};
use asynq_tests::RedisServer;
use std::time::{Duration, Instant};

/// More dependents than a settle releases in its own step, so they go through the outbox.
const FAN_OUT: usize = 70;

fn task(queue: &str, id: &str) -> Flow {
    Flow::task(Task::new("t", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependents_through_the_outbox_are_released_at_once_by_the_server_s_relayer() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let config = Config {
        concurrency: 4,
        queues: [("q".to_owned(), 1)].into(),
        task_check_interval: Duration::from_millis(20),
        ..Config::default()
    };
    let mut server = Server::new(broker.clone(), config).unwrap();
    let started = Instant::now();
    server.start(handler_fn(|_: TaskContext, _: Task| async { Ok(()) })).unwrap();
    let fan_out = Flow::group((0..FAN_OUT).map(|n| task("q", &format!("w{n}"))));
    // "elsewhere" is served by no server: its dependent stays pending once released.
    let flow = task("q", "root").then(Flow::group([task("elsewhere", "away"), fan_out]));
    FlowProducer::new(broker.clone()).enqueue(&flow).await.unwrap();

    let (q, elsewhere) = (QueueName::from_static("q"), QueueName::from_static("elsewhere"));
    let away = TaskId::from_static("away");
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting_in_q = broker.queue_info(&q).await.unwrap().waiting;
        let away_state = broker.task_info(&elsewhere, &away).await.unwrap().state;
        if waiting_in_q == 0 && away_state == TaskState::Pending {
            break;
        }
        assert!(Instant::now() < give_up, "not released: {waiting_in_q} waiting in q, away {away_state:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let released = started.elapsed();
    server.shutdown().await;
    assert!(
        released < WORKFLOW_RELAY_INTERVAL,
        "released after {released:?}: the relayer's periodic pass did it, not the relay the settle asked for"
    );
    let root = broker.task_info(&q, &TaskId::from_static("root")).await;
    assert!(root.is_err() || root.unwrap().state == TaskState::Completed, "the root settled");
}
