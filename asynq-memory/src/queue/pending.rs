//! A queue's pending tasks: Go's pending list for the default priority, and a sorted set of
//! ours for the others, scored as the Redis broker scores its `prioritized` set.
//!
//! The next task to run is the first of the set scored below [`SPLIT`] (a priority above the
//! default, highest first), else the right end of the list, else the first of the rest of the
//! set (a priority below the default). Within one priority the set keeps the order tasks were
//! made pending in, by a per-queue sequence; a task given back (requeued) goes before the others
//! of its priority, as a requeued task goes to the list's right end.

use crate::zset::ZSet;
use asynq_core::TaskPriority;
use std::collections::VecDeque;

/// The score distance between two priorities: room for [`SEQUENCE_WRAP`] tasks on either side
/// of a priority's base score.
const STEP: i64 = 1 << 48;
/// Where the sequence starts again; far beyond any queue's lifetime of prioritized enqueues.
const SEQUENCE_WRAP: i64 = 1 << 47;
/// The scores below it are of priorities above the default.
const SPLIT: i64 = TaskPriority::MAX.get() as i64 * STEP;

/// The pending tasks of one queue.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Go's pending list. The front is Redis's left end, where new tasks are pushed; the back is
    /// its right end, the next to be dequeued.
    list: VecDeque<String>,
    /// Tasks of a priority other than the default, lowest score (next to run) first.
    prioritized: ZSet,
    /// The last sequence number given (the Redis broker's `priority_seq`).
    sequence: i64,
}

impl Pending {
    /// The score of a task of `priority` made pending now: after the others of its priority, or
    /// before them when `front`.
    fn score(&mut self, priority: TaskPriority, front: bool) -> i64 {
        self.sequence = if self.sequence + 1 >= SEQUENCE_WRAP { 1 } else { self.sequence + 1 };
        let base = (TaskPriority::MAX.get() - priority.get()) as i64 * STEP;
        if front { base - self.sequence } else { base + self.sequence }
    }

    /// Adds `id`, of `priority`, after the tasks of its priority (`LPUSH` for the default).
    pub(crate) fn push(&mut self, id: String, priority: TaskPriority) {
        if priority.is_default() {
            self.list.push_front(id);
        } else {
            let score = self.score(priority, false);
            self.prioritized.insert(&id, score);
        }
    }

    /// Adds `id`, of `priority`, before the tasks of its priority (`RPUSH` for the default): a
    /// task given back is next in line.
    pub(crate) fn push_next(&mut self, id: String, priority: TaskPriority) {
        if priority.is_default() {
            self.list.push_back(id);
        } else {
            let score = self.score(priority, true);
            self.prioritized.insert(&id, score);
        }
    }

    /// Takes the next task to run.
    pub(crate) fn pop(&mut self) -> Option<String> {
        if let Some(id) = self.prioritized.take_up_to(SPLIT - 1, 1).pop() {
            return Some(id);
        }
        if let Some(id) = self.list.pop_back() {
            return Some(id);
        }
        self.prioritized.take_lowest(1).pop()
    }

    /// Removes `id`; returns whether it was pending.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        if self.prioritized.remove(id) {
            return true;
        }
        match self.list.iter().position(|pending| pending == id) {
            Some(position) => self.list.remove(position).is_some(),
            None => false,
        }
    }

    /// How many tasks are pending.
    pub(crate) fn len(&self) -> usize {
        self.list.len() + self.prioritized.len()
    }

    /// Whether no task is pending.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty() && self.prioritized.len() == 0
    }

    /// The pending tasks, next to run first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        let above = self.prioritized.iter().take_while(|(_, score)| *score < SPLIT).map(|(id, _)| id);
        let below = self.prioritized.iter().skip_while(|(_, score)| *score < SPLIT).map(|(id, _)| id);
        above.chain(self.list.iter().rev().map(String::as_str)).chain(below)
    }

    /// Removes every pending task; returns them next to run first.
    pub(crate) fn take_all(&mut self) -> Vec<String> {
        let ids: Vec<String> = self.iter().map(str::to_owned).collect();
        self.list.clear();
        self.prioritized = ZSet::default();
        ids
    }

    /// The next task of each priority that has pending tasks: the oldest of each, whose wait is
    /// the queue's latency.
    pub(crate) fn heads(&self) -> impl Iterator<Item = &str> {
        let mut last_level = None;
        let firsts = self.prioritized.iter().filter_map(move |(id, score)| {
            // A task given back scores just below its priority's base; round to the nearest.
            let level = (score + STEP / 2).div_euclid(STEP);
            (last_level != Some(level)).then(|| {
                last_level = Some(level);
                id
            })
        });
        self.list.back().map(String::as_str).into_iter().chain(firsts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: i32) -> TaskPriority {
        TaskPriority::new(n).unwrap()
    }

    #[test]
    fn higher_first_then_the_list_then_lower_and_fifo_within_a_priority() {
        let mut pending = Pending::default();
        for (id, priority) in [("a", 0), ("b", -1), ("c", 5), ("d", 0), ("e", 5), ("f", 10), ("g", -10), ("h", -1)] {
            pending.push(id.to_owned(), p(priority));
        }
        pending.push_next("i".to_owned(), p(5));
        pending.push_next("j".to_owned(), p(0));
        let order: Vec<&str> = pending.iter().collect();
        assert_eq!(order, ["f", "i", "c", "e", "j", "a", "d", "b", "h", "g"]);
        assert_eq!(pending.heads().collect::<Vec<_>>(), ["j", "f", "i", "b", "g"]);
        assert_eq!(pending.len(), 10);
        assert!(pending.remove("e") && pending.remove("a") && !pending.remove("a"));
        let mut popped = Vec::new();
        while let Some(id) = pending.pop() {
            popped.push(id);
        }
        assert_eq!(popped, ["f", "i", "c", "j", "d", "b", "h", "g"]);
        assert!(pending.is_empty());
    }

    #[test]
    fn the_sequence_starts_again_before_it_reaches_the_next_priority() {
        let mut pending = Pending { sequence: SEQUENCE_WRAP - 2, ..Pending::default() };
        pending.push("a".to_owned(), p(1));
        pending.push("b".to_owned(), p(1));
        pending.push("c".to_owned(), p(2));
        assert_eq!(pending.sequence, 2);
        assert_eq!(pending.take_all(), ["c", "b", "a"], "order within a priority is lost once, never across");
    }
}
