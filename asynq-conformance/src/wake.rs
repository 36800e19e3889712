//! Waking idle workers: `wait_for_tasks` resolves when a task becomes pending in a queue it
//! waits on (enqueued, forwarded, requeued, or its queue unpaused), and not while nothing does.

use super::BrokerFactory;
use super::fixture::{Fixture, names, secs};
use asynq_core::QueueName;
use asynq_core::Task;
use asynq_core::TaskOptions;
use asynq_core::broker::{Dequeue, Forward, Inspect, Outcome};
use std::time::Duration;

/// Long enough for a broker to deliver a wake-up over loopback many times over.
const DELIVERY: Duration = Duration::from_secs(5);
/// How long a wait that should not end is watched.
const QUIET: Duration = Duration::from_millis(300);

/// Starts a wait on `queues` in the background.
fn wait<B: asynq_core::Broker + Clone>(broker: &B, queues: &[&str]) -> tokio::task::JoinHandle<()> {
    let (broker, queues) = (broker.clone(), names(queues));
    tokio::spawn(async move { broker.wait_for_tasks(&queues).await })
}

async fn assert_wakes(waiter: tokio::task::JoinHandle<()>, what: &str) {
    tokio::time::timeout(DELIVERY, waiter).await.unwrap_or_else(|_| panic!("no wake-up after {what}")).unwrap();
}

async fn assert_still_waiting(waiter: &mut tokio::task::JoinHandle<()>, what: &str) {
    assert!(tokio::time::timeout(QUIET, &mut *waiter).await.is_err(), "woke up although {what}");
}

/// An enqueue wakes a worker waiting on the queue; one into another queue does not.
pub async fn case_enqueue_wakes_a_waiting_worker<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let mut waiter = wait(&t.broker, &["q"]);
    assert_still_waiting(&mut waiter, "nothing was enqueued").await;
    t.enqueue("other", &Task::new("t", ""), TaskOptions::new().queue("elsewhere")).await.unwrap();
    t.enqueue("later", &Task::new("t", ""), TaskOptions::new().queue("q").process_in(secs(60))).await.unwrap();
    assert_still_waiting(&mut waiter, "only another queue or a later time got a task").await;
    t.enqueue("a", &Task::new("t", ""), TaskOptions::new().queue("q")).await.unwrap();
    assert_wakes(waiter, "an enqueue").await;
}

/// The cycle of a server under light load: woken, it fetches fewer tasks than it asked for,
/// waits again, and the next enqueue wakes it (on Redis the short fetch set the idle mark itself,
/// and the second wait relies on it).
pub async fn case_a_worker_that_fetched_short_is_woken_by_the_next_enqueue<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let waiter = wait(&t.broker, &["q"]);
    t.enqueue("a", &Task::new("t", ""), TaskOptions::new().queue("q")).await.unwrap();
    assert_wakes(waiter, "an enqueue").await;
    for (id, next) in [("a", "b"), ("b", "c")] {
        let taken = t.dequeue(&["q"], 5).await;
        assert_eq!(taken.iter().map(|d| d.message.id.as_str()).collect::<Vec<_>>(), [id]);
        let mut waiter = wait(&t.broker, &["q"]);
        // The wake-up published for the last enqueue may still be on its way over a loaded
        // machine's loopback, and end this wait: a spurious wake-up, which `wait_for_tasks`
        // allows. The next wait must hold.
        if tokio::time::timeout(QUIET, &mut waiter).await.is_ok() {
            waiter = wait(&t.broker, &["q"]);
        }
        assert_still_waiting(&mut waiter, "the queue is empty").await;
        t.enqueue(next, &Task::new("t", ""), TaskOptions::new().queue("q")).await.unwrap();
        assert_wakes(waiter, "an enqueue after a short fetch").await;
    }
}

/// A wait on a queue that already has a pending task ends at once.
pub async fn case_waiting_on_a_queue_with_pending_work_returns_at_once<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    t.enqueue("a", &Task::new("t", ""), TaskOptions::new().queue("q")).await.unwrap();
    assert_wakes(wait(&t.broker, &["q"]), "nothing: a task was already pending").await;
}

/// Forwarding a due task and requeueing an active one wake a waiting worker.
pub async fn case_forward_and_requeue_wake_a_waiting_worker<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    t.enqueue("s", &Task::new("t", ""), TaskOptions::new().queue("q").process_in(secs(10))).await.unwrap();
    let waiter = wait(&t.broker, &["q"]);
    t.advance(secs(10));
    assert_eq!(t.broker.forward_ready(&names(&["q"])).await.unwrap().moved, 1);
    assert_wakes(waiter, "a forward").await;

    let msg = t.take("q", "s").await.message;
    let waiter = wait(&t.broker, &["q"]);
    t.broker.finish(&msg, Outcome::Requeue).await.unwrap();
    assert_wakes(waiter, "a requeue").await;
}

/// A paused queue's pending tasks do not end a wait; unpausing does.
pub async fn case_a_paused_queue_wakes_no_one_until_unpaused<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    t.enqueue("a", &Task::new("t", ""), TaskOptions::new().queue("q")).await.unwrap();
    t.broker.pause_queue(&QueueName::from_static("q")).await.unwrap();
    let mut waiter = wait(&t.broker, &["q"]);
    assert_still_waiting(&mut waiter, "the queue is paused").await;
    t.broker.unpause_queue(&QueueName::from_static("q")).await.unwrap();
    assert_wakes(waiter, "an unpause").await;
}
