//! Push wake-ups through a real redis-server: where an idle server's mark comes from, and how a
//! server on many queues skips the quiet ones. The conformance suite checks that waits wake;
//! this checks the marks that make them wake, and what quiet queues cost.

use asynq_client::{Client, Task, TaskOptions};
use asynq_core::QueueName;
use asynq_core::broker::{Dequeue, Dequeued, Forward, Janitor, Recover};
use asynq_redis::RedisBroker;
use asynq_tests::{RedisServer, RespValue};
use std::time::{Duration, SystemTime};

const MARK: &str = "asynq:{default}:idle_workers";

fn marked(redis: &RedisServer) -> bool {
    redis.command(&["EXISTS", MARK]).unwrap() == RespValue::Integer(1)
}

/// `n` queues, `q0`, `q1`, ...
fn queues(n: usize) -> Vec<QueueName> {
    (0..n).map(|i| QueueName::new(format!("q{i}")).unwrap()).collect()
}

/// Starts `broker`'s wait for tasks in `queues`.
fn wait_in_background(broker: &RedisBroker, queues: &[QueueName]) -> tokio::task::JoinHandle<()> {
    let (broker, queues) = (broker.clone(), queues.to_vec());
    tokio::spawn(async move { broker.wait_for_tasks(&queues).await })
}

