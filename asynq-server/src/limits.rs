//! The processor's two throttles beyond its concurrency: per-queue rate limits, shared by every
//! server through the broker, and per-type concurrency limits within one server.
//!
//! **Rate limits** bound the tasks of a queue *started* per second. Before dequeuing from a
//! limited queue the processor takes tokens from the queue's bucket ([`RateLimiter`]) and
//! dequeues at most that many; tokens a short queue left unused are given back. Tasks over the
//! limit simply stay pending. When a limited queue got no token and nothing else started, the
//! processor sleeps until a token is due (one token interval) instead of polling, while still
//! listening for wake-ups of its unlimited queues.
//!
//! A limit named by a sharded queue's logical name ([`QueueLimits`]) applies to the logical queue
//! as a whole: one bucket (or one shared counter) over its shards and the plain queue of its
//! name. A fetch takes tokens once for all of them, at the place of the first one in its order,
//! and dequeues from them in that order.
//!
//! **Type concurrency limits** bound how many tasks of one type run at once on this server. A
//! dequeued task whose type is at its limit *waits* in the server for its type's permit, then
//! for a worker: it stays active and leased (the heartbeater renews it), its start is not yet
//! recorded and nothing is charged, and it starts as soon as a task of its type finishes. A
//! waiting task holds no worker, so other types keep running at full concurrency. At most
//! `concurrency` tasks wait in a server (over per-type and shared limits together); a fetched
//! task that finds that room full goes back to the front of its pending list, charged nothing,
//! and the server fetches again once a waiter starts (or after its check interval). The price:
//! while a limited type's backlog fills the room, tasks queued behind it in the same queue wait
//! too; give a limited type a queue of its own to keep them apart. Shutdown gives waiting tasks
//! back to their queue at once.

use asynq_core::QueueName;
use asynq_core::broker::RateLimiter;
use asynq_core::broker::{Dequeue, Dequeued};
use asynq_core::rate_limit::RateLimit;
use asynq_core::shard::logical_of;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Per-queue limits, by the name of a queue or of a sharded queue's logical queue: a queue's
/// limit is its own, else its logical queue's when its name is a shard's (`<logical>~…`) of a
/// logical queue the server serves as sharded.
#[derive(Debug, Clone)]
pub(crate) struct QueueLimits<V> {
    by_queue: BTreeMap<String, (QueueName, V)>,
    sharded: BTreeSet<String>,
}

impl<V> Default for QueueLimits<V> {
    fn default() -> Self {
        Self { by_queue: BTreeMap::new(), sharded: BTreeSet::new() }
    }
}

impl<V> QueueLimits<V> {
    /// The limits `by_queue`, given the logical names of the sharded queues served.
    ///
    /// Errors: [`asynq_core::Error::InvalidArgument`] for a name that is no queue name.
    pub(crate) fn new<'a>(
        by_queue: impl IntoIterator<Item = (String, V)>,
        sharded: impl IntoIterator<Item = &'a String>,
    ) -> asynq_core::Result<Self> {
        let by_queue = by_queue
            .into_iter()
            .map(|(name, limit)| Ok((name.clone(), (QueueName::new(name)?, limit))))
            .collect::<asynq_core::Result<_>>()?;
        Ok(Self { by_queue, sharded: sharded.into_iter().cloned().collect() })
    }

    /// Whether no queue has a limit.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_queue.is_empty()
    }

    /// The limit `queue`'s tasks count against, and the queue that names it (`queue` itself,
    /// or the logical queue of which it is a shard).
    pub(crate) fn get(&self, queue: &str) -> Option<(&QueueName, &V)> {
        let named = self.by_queue.get(queue).or_else(|| {
            let logical = logical_of(queue).filter(|logical| self.sharded.contains(*logical))?;
            self.by_queue.get(logical)
        });
        named.map(|(name, limit)| (name, limit))
    }
}

/// What one fetch took, and how long to wait before asking a rate-limited queue again.
pub(crate) struct Fetched {
    pub(crate) tasks: Vec<Dequeued>,
    /// Set when a rate-limited queue was refused every token: the wait until one is due.
    pub(crate) rate_limited_for: Option<Duration>,
}

