//! Many producers sharing one client: the enqueues that arrive while a call is in flight go
//! together in batch calls, and every caller still gets its own result, exactly what it would
//! have got alone: conflicting IDs and held uniqueness locks are refused for one caller each,
//! scheduled and grouped tasks land where they belong; and so they do when the client waits busy
//! for its replies (`Client::with_spin_wait`), alone or gathered.

use asynq_client::{Client, Error, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::Inspect;
use asynq_memory::MemoryBroker;
use asynq_redis::RedisBroker;
use asynq_tests::RedisServer;
use std::time::Duration;

const PRODUCERS: usize = 64;
const PER_PRODUCER: usize = 30;

/// What producer `p` enqueues as its `n`th task: every fifth a scheduled one, every seventh a
/// grouped one; producers 0 and 1 share their task IDs, and so do producers 2 and 3 their
/// unique tasks, so that each pair races for every one of them.
fn task(p: usize, n: usize) -> (Task, TaskOptions) {
    let base = TaskOptions::new().queue("gathered");
    match (p, n) {
        (0 | 1, _) => (Task::new("shared-id", format!("{p}")), base.task_id(format!("shared-{n}"))),
        (2 | 3, _) => (Task::new("unique", format!("{n}")), base.unique(Duration::from_secs(600))),
        (_, n) if n % 5 == 0 => (Task::new("later", format!("{p}-{n}")), base.process_in(Duration::from_secs(3600))),
        (_, n) if n % 7 == 0 => (Task::new("grouped", format!("{p}-{n}")), base.group("g")),
        _ => (Task::new("now", format!("{p}-{n}")), base),
    }
}

/// Runs every producer at once, on as many threads as the runtime has, and checks every
/// result and what the queue holds afterwards.
async fn producers_share_one_client(client: Client, inspect: &dyn Inspect) {
    let mut running = tokio::task::JoinSet::new();
    for p in 0..PRODUCERS {
        let client = client.clone();
        running.spawn(async move {
            let mut results = Vec::with_capacity(PER_PRODUCER);
            for n in 0..PER_PRODUCER {
                let (task, options) = task(p, n);
                results.push(client.enqueue(&task, options).await);
            }
            (p, results)
        });
    }
    let mut by_producer: Vec<Vec<_>> = (0..PRODUCERS).map(|_| Vec::new()).collect();
    while let Some(done) = running.join_next().await {
        let (p, results) = done.unwrap();
        by_producer[p] = results;
    }
    for pair in [[0, 1], [2, 3]] {
        for (n, (a, b)) in by_producer[pair[0]].iter().zip(&by_producer[pair[1]]).enumerate() {
            assert!(a.is_ok() != b.is_ok(), "exactly one of producers {pair:?} stores task {n}: {a:?} / {b:?}");
            let refused = if a.is_err() { a } else { b };
            match (pair[0], refused) {
                (0, Err(Error::TaskIdConflict { id, .. })) => assert_eq!(id, &format!("shared-{n}")),
                (2, Err(Error::DuplicateTask { type_name, .. })) => assert_eq!(type_name, "unique"),
                (_, other) => panic!("producers {pair:?}, task {n}: unexpected {other:?}"),
            }
        }
    }
    for results in &by_producer[4..] {
        assert!(results.iter().all(Result::is_ok), "{:?}", results.iter().find(|r| r.is_err()));
    }

    let others = PRODUCERS - 4;
    let scheduled = others * (0..PER_PRODUCER).filter(|n| n % 5 == 0).count();
    let grouped = others * (0..PER_PRODUCER).filter(|n| n % 5 != 0 && n % 7 == 0).count();
    let pending = others * PER_PRODUCER - scheduled - grouped + 2 * PER_PRODUCER;
    let info = inspect.queue_info(&QueueName::from_static("gathered")).await.unwrap();
    assert_eq!((info.pending, info.scheduled, info.aggregating), (pending, scheduled, grouped), "{info:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_producers_sharing_a_client_each_get_their_own_result() {
    let broker = MemoryBroker::new();
    producers_share_one_client(Client::new(broker.clone()), &broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_producers_sharing_a_client_each_get_their_own_result_in_fewer_calls() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    producers_share_one_client(Client::new(broker.clone()), &broker).await;
    let calls = redis.command_calls("evalsha");
    // Sixty-four producers on four threads against one connection cannot all have been sent
    // alone; how much they were gathered depends on timing, so only that is checked.
    assert!(calls < (PRODUCERS * PER_PRODUCER) as u64, "{calls} script calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_producers_waiting_busy_each_get_their_own_result() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone()).with_spin_wait(Duration::from_micros(200));
    producers_share_one_client(client, &broker).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_lone_producer_waiting_busy_gets_each_reply_and_each_refusal() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone()).with_spin_wait(Duration::from_millis(5));
    let options = TaskOptions::new().queue("gathered").task_id("lone");
    client.enqueue(&Task::new("now", "1"), options.clone()).await.unwrap();
    let again = client.enqueue(&Task::new("now", "2"), options.clone()).await;
    assert!(matches!(again, Err(Error::TaskIdConflict { .. })), "{again:?}");
    let replaced = client.replace("lone", &Task::new("now", "3"), TaskOptions::new().queue("gathered")).await.unwrap();
    assert_eq!(replaced.id, "lone");
    let batch = [(Task::new("now", "4"), TaskOptions::new().queue("gathered")), (Task::new("now", "5"), options)];
    let results = client.enqueue_batch(&batch).await;
    assert!(results[0].is_ok() && matches!(results[1], Err(Error::TaskIdConflict { .. })), "{results:?}");
    let info = broker.queue_info(&QueueName::from_static("gathered")).await.unwrap();
    assert_eq!(info.pending, 2);
}
