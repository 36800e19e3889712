//! The memory estimates of queues (`memory_usage.lua`, Go asynq's sampling), kept for a while
//! and retaken within a budget, so that tools reading every queue's info again and again (a
//! metrics scrape, the dashboard, `asynq dash`) cost Redis a bounded share however many queues
//! there are. An estimate takes a script call of up to about 150 `MEMORY USAGE` calls; at 10 000
//! queues, one scrape that estimated every queue afresh kept Redis busy for 1.7 s.
//!
//! The rule, per broker value (a process's tools share it): an estimate younger than
//! [`MAX_AGE`] is reused; an older one is retaken while the budget of
//! [`RETAKES_PER_SECOND`] allows, else reused as it is; a queue not yet estimated is always
//! estimated (and counts against the budget).

use asynq_core::QueueName;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// How long an estimate is reused before it is retaken.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(60);
/// How many estimates one broker value retakes per second at most.
pub(crate) const RETAKES_PER_SECOND: u32 = 100;

/// Whether to reuse an estimate or take one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Estimate {
    /// Reuse these bytes.
    Reuse(u64),
    /// Take an estimate, and [`MemoryEstimates::record`] it.
    Take,
}

#[derive(Debug, Default)]
pub(crate) struct MemoryEstimates(Mutex<Inner>);

#[derive(Debug, Default)]
struct Inner {
    /// Each queue's last estimate and when it was taken.
    by_queue: HashMap<QueueName, (SystemTime, u64)>,
    /// The whole second (since the Unix epoch) the budget is counted in, and what it spent.
    budget_second: u64,
    spent: u32,
}

impl MemoryEstimates {
    /// What to do for `queue`'s estimate at `now`.
    pub(crate) fn lookup(&self, queue: &QueueName, now: SystemTime) -> Estimate {
        let mut inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let second = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if second != inner.budget_second {
            (inner.budget_second, inner.spent) = (second, 0);
        }
        let known = inner.by_queue.get(queue).copied();
        match known {
            Some((taken, bytes)) if now.duration_since(taken).is_ok_and(|age| age < MAX_AGE) => Estimate::Reuse(bytes),
            Some((_, bytes)) if inner.spent >= RETAKES_PER_SECOND => Estimate::Reuse(bytes),
            _ => {
                inner.spent = inner.spent.saturating_add(1);
                Estimate::Take
            }
        }
    }

    /// Keeps `bytes` as `queue`'s estimate taken at `now`.
    pub(crate) fn record(&self, queue: &QueueName, now: SystemTime, bytes: u64) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).by_queue.insert(queue.clone(), (now, bytes));
    }

    /// Forgets `queue`'s estimate (the queue was removed).
    pub(crate) fn forget(&self, queue: &QueueName) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).by_queue.remove(queue);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn an_estimate_is_reused_until_it_is_old_then_retaken_within_the_budget() {
        let estimates = MemoryEstimates::default();
        let q = QueueName::from_static("q");
        assert_eq!(estimates.lookup(&q, at(1_000)), Estimate::Take);
        estimates.record(&q, at(1_000), 4_096);
        assert_eq!(estimates.lookup(&q, at(1_059)), Estimate::Reuse(4_096));
        assert_eq!(estimates.lookup(&q, at(1_060)), Estimate::Take);
        estimates.record(&q, at(1_060), 8_192);
        assert_eq!(estimates.lookup(&q, at(1_061)), Estimate::Reuse(8_192));
        estimates.forget(&q);
        assert_eq!(estimates.lookup(&q, at(1_061)), Estimate::Take);
    }

    #[test]
    fn past_the_budget_old_estimates_are_reused_and_new_queues_still_estimated() {
        let estimates = MemoryEstimates::default();
        let queues: Vec<QueueName> = (0..150).map(|n| QueueName::new(format!("q{n}")).unwrap()).collect();
        for queue in &queues {
            assert_eq!(estimates.lookup(queue, at(1_000)), Estimate::Take, "never estimated: {queue}");
            estimates.record(queue, at(1_000), 1);
        }
        let retaken = queues.iter().filter(|q| estimates.lookup(q, at(2_000)) == Estimate::Take).count();
        assert_eq!(retaken, RETAKES_PER_SECOND as usize, "one second's budget");
        let fresh = QueueName::from_static("fresh");
        assert_eq!(estimates.lookup(&fresh, at(2_000)), Estimate::Take, "a new queue is estimated over budget");
        let next_second = queues.iter().filter(|q| estimates.lookup(q, at(2_001)) == Estimate::Take).count();
        assert_eq!(next_second, RETAKES_PER_SECOND as usize, "the budget renews each second");
    }
}
