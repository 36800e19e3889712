//! Which queue a server tries first: weighted random or strict priority; and the patterns of
//! queue names a server serves as queues appear.

use crate::{Error, QueueName, Result};
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
    /// Errors: [`Error::InvalidArgument`] for a name that is no
    /// [`QueueName`].
    pub fn new(queues: &BTreeMap<String, u32>, strict: bool) -> Result<Self> {
        let mut named = Vec::with_capacity(queues.len());
        for (name, priority) in queues {
            named.push((QueueName::new(name.as_str())?, *priority));
        }
        let priorities = Self::from_weights(named, strict);
        if priorities.queues.is_empty() {
            return Ok(Self { queues: vec![(QueueName::default(), 1)], strict });
        }
        Ok(priorities)
    }

    /// Normalises `queues` as [`QueuePriorities::new`] does, except that no queue left means
    /// none served (not `default`): a server whose queues come and go
    /// ([`QueuePattern`]) may serve none for a while. A queue named twice keeps its first
    /// priority.
    pub fn from_weights(queues: impl IntoIterator<Item = (QueueName, u32)>, strict: bool) -> Self {
        let mut kept: Vec<(QueueName, u32)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (name, priority) in queues {
            if priority > 0 && seen.insert(name.clone()) {
                kept.push((name, priority));
            }
        }
        let divisor = kept.iter().fold(0, |g, (_, p)| gcd(g, *p));
        for (_, p) in &mut kept {
            *p /= divisor;
        }
        // Highest priority first; names break ties so the order is deterministic.
        kept.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Self { queues: kept, strict }
    }

    /// True when no queue is served.
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
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
    /// Strict: always highest priority first, queues of one priority in random order (so that
    /// none of them starves the others; Go leaves their order unspecified). Weighted: each
    /// queue comes first with probability proportional to its priority (Go's shuffle of a list
    /// holding each name `priority` times, keeping first occurrences).
    pub fn order(&self, rng: &mut impl Rng) -> Vec<QueueName> {
        if self.queues.len() == 1 {
            return self.names().cloned().collect();
        }
        if self.strict {
            let mut order = Vec::with_capacity(self.queues.len());
            for same in self.queues.chunk_by(|a, b| a.1 == b.1) {
                let start = order.len();
                order.extend(same.iter().map(|(name, _)| name.clone()));
                order[start..].shuffle(rng);
            }
            return order;
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

/// A pattern of queue names, such as `tenant:*`: a server that serves it serves every queue
/// whose name matches, as queues appear, without a restart. `*` stands for any run of
/// characters (none included); every other character stands for itself.
///
/// ```
/// use asynq_core::QueueName;
/// use asynq_core::queue::QueuePattern;
///
/// let tenants = QueuePattern::new("tenant:*")?;
/// assert!(tenants.matches(&QueueName::new("tenant:42")?));
/// assert!(!tenants.matches(&QueueName::new("critical")?));
/// assert!(QueuePattern::new("*").is_err()); // every queue: name them, or use a provider
/// # Ok::<(), asynq_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueuePattern {
    pattern: String,
}

impl QueuePattern {
    /// Checks `pattern`.
    ///
    /// Errors: [`Error::InvalidArgument`] for a pattern without `*` (a queue name: serve it
    /// as a queue), one of `*` alone (it would serve every queue, Go's included), and one that
    /// no queue name can match (it holds a character queue names cannot have, such as `{`).
    pub fn new(pattern: impl Into<String>) -> Result<Self> {
        let pattern = pattern.into();
        let refused = |reason: String| Err(Error::invalid("queue pattern", reason));
        if !pattern.contains('*') {
            return refused(format!("{pattern:?} has no `*`: name the queue instead"));
        }
        let literal: String = pattern.chars().filter(|c| *c != '*').collect();
        if literal.trim().is_empty() {
            return refused(format!("{pattern:?} matches every queue; name the queues, or serve a provider's"));
        }
        // A queue name holding the pattern's characters shows whether any name can match.
        if let Err(Error::InvalidArgument { reason, .. }) = QueueName::new(literal) {
            return refused(format!("{pattern:?} matches no queue: {reason}"));
        }
        Ok(Self { pattern })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `queue` matches.
    pub fn matches(&self, queue: &QueueName) -> bool {
        glob_matches(self.pattern.as_bytes(), queue.as_str().as_bytes())
    }
}

impl std::fmt::Display for QueuePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of bytes: the greedy match
/// that backtracks to the last `*` only, linear in practice.
fn glob_matches(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut last_star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            last_star = Some((p, n));
            p += 1;
        } else if p < pattern.len() && pattern[p] == name[n] {
            p += 1;
            n += 1;
        } else if let Some((star, matched)) = last_star {
            p = star + 1;
            n = matched + 1;
            last_star = Some((star, matched + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
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
    fn strict_order_shuffles_queues_of_one_priority() {
        let q = QueuePriorities::new(&config(&[("a", 2), ("b", 1), ("c", 1), ("d", 1)]), true).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut second = BTreeMap::<String, u32>::new();
        for _ in 0..3_000 {
            let order = q.order(&mut rng);
            assert_eq!(order[0], "a");
            *second.entry(order[1].to_string()).or_default() += 1;
        }
        for name in ["b", "c", "d"] {
            assert!((900..1100).contains(&second[name]), "{second:?}");
        }
    }

    #[test]
    fn from_weights_serves_nothing_when_nothing_is_left() {
        let q = QueuePriorities::from_weights([(QueueName::from_static("a"), 0)], false);
        assert!(q.is_empty());
        assert!(q.order(&mut rand::rng()).is_empty());
    }

    #[test]
    fn patterns_match_as_globs() {
        let cases = [
            ("tenant:*", "tenant:1", true),
            ("tenant:*", "tenant:", true),
            ("tenant:*", "tenants", false),
            ("*:jobs", "acme:jobs", true),
            ("*:jobs", "acme:jobs:old", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("a**c", "ac", true),
        ];
        for (pattern, name, matches) in cases {
            let pattern = QueuePattern::new(pattern).unwrap();
            assert_eq!(pattern.matches(&QueueName::new(name).unwrap()), matches, "{pattern} against {name}");
        }
    }

    #[test]
    fn patterns_that_match_everything_or_nothing_are_refused() {
        for bad in ["critical", "*", "**", " * ", "tenant{*}", ""] {
            assert!(matches!(QueuePattern::new(bad), Err(Error::InvalidArgument { .. })), "{bad:?} should be refused");
        }
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