/// Fetches from `queues` until a fetch takes something. Quiet queues are checked for tasks that
/// came without a wake-up every half second; this gives up after ten.
async fn dequeue_until_taken(broker: &RedisBroker, queues: &[QueueName]) -> Vec<Dequeued> {
    for _ in 0..200 {
        let taken = broker.dequeue(queues, 10).await.unwrap();
        if !taken.is_empty() {
            return taken;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no fetch took the task within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fetch_marks_the_queue_idle() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let queues = vec![QueueName::default()];
    let task = Task::new("t", "");
    let enqueue = || client.enqueue(&task, TaskOptions::new());

    // The fetch that comes up short sets the mark itself, with its expiry; the producer that
    // makes a task pending there wakes the wait (and leaves the mark; see `enqueue.lua`).
    enqueue().await.unwrap();
    assert_eq!(broker.dequeue(&queues, 5).await.unwrap().len(), 1);
    assert!(marked(&redis), "a short fetch marks the queue");
    let waiter = wait_in_background(&broker, &queues);
    enqueue().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("the enqueue woke the wait").unwrap();
    assert!(marked(&redis), "the enqueue leaves the mark");
    let RespValue::Integer(ttl) = redis.command(&["TTL", MARK]).unwrap() else { panic!("TTL answers an integer") };
    assert!(ttl > 0, "the mark expires: TTL {ttl}");

    // A fetch that gets all it asked for leaves none.
    redis.command(&["DEL", MARK]).unwrap();
    enqueue().await.unwrap();
    enqueue().await.unwrap();
    assert_eq!(broker.dequeue(&queues, 2).await.unwrap().len(), 2);
    assert!(!marked(&redis));
}

/// A short fetch sets the idle mark only when its broker does not know it to be in place: it set
/// the mark, and every wake-up since came from a plain enqueue, which keeps it. A wake-up from a
/// script that deletes the mark (here a prioritized enqueue) makes the next short fetch set it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fetch_sets_the_mark_only_when_it_may_be_gone() {
    let redis = RedisServer::start();
    let server = RedisBroker::connect(&redis.url()).await.unwrap();
    // A producer of its own, as in another process: its wake-ups come through Redis only.
    let client = Client::new(RedisBroker::connect(&redis.url()).await.unwrap());
    let queues = vec![QueueName::default()];
    let sets = || redis.command_calls("set");

    assert!(server.dequeue(&queues, 5).await.unwrap().is_empty());
    assert!(marked(&redis));
    let after_first = sets();
    assert_eq!(after_first, 1, "the first short fetch sets the mark");

    // Plain enqueues wake the server and keep the mark: its short fetches set nothing.
    for _ in 0..3 {
        client.enqueue(&Task::new("t", ""), TaskOptions::new()).await.unwrap();
        assert_eq!(dequeue_until_taken(&server, &queues).await.len(), 1);
    }
    assert_eq!(sets(), after_first, "the mark was known to be in place");
    assert!(marked(&redis));

    // A prioritized task's enqueue deletes the mark as it wakes the server. A fetch that ran
    // before the wake-up was heard (the half-second check found the task) trusts the mark still;
    // the wake-up, once heard, makes the next short fetch set it: either way, it is set once.
    client.enqueue(&Task::new("t", ""), TaskOptions::new().priority(5)).await.unwrap();
    assert!(!marked(&redis));
    assert_eq!(dequeue_until_taken(&server, &queues).await.len(), 1);
    for _ in 0..500 {
        if marked(&redis) {
            break;
        }
        assert!(server.dequeue(&queues, 5).await.unwrap().is_empty());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(marked(&redis), "a short fetch after that wake-up set the mark again");
    assert_eq!(sets(), after_first + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_enqueue_that_makes_the_queue_non_empty_wakes_servers() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let task = Task::new("t", "");
    let enqueue = || client.enqueue(&task, TaskOptions::new());
    // The wake-ups published so far.
    let wake_ups = || redis.command_calls("publish");

    // A server found the queue empty and waits: the first task wakes it, without a command for
    // the mark, which stays (it still gates the wake-ups of the other scripts).
    redis.command(&["SET", MARK, "1"]).unwrap();
    enqueue().await.unwrap();
    assert!(marked(&redis));
    assert_eq!(wake_ups(), 1);
    assert_eq!(redis.command_calls("del"), 0, "the enqueue ran no DEL");

    // No server waits on a queue with tasks pending: those that join them publish nothing.
    enqueue().await.unwrap();
    enqueue().await.unwrap();
    assert!(marked(&redis), "the backlog's enqueues left the mark");
    assert_eq!(wake_ups(), 1, "and published nothing");

    // Once the queue is drained, the next task wakes the waiting servers again.
    let queues = vec![QueueName::default()];
    assert_eq!(broker.dequeue(&queues, 10).await.unwrap().len(), 3);
    enqueue().await.unwrap();
    assert_eq!(wake_ups(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_skips_quiet_queues_until_a_wake_up_names_one() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let queues = queues(200);
    let scripts = || redis.command_calls("evalsha");

    // The first fetch dequeues every queue and finds each empty; later ones run no script.
    assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
    assert_eq!(scripts(), 200);
    for _ in 0..3 {
        assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
    }
    assert_eq!(scripts(), 200, "quiet queues cost no script");

    // A producer's task in one of them wakes the wait, and the next fetch dequeues that queue
    // alone.
    let waiter = wait_in_background(&broker, &queues);
    client.enqueue(&Task::new("t", ""), TaskOptions::new().queue("q137")).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("the enqueue woke the wait").unwrap();
    let before = scripts();
    let taken = broker.dequeue(&queues, 10).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].message.queue, "q137");
    assert_eq!(scripts() - before, 1, "only the woken queue was dequeued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_made_pending_without_a_wake_up_is_found_by_the_check() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let queues = queues(50);
    assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());

    // As Go's producers do: with the mark gone, a batch publishes no wake-up either (a single
    // enqueue publishes whenever its task makes the list non-empty).
    redis.command(&["DEL", "asynq:{q7}:idle_workers"]).unwrap();
    let batch =
        [(Task::new("t", ""), TaskOptions::new().queue("q7")), (Task::new("t", ""), TaskOptions::new().queue("q7"))];
    assert!(client.enqueue_batch(&batch).await.iter().all(Result::is_ok));
    assert_eq!(redis.command_calls("publish"), 0);
    let taken = dequeue_until_taken(&broker, &queues).await;
    assert_eq!(taken[0].message.queue, "q7");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_queue_stays_quiet_until_it_is_unpaused() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let client = Client::new(broker.clone());
    let queues = queues(20);
    let scripts = || redis.command_calls("evalsha");
    client.enqueue(&Task::new("t", ""), TaskOptions::new().queue("q3")).await.unwrap();
    redis.command(&["SET", "asynq:{q3}:paused", "1"]).unwrap();

    // Paused with a task pending, q3 is quiet like the empty ones.
    assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
    let quiet = scripts();
    for _ in 0..3 {
        assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
    }
    assert_eq!(scripts(), quiet, "a paused queue costs no script");

    // Go's CLI unpauses with a DEL and publishes nothing: the check finds it.
    redis.command(&["DEL", "asynq:{q3}:paused"]).unwrap();
    let taken = dequeue_until_taken(&broker, &queues).await;
    assert_eq!(taken[0].message.queue, "q3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_wake_up_connection_ends_every_quiet() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let queues = queues(20);
    let scripts = || redis.command_calls("evalsha");
    assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
    let quiet = scripts();
    assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
    assert_eq!(scripts(), quiet);

    // Wake-ups published while no connection listens are lost: once the broker notices, it
    // dequeues every queue again (and subscribes anew).
    redis.command(&["CLIENT", "KILL", "TYPE", "pubsub"]).unwrap();
    for _ in 0..200 {
        let before = scripts();
        assert!(broker.dequeue(&queues, 10).await.unwrap().is_empty());
        if scripts() - before == 20 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the broker went on skipping its queues after its wake-up connection dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_passes_over_idle_queues_run_no_script() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let queues = queues(300);
    assert_eq!(broker.forward_ready(&queues).await.unwrap().moved, 0);
    assert!(broker.list_lease_expired(&queues, SystemTime::now()).await.unwrap().is_empty());
    assert_eq!(broker.delete_all_expired_completed(&queues, 100).await.unwrap(), 0);
    assert_eq!(redis.command_calls("evalsha"), 0);
    assert_eq!(redis.command_calls("exists"), 3, "one command per pass finds that no queue has work for it");
}
