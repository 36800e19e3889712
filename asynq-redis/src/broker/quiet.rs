//! Quiet queues: which of its servers' queues this broker knows to be empty or paused, so that
//! a fetch skips them instead of running a script on each. A server on one busy queue beside a
//! thousand empty ones drains it at about three quarters of its rate alone (one lookup per queue
//! per fetch remains), and idles on a few commands a second.
//!
//! A queue turns quiet when a dequeue (or an idle wait's `mark_idle.lua`) finds it empty or
//! paused and sets its `idle_workers` mark in the same script, while its wake-up channel is
//! subscribed. From then on every producer of ours that makes a task pending there publishes a
//! wake-up, which ends the quiet (the pub/sub module keeps, per queue, its last wake-up and
//! when a script last found it quiet). Three more things end it:
//! - age: after half the mark's lifetime the queue is dequeued again, which renews the mark;
//! - a lost subscription (the pub/sub connection dropped);
//! - a check: Go's producers, forwarder and CLI make tasks pending without publishing, and an
//!   unpause publishes nothing. So at most every [`CHECK_INTERVAL`] a fetch asks Redis, with one
//!   `EXISTS` over the quiet queues' `pending` keys (and `prioritized` sets, which only our
//!   scripts fill, but a lost wake-up costs nothing more to find) and one over the paused ones'
//!   `paused` keys,
//!   whether any changed, and narrows down which by halves only when some did.
//!
//! Idle on N queues this costs one or two commands per poll (on a Cluster, where `EXISTS` is
//! split by hash slot, one per queue), plus one dequeue per queue per half mark lifetime.

use super::*;
use crate::pubsub::Quietness;
use futures::future::try_join_all;
use std::ops::Range;
use std::sync::PoisonError;
use tokio::time::Instant;

/// How often a fetch checks its quiet queues for work that came without a wake-up. The
/// processor polls every `task_check_interval` (1 s by default, jittered to 0.5–1.5 s); checking
/// on any poll at least this far apart finds a Go producer's task on the next poll, as before.
const CHECK_INTERVAL: Duration = Duration::from_millis(500);

/// How long a queue stays quiet without being dequeued again: half its `idle_workers` mark's
/// lifetime, so that the mark is renewed well before it expires.
pub(super) const QUIET_FOR: Duration = Duration::from_secs(IDLE_MARK_SECS / 2);

/// When the quiet queues were last checked for work that came without a wake-up.
#[derive(Default)]
pub(super) struct QuietCheck {
    last: Mutex<Option<Instant>>,
}

impl QuietCheck {
    /// Whether a check is due; if so, the next one is due [`CHECK_INTERVAL`] from now.
    fn due(&self) -> bool {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let due = last.is_none_or(|at| at.elapsed() >= CHECK_INTERVAL);
        if due {
            *last = Some(tokio::time::Instant::now());
        }
        due
    }
}

impl RedisBroker {
    /// Subscribes to the wake-ups of `queues` and says how quiet each is, as far as this broker
    /// knows without asking Redis; `None` when wake-ups cannot be subscribed (nothing is then
    /// known to stay quiet).
    pub(super) async fn watch(&self, queues: &[QueueName]) -> Option<Vec<Quietness>> {
        match self.pubsub().watch(queues, QUIET_FOR).await {
            Ok(quietness) => Some(quietness),
            Err(e) => {
                tracing::debug!(error = %e, "cannot subscribe to wake-ups; polling only");
                None
            }
        }
    }

    /// When a check is due, asks Redis whether any of the quiet `queues` (as `quietness` says)
    /// changed without a wake-up: an empty one that holds pending tasks, a paused one that is no
    /// longer paused. Those are marked [`Quietness::Unknown`] and forgotten as quiet. On an
    /// error every queue is treated as unknown: the fetch then dequeues each.
    pub(super) async fn check_quiet(&self, queues: &[QueueName], quietness: &mut [Quietness]) {
        if quietness.iter().all(|q| *q == Quietness::Unknown) || !self.inner.quiet_check.due() {
            return;
        }
        let of = |wanted: Quietness| -> Vec<usize> { (0..queues.len()).filter(|&i| quietness[i] == wanted).collect() };
        let (empty, paused) = (of(Quietness::Empty), of(Quietness::Paused));
        // Two keys per empty queue, its pending list and its prioritized set: the same EXISTS.
        let pending_keys: Vec<String> = empty
            .iter()
            .flat_map(|&i| {
                let k = self.queue_keys(&queues[i]);
                [k.pending(), k.prioritized()]
            })
            .collect();
        let paused_keys: Vec<String> = paused.iter().map(|&i| self.queue_keys(&queues[i]).paused()).collect();
        let changed = futures::future::try_join(
            changed_keys(self.conn(), &pending_keys, false),
            changed_keys(self.conn(), &paused_keys, true),
        )
        .await;
        let mut changed: Vec<usize> = match changed {
            Ok((now_pending, unpaused)) => {
                let now_pending = now_pending.into_iter().map(|k| empty[k / 2]);
                now_pending.chain(unpaused.into_iter().map(|k| paused[k])).collect()
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot check quiet queues; dequeueing each");
                empty.into_iter().chain(paused).collect()
            }
        };
        changed.sort_unstable();
        changed.dedup();
        for i in changed {
            quietness[i] = Quietness::Unknown;
            self.pubsub().found_busy(&queues[i]);
        }
    }
}

/// The indexes of the `keys` that exist, in order, found as [`changed_keys`] does: one command
/// when none does. How the background loops skip the queues that have nothing for them.
pub(super) async fn existing_keys(conn: Connection, keys: &[String]) -> redis::RedisResult<Vec<usize>> {
    let mut found = changed_keys(conn, keys, false).await?;
    found.sort_unstable();
    Ok(found)
}

/// The indexes of the `keys` that exist, when `expected` is false, or that do not, when it is
/// true: one `EXISTS` over all of them, and then over halves of each part whose count is off,
/// the halves of one round in parallel.
pub(crate) async fn changed_keys(conn: Connection, keys: &[String], expected: bool) -> redis::RedisResult<Vec<usize>> {
    let mut changed = Vec::new();
    let mut parts: Vec<Range<usize>> = std::iter::once(0..keys.len()).collect();
    while !parts.is_empty() {
        parts.retain(|part| !part.is_empty());
        let counts = try_join_all(parts.iter().map(|part| {
            let mut conn = conn.clone();
            let mut exists = redis::cmd("EXISTS");
            exists.arg(&keys[part.clone()]);
            async move { exists.query_async::<usize>(&mut conn).await }
        }))
        .await?;
        let mut next = Vec::new();
        for (part, count) in parts.into_iter().zip(counts) {
            if count == if expected { part.len() } else { 0 } {
                continue;
            }
            if part.len() == 1 {
                changed.push(part.start);
            } else {
                let middle = part.start + part.len() / 2;
                next.push(part.start..middle);
                next.push(middle..part.end);
            }
        }
        parts = next;
    }
    Ok(changed)
}
