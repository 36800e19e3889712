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
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What one fetch took, and how long to wait before asking a rate-limited queue again.
pub(crate) struct Fetched {
    pub(crate) tasks: Vec<Dequeued>,
    /// Set when a rate-limited queue was refused every token: the wait until one is due.
    pub(crate) rate_limited_for: Option<Duration>,
}

/// Dequeues up to `max` tasks from `order` (queues in the order to try), taking tokens from
/// the bucket of each queue in `limits` first and dequeuing at most the granted number there.
/// Without rate limits, the broker may record the first `start` tasks started in the same step
/// ([`Dequeue::dequeue_starting`]); with them, every task is taken as [`Dequeue::dequeue`] takes
/// it.
///
/// Runs of unlimited queues are dequeued in one call, as without limits. A failure after some
/// tasks were taken is logged and those tasks are returned, so that none is left leased and
/// unrun; a failure before any was taken is returned.
pub(crate) async fn dequeue_within_rate_limits(
    broker: &dyn Dequeue,
    limiter: Option<&dyn RateLimiter>,
    limits: &BTreeMap<String, RateLimit>,
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
    let mut start = 0;
    while start < order.len() && fetched.tasks.len() < max {
        let free = max - fetched.tasks.len();
        let step = match limits.get(order[start].as_str()) {
            Some(limit) => {
                let step = dequeue_limited(broker, limiter, &order[start], limit, free, now, &mut fetched).await;
                start += 1;
                step
            }
            None => {
                let end = order[start..]
                    .iter()
                    .position(|q| limits.contains_key(q.as_str()))
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

/// Takes tokens from `queue`'s bucket, dequeues at most that many and gives back the rest.
async fn dequeue_limited(
    broker: &dyn Dequeue,
    limiter: &dyn RateLimiter,
    queue: &QueueName,
    limit: &RateLimit,
    free: usize,
    now: SystemTime,
    fetched: &mut Fetched,
) -> asynq_core::Result<()> {
    let wanted = u32::try_from(free).unwrap_or(u32::MAX);
    let granted = limiter.take_tokens(queue, limit, wanted, now).await?;
    if granted == 0 {
        let wait = limit.token_interval();
        fetched.rate_limited_for = Some(fetched.rate_limited_for.map_or(wait, |w| w.min(wait)));
        return Ok(());
    }
    let tasks = broker.dequeue(std::slice::from_ref(&queue.to_owned()), granted as usize).await?;
    let unused = granted - u32::try_from(tasks.len()).unwrap_or(granted);
    fetched.tasks.extend(tasks);
    if unused > 0
        && let Err(e) = limiter.give_back_tokens(queue, limit, unused).await
    {
        tracing::warn!(%queue, error = %e, "giving back unused rate-limit tokens failed");
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