/// Dequeues up to `max` tasks from `order` (queues in the order to try), taking tokens from
/// the bucket of each limited queue first and dequeuing at most the granted number there; the
/// queues that share a bucket (a logical queue's shards) take tokens once, where the first of
/// them comes in the order, and are dequeued together. Without rate limits, the broker may
/// record the first `start` tasks started in the same step ([`Dequeue::dequeue_starting`]);
/// with them, every task is taken as [`Dequeue::dequeue`] takes it.
///
/// Runs of unlimited queues are dequeued in one call, as without limits. A failure after some
/// tasks were taken is logged and those tasks are returned, so that none is left leased and
/// unrun; a failure before any was taken is returned.
pub(crate) async fn dequeue_within_rate_limits(
    broker: &dyn Dequeue,
    limiter: Option<&dyn RateLimiter>,
    limits: &QueueLimits<RateLimit>,
    order: &[QueueName],
    max: usize,
    start: usize,
    now: SystemTime,
) -> asynq_core::Result<Fetched> {
    let limiter = match limiter {
        Some(limiter) if !limits.is_empty() => limiter,
        _ => return Ok(Fetched { tasks: broker.dequeue_starting(order, max, start).await?, rate_limited_for: None }),
    };
    let mut fetched = Fetched { tasks: Vec::new(), rate_limited_for: None };
    // The limited queues already dequeued with an earlier one of their bucket.
    let mut done = vec![false; order.len()];
    let mut start = 0;
    while start < order.len() && fetched.tasks.len() < max {
        if done[start] {
            start += 1;
            continue;
        }
        let free = max - fetched.tasks.len();
        let step = match limits.get(order[start].as_str()) {
            Some((bucket, limit)) => {
                let mut members = Vec::new();
                for (index, queue) in order.iter().enumerate().skip(start) {
                    if !done[index] && limits.get(queue.as_str()).is_some_and(|(other, _)| other == bucket) {
                        done[index] = true;
                        members.push(queue.clone());
                    }
                }
                start += 1;
                dequeue_limited(broker, limiter, (bucket, limit), &members, free, now, &mut fetched).await
            }
            None => {
                let end = order[start..]
                    .iter()
                    .position(|q| limits.get(q.as_str()).is_some())
                    .map_or(order.len(), |i| start + i);
                let step = broker.dequeue(&order[start..end], free).await.map(|tasks| fetched.tasks.extend(tasks));
                start = end;
                step
            }
        };
        if let Err(e) = step {
            if fetched.tasks.is_empty() {
                return Err(e);
            }
            tracing::warn!(error = %e, "dequeue failed after some tasks were taken; running those");
            break;
        }
    }
    Ok(fetched)
}

/// Takes tokens from `bucket`'s bucket, dequeues at most that many from `queues` (the queues
/// that share it, in order) and gives back the rest.
async fn dequeue_limited(
    broker: &dyn Dequeue,
    limiter: &dyn RateLimiter,
    (bucket, limit): (&QueueName, &RateLimit),
    queues: &[QueueName],
    free: usize,
    now: SystemTime,
    fetched: &mut Fetched,
) -> asynq_core::Result<()> {
    let wanted = u32::try_from(free).unwrap_or(u32::MAX);
    let granted = limiter.take_tokens(bucket, limit, wanted, now).await?;
    if granted == 0 {
        let wait = limit.token_interval();
        fetched.rate_limited_for = Some(fetched.rate_limited_for.map_or(wait, |w| w.min(wait)));
        return Ok(());
    }
    let tasks = broker.dequeue(queues, granted as usize).await?;
    let unused = granted - u32::try_from(tasks.len()).unwrap_or(granted);
    fetched.tasks.extend(tasks);
    if unused > 0
        && let Err(e) = limiter.give_back_tokens(bucket, limit, unused).await
    {
        tracing::warn!(queue = %bucket, error = %e, "giving back unused rate-limit tokens failed");
    }
    Ok(())
}

/// The per-type concurrency limits of one server: a semaphore per limited type.
#[derive(Debug, Default)]
pub(crate) struct TypeLimits {
    permits: HashMap<String, Arc<Semaphore>>,
}

/// Whether a dequeued task may run now.
pub(crate) enum Admission {
    /// Its type has no limit.
    Unlimited,
    /// Its type has a limit with room; the permit is held while the task runs.
    Admitted(OwnedSemaphorePermit),
    /// Its type is at its limit: the task waits for a permit ([`TypeLimits::acquire`]).
    Wait,
}

impl TypeLimits {
    /// Limits from type names to the most tasks of that type running at once.
    pub(crate) fn new(limits: &BTreeMap<String, usize>) -> Self {
        let permits = limits.iter().map(|(name, limit)| (name.clone(), Arc::new(Semaphore::new(*limit)))).collect();
        Self { permits }
    }

    /// Whether no type has a limit.
    pub(crate) fn is_empty(&self) -> bool {
        self.permits.is_empty()
    }

    /// Admits a task of `type_name` now, or says it must wait (see the module docs).
    pub(crate) fn admit(&self, type_name: &str) -> Admission {
        let Some(permits) = self.permits.get(type_name) else {
            return Admission::Unlimited;
        };
        match Arc::clone(permits).try_acquire_owned() {
            Ok(permit) => Admission::Admitted(permit),
            Err(_) => Admission::Wait,
        }
    }

    /// Waits for a permit of `type_name`, in turn; `None` for a type without a limit.
    pub(crate) async fn acquire(&self, type_name: &str) -> Option<OwnedSemaphorePermit> {
        let permits = Arc::clone(self.permits.get(type_name)?);
        Some(permits.acquire_owned().await.expect("type limit semaphores are never closed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_counts_against_its_logical_queues_limit_when_served_sharded() {
        let sharded = ["orders".to_owned()];
        let limits = QueueLimits::new([("orders".to_owned(), 1), ("plain".to_owned(), 2)], &sharded).unwrap();
        let named = |queue: &str| limits.get(queue).map(|(name, limit)| (name.to_string(), *limit));
        assert_eq!(named("orders"), Some(("orders".to_owned(), 1)), "the plain queue of the logical name");
        assert_eq!(named("orders~3"), Some(("orders".to_owned(), 1)));
        assert_eq!(named("orders~3~17"), Some(("orders".to_owned(), 1)), "a salted shard");
        assert_eq!(named("plain"), Some(("plain".to_owned(), 2)));
        assert_eq!(named("plain~1"), None, "plain is not served as a sharded queue");
        assert_eq!(named("orders2~1"), None);
        assert!(QueueLimits::<u32>::default().is_empty());
    }
}
