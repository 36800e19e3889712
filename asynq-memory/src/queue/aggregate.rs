//! A queue's groups and aggregation sets: group statistics, the aggregation check, reading,
//! completing and deleting a set, and reclaiming stale sets (scripts 6.6 and 5.14–5.17).
//!
//! An aggregation set stands for Go's `asynq:{q}:g:<group>:<set id>` sorted set (the members
//! with the scores they had in the group) together with its entry in
//! `asynq:{q}:aggregation_sets` (its deadline). Members keep their task records, in state
//! aggregating, until the set is completed or deleted.

use super::{Queue, check_deletes};
use crate::aggregate::set_not_found;
use crate::zset::ZSet;
use asynq_core::broker::{AGGREGATION_TIMEOUT, AggregationLimits, AggregationSet, GroupInfo};
use asynq_core::state::Event;
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{EnqueueRequest, GroupName, QueueName, Result};
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// One aggregation set: its group, its members scored as they were in the group, and its
/// deadline in Unix seconds.
#[derive(Debug)]
struct PendingAggregation {
    group: GroupName,
    members: ZSet,
    deadline: i64,
}

/// The aggregation sets of one queue, by set ID.
#[derive(Debug, Default)]
pub(crate) struct AggregationSets {
    sets: HashMap<String, PendingAggregation>,
    /// The number of sets ever created in the queue: the next set's ID. Go uses a UUID; a
    /// counter is as unique within one broker, and nothing outside it sees the ID.
    created: u64,
}

impl AggregationSets {
    /// The set `set_id`, if it belongs to `group` (as a Redis key names both).
    fn get(&self, group: &str, set_id: &str) -> Option<&PendingAggregation> {
        self.sets.get(set_id).filter(|set| set.group == group)
    }

    /// Removes and returns the set `set_id`, if it belongs to `group`.
    fn remove(&mut self, group: &str, set_id: &str) -> Option<PendingAggregation> {
        self.get(group, set_id)?;
        self.sets.remove(set_id)
    }
}

impl Queue {
    /// The registered groups by name, with their sizes (Go's `groupStats`).
    pub(crate) fn group_stats(&self) -> Vec<GroupInfo> {
        self.groups
            .iter()
            .map(|group| GroupInfo::new(group.clone(), self.group_sets.get(group).map_or(0, ZSet::len)))
            .collect()
    }

    /// How many tasks wait in `group`, registered or not.
    pub(crate) fn group_size(&self, group: &GroupName) -> usize {
        self.group_sets.get(group).map_or(0, ZSet::len)
    }

