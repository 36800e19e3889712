//! The last hour of every queue, sampled by the dashboard itself: sizes by state, throughput and
//! latency over time, which the broker keeps no record of (only per-day counters).
//!
//! A sampler task starts with the first request the dashboard serves and reads every queue's
//! statistics each [`SAMPLE_INTERVAL`], keeping [`KEEP`] of them for up to [`MAX_QUEUES`]
//! queues (a few megabytes at most). It holds the dashboard's state weakly, so it ends when the
//! router is dropped. History therefore starts when the dashboard does: a dashboard restarted a
//! minute ago shows a minute.

use crate::Shared;
use asynq_client::{Inspector, QueueInfo};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

/// How often the sampler reads the queues.
pub(crate) const SAMPLE_INTERVAL: Duration = Duration::from_secs(10);

/// How much history is kept per queue.
pub(crate) const KEEP: Duration = Duration::from_secs(3600);

/// The most queues history is kept for (the first by name); the others show none.
pub(crate) const MAX_QUEUES: usize = 1_000;

/// One reading of one queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    pub(crate) at: SystemTime,
    /// active, pending, scheduled, retry, archived, completed, aggregating, waiting.
    pub(crate) sizes: [u64; 8],
    pub(crate) processed_total: u64,
    pub(crate) failed_total: u64,
    pub(crate) latency: Duration,
}

impl Sample {
    fn of(info: &QueueInfo) -> Self {
        let sizes = [
            info.active,
            info.pending,
            info.scheduled,
            info.retry,
            info.archived,
            info.completed,
            info.aggregating,
            info.waiting,
        ];
        Self {
            at: info.timestamp,
            sizes: sizes.map(|n| n as u64),
            processed_total: info.processed_total,
            failed_total: info.failed_total,
            latency: info.latency,
        }
    }
}

/// The samples of every queue, and whether the sampler runs.
#[derive(Debug, Default)]
pub(crate) struct History {
    samples: Mutex<BTreeMap<String, VecDeque<Sample>>>,
    sampling: AtomicBool,
}

impl History {
    fn samples(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, VecDeque<Sample>>> {
        self.samples.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The samples of `queue`, oldest first.
    pub(crate) fn of(&self, queue: &str) -> Vec<Sample> {
        self.samples().get(queue).map(|samples| samples.iter().copied().collect()).unwrap_or_default()
    }

    /// Records one reading of each queue of `infos`, forgetting what is older than [`KEEP`]
    /// and the queues that are gone.
    pub(crate) fn record(&self, infos: &[QueueInfo]) {
        let mut samples = self.samples();
        let current: std::collections::HashSet<&str> = infos.iter().map(|info| info.queue.as_str()).collect();
        samples.retain(|queue, _| current.contains(queue.as_str()));
        for info in infos.iter().take(MAX_QUEUES) {
            let queue = samples.entry(info.queue.to_string()).or_default();
            let sample = Sample::of(info);
            while queue.front().is_some_and(|old| sample.at.duration_since(old.at).unwrap_or_default() > KEEP) {
                queue.pop_front();
            }
            queue.push_back(sample);
        }
    }

    /// Starts the sampler of `shared`, unless it runs already.
    pub(crate) fn start_sampling(shared: &Arc<Shared>) {
        if shared.history.sampling.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(shared);
        tokio::spawn(sample_until_dropped(weak));
    }
}

/// Samples every [`SAMPLE_INTERVAL`] while the dashboard's state lives.
async fn sample_until_dropped(shared: Weak<Shared>) {
    let mut ticks = tokio::time::interval(SAMPLE_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        match read_queues(&shared.inspector).await {
            Ok(infos) => shared.history.record(&infos),
            Err(e) => tracing::debug!(error = %e, "could not sample the queues for their history"),
        }
    }
}

/// Every queue's statistics, the first [`MAX_QUEUES`] by name.
async fn read_queues(inspector: &Inspector) -> asynq_client::Result<Vec<QueueInfo>> {
    let mut infos = Vec::new();
    for queue in inspector.queues().await?.into_iter().take(MAX_QUEUES) {
        infos.push(inspector.queue_info(&queue).await?);
    }
    Ok(infos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::QueueName;
    use asynq_core::time::from_unix_secs;

    fn info(queue: &'static str, at: u64, processed: usize) -> QueueInfo {
        let mut info = QueueInfo::empty(&QueueName::from_static(queue), from_unix_secs(at as i64));
        info.processed_total = processed as u64;
        info
    }

    #[test]
    fn an_hour_is_kept_and_gone_queues_are_forgotten() {
        let history = History::default();
        for t in (0..=4_000).step_by(10) {
            history.record(&[info("a", t, t as usize), info("b", t, 0)]);
        }
        let a = history.of("a");
        assert_eq!(a.len(), 361, "an hour of samples 10 s apart, both ends included");
        assert_eq!((a[0].at, a[360].at), (from_unix_secs(400), from_unix_secs(4_000)));
        history.record(&[info("a", 4_010, 4_010)]);
        assert!(history.of("b").is_empty(), "a queue that is gone is forgotten");
    }
}
