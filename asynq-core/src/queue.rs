//! Which queue a server tries first: weighted random or strict priority.

use crate::{QueueName, Result};
use rand::Rng;
use rand::seq::SliceRandom;
use std::collections::BTreeMap;

/// The queues a server serves with their priorities, normalised as Go asynq does: queues with a
/// zero priority are dropped, priorities are divided by their greatest common divisor, and an
/// empty configuration means `{"default": 1}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePriorities {
    queues: Vec<(QueueName, u32)>,
    strict: bool,
}

impl QueuePriorities {
    /// Normalises `queues`; `strict` selects strict priority order instead of weighted random.
    ///
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a name that is no
    /// [`QueueName`].
    pub fn new(queues: &BTreeMap<String, u32>, strict: bool) -> Result<Self> {
        let mut kept = Vec::with_capacity(queues.len());
        for (name, priority) in queues {
            let name = QueueName::new(name.as_str())?;
            if *priority > 0 {
                kept.push((name, *priority));
            }
        }
        if kept.is_empty() {
            kept.push((QueueName::default(), 1));
        }
        let divisor = kept.iter().fold(0, |g, (_, p)| gcd(g, *p));
        for (_, p) in &mut kept {
            *p /= divisor;
        }
        // Highest priority first; names break ties so the order is deterministic.
        kept.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(Self { queues: kept, strict })
    }

    /// The queue names, highest priority first.
    pub fn names(&self) -> impl Iterator<Item = &QueueName> {
        self.queues.iter().map(|(n, _)| n)
    }

    /// The normalised priorities, highest first.
    pub fn priorities(&self) -> &[(QueueName, u32)] {
        &self.queues
    }

    /// True for strict priority.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The order in which to try the queues for one dequeue.
    ///
    /// Strict: always highest priority first. Weighted: each queue comes first with probability
    /// proportional to its priority (Go's shuffle of a list holding each name `priority` times,
    /// keeping first occurrences).
    pub fn order(&self, rng: &mut impl Rng) -> Vec<QueueName> {
        if self.strict || self.queues.len() == 1 {
            return self.names().cloned().collect();
        }
        let mut tickets: Vec<usize> =
            self.queues.iter().enumerate().flat_map(|(i, (_, p))| std::iter::repeat_n(i, *p as usize)).collect();
        tickets.shuffle(rng);
        let mut seen = vec![false; self.queues.len()];
        let mut order = Vec::with_capacity(self.queues.len());
        for i in tickets {
            if !std::mem::replace(&mut seen[i], true) {
                order.push(self.queues[i].0.clone());
            }
        }
        order
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn config(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
        pairs.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect()
    }

    #[test]
    fn normalises_like_go() {
        let q = QueuePriorities::new(&config(&[("critical", 6), ("default", 3), ("low", 0)]), false).unwrap();
        let [(a, 2), (b, 1)] = q.priorities() else { panic!("{q:?}") };
        assert_eq!((a.as_str(), b.as_str()), ("critical", "default"));
        let q = QueuePriorities::new(&BTreeMap::new(), false).unwrap();
        assert_eq!(q.priorities(), &[(QueueName::default(), 1)]);
        assert!(QueuePriorities::new(&config(&[("critical", 6), (" ", 4)]), false).is_err());
    }

    #[test]
    fn strict_order_is_by_priority() {
        let q = QueuePriorities::new(&config(&[("low", 1), ("critical", 6), ("default", 3)]), true).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        assert_eq!(q.order(&mut rng), ["critical", "default", "low"]);
    }

    #[test]
    fn weighted_order_puts_each_queue_first_in_proportion_to_its_weight() {
        let q = QueuePriorities::new(&config(&[("critical", 6), ("default", 3), ("low", 1)]), false).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(42);
        let runs = 20_000;
        let mut first = BTreeMap::<String, u32>::new();
        for _ in 0..runs {
            let order = q.order(&mut rng);
            assert_eq!(order.len(), 3);
            *first.entry(order[0].to_string()).or_default() += 1;
        }
        for (name, weight) in [("critical", 0.6), ("default", 0.3), ("low", 0.1)] {
            let share = f64::from(first[name]) / f64::from(runs);
            assert!((share - weight).abs() < 0.02, "{name}: {share} vs {weight}");
        }
    }
}
