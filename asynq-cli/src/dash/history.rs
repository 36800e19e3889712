//! What the dashboard remembers of each queue between refreshes: its size and the tasks it
//! processed since the refresh before, one sample per refresh, for the queue list's graphs
//! (Go's `asynq dash` draws them too). Kept in the dashboard alone, from its start.

use asynq_client::QueueInfo;
use std::collections::{HashMap, VecDeque};

/// How many samples of each queue are kept: at the default 8 s refresh, the last 16 minutes.
pub(crate) const HISTORY_SAMPLES: usize = 120;

/// One queue's samples, oldest first.
#[derive(Debug, Default)]
struct Samples {
    sizes: VecDeque<u64>,
    processed: VecDeque<u64>,
    /// Its processed counter (all time) at the last sample.
    processed_total: Option<u64>,
}

/// Every queue's samples, by name.
#[derive(Debug, Default)]
pub(crate) struct QueueHistory {
    queues: HashMap<String, Samples>,
}

impl QueueHistory {
    /// Adds one sample of each of `queues`, and forgets the queues that are gone.
    pub(crate) fn record(&mut self, queues: &[QueueInfo]) {
        self.queues.retain(|name, _| queues.iter().any(|q| q.queue.as_str() == name));
        for q in queues {
            let samples = self.queues.entry(q.queue.to_string()).or_default();
            // A counter that went back (a removed and recreated queue) counts from there.
            let processed = samples.processed_total.map_or(0, |last| q.processed_total.saturating_sub(last));
            samples.processed_total = Some(q.processed_total);
            push(&mut samples.sizes, q.size as u64);
            push(&mut samples.processed, processed);
        }
    }

    /// The sizes of `queue` at each refresh, oldest first.
    pub(crate) fn sizes(&self, queue: &str) -> Vec<u64> {
        self.queues.get(queue).map(|s| s.sizes.iter().copied().collect()).unwrap_or_default()
    }

    /// The tasks `queue` processed between each refresh and the one before, oldest first (0 for
    /// the first).
    pub(crate) fn processed(&self, queue: &str) -> Vec<u64> {
        self.queues.get(queue).map(|s| s.processed.iter().copied().collect()).unwrap_or_default()
    }
}

fn push(samples: &mut VecDeque<u64>, value: u64) {
    if samples.len() == HISTORY_SAMPLES {
        samples.pop_front();
    }
    samples.push_back(value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_client::QueueName;
    use std::time::UNIX_EPOCH;

    fn info(name: &str, size: usize, processed_total: u64) -> QueueInfo {
        let mut q = QueueInfo::empty(&QueueName::new(name).unwrap(), UNIX_EPOCH);
        (q.size, q.processed_total) = (size, processed_total);
        q
    }

    #[test]
    fn samples_follow_each_queue_and_are_bounded() {
        let mut history = QueueHistory::default();
        history.record(&[info("a", 5, 100), info("b", 1, 0)]);
        history.record(&[info("a", 3, 104)]);
        history.record(&[info("a", 9, 2), info("b", 2, 0)]);
        assert_eq!(history.sizes("a"), vec![5, 3, 9]);
        assert_eq!(history.processed("a"), vec![0, 4, 0], "a counter that went back counts nothing");
        assert_eq!(history.sizes("b"), vec![2], "b was gone for a refresh, and starts again");
        assert!(history.sizes("c").is_empty());
        for i in 0..HISTORY_SAMPLES as u64 + 10 {
            history.record(&[info("a", i as usize, 200 + i)]);
        }
        let sizes = history.sizes("a");
        assert_eq!(sizes.len(), HISTORY_SAMPLES);
        assert_eq!(sizes.last(), Some(&(HISTORY_SAMPLES as u64 + 9)));
    }
}