    /// Up to `limit` registered groups ready by `limits` at `now`, as the Redis broker's index
    /// names them while only it writes: those of the max size rule by size, then those of the
    /// max delay by their oldest task's score, then those of the grace period by their newest
    /// task's score (ties by name), each once. `limits` must be valid.
    pub(crate) fn ready_groups(&self, limits: &AggregationLimits, now: SystemTime, limit: usize) -> Vec<GroupName> {
        let now_secs = unix_secs(now);
        let secs_ago = |d: Duration| now_secs.saturating_sub(i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let (mut by_size, mut by_delay, mut by_grace) = (Vec::new(), Vec::new(), Vec::new());
        for group in &self.groups {
            let Some(members) = self.group_sets.get(group) else { continue };
            let (Some((_, oldest)), Some((_, newest))) = (members.iter().next(), members.highest()) else { continue };
            if limits.max_size.is_some_and(|max_size| members.len() >= max_size) {
                by_size.push((members.len() as i64, group));
            }
            if limits.max_delay.is_some_and(|max_delay| oldest <= secs_ago(max_delay)) {
                by_delay.push((oldest, group));
            }
            if newest <= secs_ago(limits.grace_period) {
                by_grace.push((newest, group));
            }
        }
        let mut named: Vec<GroupName> = Vec::new();
        for mut rule in [by_size, by_delay, by_grace] {
            rule.sort();
            for (_, group) in rule {
                if named.len() < limit && !named.contains(group) {
                    named.push(group.clone());
                }
            }
        }
        named
    }

    /// Moves the tasks of `group` to aggregate now into a new aggregation set and returns its
    /// ID, or returns `None` when the group is not ready (script 5.14). `limits` must be valid.
    pub(crate) fn aggregation_check(
        &mut self,
        group: &GroupName,
        limits: &AggregationLimits,
        now: SystemTime,
    ) -> Option<String> {
        let now_secs = unix_secs(now);
        let members = self.group_sets.get_mut(group)?;
        let size = members.len();
        let (_, oldest) = members.iter().next()?;
        let (_, newest) = members.highest()?;
        let secs_ago = |d: Duration| now_secs.saturating_sub(i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let count = match limits.max_size {
            Some(max_size) if size >= max_size => max_size,
            _ => {
                let delayed = limits.max_delay.is_some_and(|max_delay| oldest <= secs_ago(max_delay));
                let idle = newest <= secs_ago(limits.grace_period);
                if !(delayed || idle) {
                    return None;
                }
                size
            }
        };
        let mut taken = ZSet::default();
        let chosen: Vec<(String, i64)> = members.iter().take(count).map(|(id, score)| (id.to_owned(), score)).collect();
        for (id, score) in chosen {
            members.remove(&id);
            taken.insert(&id, score);
        }
        if members.len() == 0 {
            self.group_sets.remove(group);
            self.groups.remove(group);
        }
        let sets = &mut self.aggregation_sets;
        sets.created += 1;
        let set_id = sets.created.to_string();
        let deadline = unix_secs(now + AGGREGATION_TIMEOUT);
        sets.sets.insert(set_id.clone(), PendingAggregation { group: group.clone(), members: taken, deadline });
        Some(set_id)
    }

    /// The members of set `set_id` of `group` that still have a record, in group order, and the
    /// set's deadline (script 5.15).
    pub(crate) fn read_aggregation_set(&self, group: &str, set_id: &str) -> Option<AggregationSet> {
        let set = self.aggregation_sets.get(group, set_id)?;
        let messages = set.members.members().filter_map(|id| self.tasks.get(id)).map(|r| r.msg.clone()).collect();
        Some(AggregationSet { messages, deadline: from_unix_secs(set.deadline) })
    }

    /// Enqueues the aggregated task `request` and deletes set `set_id` of `group` with its
    /// members, or does nothing and fails (see `Aggregate::complete_aggregation`).
    pub(crate) fn complete_aggregation(
        &mut self,
        queue: &QueueName,
        group: &GroupName,
        set_id: &str,
        request: EnqueueRequest,
        now: SystemTime,
    ) -> Result<()> {
        if self.aggregation_sets.get(group, set_id).is_none() {
            return Err(set_not_found(queue, group, set_id));
        }
        self.enqueue(request, now)?;
        self.delete_aggregation_set(group, set_id);
        Ok(())
    }

    /// Deletes set `set_id` of `group` and its members' records (script 5.16); the members'
    /// uniqueness locks stay until their TTL, as in Go.
    pub(crate) fn delete_aggregation_set(&mut self, group: &str, set_id: &str) {
        let Some(set) = self.aggregation_sets.remove(group, set_id) else { return };
        for id in set.members.members() {
            if self.tasks.get(id).is_some_and(|record| check_deletes(Some(record.state), Event::Aggregate).is_ok()) {
                self.tasks.remove(id);
            }
        }
    }

    /// Puts the members of every set whose deadline is at or before `now` back in their group
    /// with their scores, registers the group again, and deletes the sets (script 5.17, plus
    /// the registration Go leaves out). Returns how many sets were reclaimed.
    pub(crate) fn reclaim_stale_aggregation_sets(&mut self, now: SystemTime) -> usize {
        let now_secs = unix_secs(now);
        let stale: Vec<String> = self
            .aggregation_sets
            .sets
            .iter()
            .filter(|(_, set)| set.deadline <= now_secs)
            .map(|(id, _)| id.clone())
            .collect();
        for set_id in &stale {
            let Some(set) = self.aggregation_sets.sets.remove(set_id) else { continue };
            let group = self.group_sets.entry(set.group.clone()).or_default();
            for (id, score) in set.members.iter() {
                group.insert(id, score);
            }
            self.groups.insert(set.group);
        }
        stale.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{Task, TaskOptions, TaskState, resolve_enqueue};

    fn at(secs: i64) -> SystemTime {
        from_unix_secs(secs)
    }

    fn add(queue: &mut Queue, id: &str, group: &str, now: i64) {
        let task = Task::new("t", id.to_owned()).with_options(TaskOptions::new().group(group).task_id(id));
        let request = resolve_enqueue(&task, &TaskOptions::new(), at(now), String::new).unwrap();
        queue.enqueue(request, at(now)).unwrap();
    }

    fn limits(grace: u64, max_delay: Option<u64>, max_size: Option<usize>) -> AggregationLimits {
        AggregationLimits {
            grace_period: Duration::from_secs(grace),
            max_delay: max_delay.map(Duration::from_secs),
            max_size,
        }
    }

    #[test]
    fn a_set_keeps_the_group_scores_and_a_deadline_two_minutes_out() {
        let mut queue = Queue::default();
        add(&mut queue, "a", "g", 100);
        add(&mut queue, "b", "g", 105);
        assert_eq!(queue.aggregation_check(&GroupName::from_static("g"), &limits(10, None, None), at(114)), None);
        let set_id = queue.aggregation_check(&GroupName::from_static("g"), &limits(10, None, None), at(115)).unwrap();

        let set = &queue.aggregation_sets.sets[&set_id];
        assert_eq!(set.members.iter().collect::<Vec<_>>(), [("a", 100), ("b", 105)]);
        assert_eq!(set.deadline, 235);
        assert!(queue.groups.is_empty() && !queue.group_sets.contains_key("g"));
        assert_eq!(queue.tasks["a"].state, TaskState::Aggregating);
    }

    #[test]
    fn a_set_is_found_only_under_its_own_group() {
        let mut queue = Queue::default();
        add(&mut queue, "a", "g", 100);
        let set_id = queue.aggregation_check(&GroupName::from_static("g"), &limits(1, None, Some(1)), at(100)).unwrap();
        assert!(queue.read_aggregation_set("h", &set_id).is_none());
        queue.delete_aggregation_set("h", &set_id);
        assert!(queue.read_aggregation_set("g", &set_id).is_some());
    }
}
