//! Waiting for a broker's reply without sleeping first (see [`Client::with_spin_wait`]).
//!
//! [`Client::with_spin_wait`]: crate::Client::with_spin_wait

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::time::{Duration, Instant};

/// Awaits `call`; with a `budget`, a call still pending reschedules its task at once instead
/// of letting its thread sleep, until the reply comes or `budget` of real time has passed.
///
/// The task wakes itself, so any executor polls it again soon, and the executor polls its I/O
/// between those polls: a reply that comes within the budget is read without the thread having
/// slept, and without the wake-up that would follow. Past the budget it waits as any future
/// does, on the waker `call` registered at its last poll.
#[allow(clippy::disallowed_methods)] // the budget is real time, whatever the client's clock says
pub(crate) async fn spin_wait<F: Future>(call: F, budget: Option<Duration>) -> F::Output {
    let Some(budget) = budget else { return call.await };
    // The budget is CPU spent waiting, so real time, whatever the client's clock says.
    let give_up = Instant::now() + budget; // allow: wall-clock
    let mut call = pin!(call);
    poll_fn(|cx| {
        let poll = call.as_mut().poll(cx);
        // allow: wall-clock
        if poll.is_pending() && Instant::now() < give_up {
            cx.waker().wake_by_ref();
        }
        poll
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Poll;

    /// A call that is ready at its `ready_at`-th poll and never wakes its task by itself, as a
    /// reply that has arrived but that nothing has told the task about.
    fn silent_call(ready_at: usize, polls: Arc<AtomicUsize>) -> impl Future<Output = &'static str> {
        poll_fn(
            move |_| {
                if polls.fetch_add(1, Ordering::SeqCst) + 1 == ready_at { Poll::Ready("reply") } else { Poll::Pending }
            },
        )
    }

    #[tokio::test]
    async fn within_the_budget_the_call_is_polled_again_without_being_woken() {
        let polls = Arc::new(AtomicUsize::new(0));
        let reply = spin_wait(silent_call(5, Arc::clone(&polls)), Some(Duration::from_secs(60))).await;
        assert_eq!((reply, polls.load(Ordering::SeqCst)), ("reply", 5));
    }

    #[tokio::test]
    async fn without_a_budget_or_past_it_the_call_waits_for_its_own_wake_up() {
        for budget in [None, Some(Duration::ZERO)] {
            let polls = Arc::new(AtomicUsize::new(0));
            let waiting = tokio::spawn(spin_wait(silent_call(usize::MAX, Arc::clone(&polls)), budget));
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            // Polled when spawned, and never again: nothing woke its task.
            assert_eq!(polls.load(Ordering::SeqCst), 1, "budget {budget:?}");
            waiting.abort();
        }
    }

    #[tokio::test]
    async fn a_call_that_wakes_its_task_completes_after_the_budget() {
        let (send, reply) = futures::channel::oneshot::channel();
        let waiting = tokio::spawn(spin_wait(reply, Some(Duration::from_micros(1))));
        tokio::task::yield_now().await;
        send.send("late reply").unwrap();
        assert_eq!(waiting.await.unwrap(), Ok("late reply"));
    }
}
