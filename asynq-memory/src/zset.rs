//! A Redis-style sorted set: unique members ordered by `(score, member)`, which is the order in
//! which `ZRANGE` and `ZRANGEBYSCORE` return them.

use std::collections::{BTreeSet, HashMap};

/// Members with integer scores (the broker's scores are all whole Unix seconds).
#[derive(Debug, Default)]
pub(crate) struct ZSet {
    scores: HashMap<String, i64>,
    ordered: BTreeSet<(i64, String)>,
}

impl ZSet {
    /// Adds `member` with `score`, or moves it to `score` if present (`ZADD`).
    pub(crate) fn insert(&mut self, member: &str, score: i64) {
        if let Some(old) = self.scores.insert(member.to_owned(), score) {
            self.ordered.remove(&(old, member.to_owned()));
        }
        self.ordered.insert((score, member.to_owned()));
    }

    /// Moves `member` to `score` if it is present; returns whether it was (`ZADD XX`).
    pub(crate) fn update(&mut self, member: &str, score: i64) -> bool {
        let present = self.contains(member);
        if present {
            self.insert(member, score);
        }
        present
    }

    /// Removes `member`; returns whether it was present (`ZREM`).
    pub(crate) fn remove(&mut self, member: &str) -> bool {
        match self.scores.remove(member) {
            Some(score) => self.ordered.remove(&(score, member.to_owned())),
            None => false,
        }
    }

    /// The score of `member` (`ZSCORE`).
    pub(crate) fn score(&self, member: &str) -> Option<i64> {
        self.scores.get(member).copied()
    }

    /// Whether `member` is present.
    pub(crate) fn contains(&self, member: &str) -> bool {
        self.scores.contains_key(member)
    }

    /// The number of members (`ZCARD`).
    pub(crate) fn len(&self) -> usize {
        self.scores.len()
    }

    /// Members and scores, lowest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.ordered.iter().map(|(score, member)| (member.as_str(), *score))
    }

    /// Members, lowest score first.
    pub(crate) fn members(&self) -> impl Iterator<Item = &str> {
        self.ordered.iter().map(|(_, member)| member.as_str())
    }

    /// The members scored at most `max`, lowest first (`ZRANGEBYSCORE -inf max`).
    pub(crate) fn up_to(&self, max: i64) -> impl Iterator<Item = &str> {
        self.iter().take_while(move |&(_, score)| score <= max).map(|(member, _)| member)
    }

    /// Removes and returns up to `limit` members scored at most `max`, lowest first.
    pub(crate) fn take_up_to(&mut self, max: i64, limit: usize) -> Vec<String> {
        let mut taken = Vec::new();
        while taken.len() < limit && self.ordered.first().is_some_and(|&(score, _)| score <= max) {
            if let Some((_, member)) = self.ordered.pop_first() {
                self.scores.remove(&member);
                taken.push(member);
            }
        }
        taken
    }

    /// Removes and returns the `n` lowest-ranked members (`ZRANGE 0 n-1` then `ZREM`).
    pub(crate) fn take_lowest(&mut self, n: usize) -> Vec<String> {
        self.take_up_to(i64::MAX, n)
    }

    /// The lowest score (`ZRANGE 0 0 WITHSCORES`).
    pub(crate) fn lowest_score(&self) -> Option<i64> {
        self.ordered.first().map(|(score, _)| *score)
    }

    /// The highest-ranked member and its score (`ZREVRANGE 0 0 WITHSCORES`).
    pub(crate) fn highest(&self) -> Option<(&str, i64)> {
        self.ordered.last().map(|(score, member)| (member.as_str(), *score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(set: &ZSet) -> Vec<(&str, i64)> {
        set.iter().collect()
    }

    #[test]
    fn orders_by_score_then_member() {
        let mut set = ZSet::default();
        set.insert("b", 2);
        set.insert("c", 1);
        set.insert("a", 2);
        assert_eq!(members(&set), [("c", 1), ("a", 2), ("b", 2)]);
        set.insert("c", 3);
        assert_eq!(members(&set), [("a", 2), ("b", 2), ("c", 3)]);
        assert_eq!(set.len(), 3);
    }

    #[test]
    fn update_touches_only_existing_members() {
        let mut set = ZSet::default();
        set.insert("a", 1);
        assert!(set.update("a", 5));
        assert!(!set.update("b", 5));
        assert_eq!(members(&set), [("a", 5)]);
    }

    #[test]
    fn ranges_are_inclusive_and_ordered() {
        let mut set = ZSet::default();
        for (member, score) in [("x", 10), ("y", 20), ("z", 30)] {
            set.insert(member, score);
        }
        assert_eq!(set.up_to(20).collect::<Vec<_>>(), ["x", "y"]);
        assert_eq!(set.up_to(9).count(), 0);
        assert!(set.remove("y"));
        assert!(!set.remove("y"));
        assert_eq!((set.score("z"), set.score("y"), set.len()), (Some(30), None, 2));
    }

    #[test]
    fn take_removes_in_order_within_the_limit() {
        let mut set = ZSet::default();
        for (member, score) in [("x", 10), ("y", 20), ("z", 30)] {
            set.insert(member, score);
        }
        assert_eq!(set.take_up_to(25, 1), ["x"]);
        assert_eq!(set.take_up_to(25, 10), ["y"]);
        assert_eq!(set.take_lowest(5), ["z"]);
        assert_eq!(set.len(), 0);
    }
}
