//! Read-only views of a queue for the inspector: its statistics and memory estimate, its daily
//! history, one task, and pages of tasks (scripts 6.2–6.5, 6.7 and 6.8).

use super::{Queue, TaskRecord};
use crate::zset::ZSet;
use asynq_core::broker::Page;
use asynq_core::time::{from_unix_nanos, from_unix_secs, unix_secs, utc_date};
use asynq_core::{DailyStats, QueueInfo, QueueName, TaskInfo, TaskState};
use std::time::SystemTime;

/// How many tasks of each list or sorted set the memory estimate reads (Go's sample size).
const MEMORY_SAMPLE: usize = 20;
/// How many groups the memory estimate samples, `MEMORY_SAMPLE` tasks each (Go's group sample
/// size).
const MEMORY_GROUP_SAMPLE: usize = 5;
/// The bytes a task's estimate counts for the numeric fields of its message and record.
const NUMERIC_FIELDS_BYTES: u64 = 64;
/// Seconds in a day.
const DAY_SECS: i64 = 86_400;

/// The estimated size of one task: the bytes of its message's strings, payload and headers,
/// [`NUMERIC_FIELDS_BYTES`] for its numbers, and its result.
fn task_size(record: &TaskRecord) -> u64 {
    let msg = &record.msg;
    let strings = [msg.id.len(), msg.type_name.len(), msg.queue.len()];
    let optional =
        [msg.last_error.as_deref(), msg.unique_key.as_deref(), msg.group.as_deref()].map(|s| s.map_or(0, str::len));
    let headers = msg.headers.iter().map(|(key, value)| key.len() + value.len());
    let bytes = strings.into_iter().chain(optional).chain(headers).sum::<usize>()
        + msg.payload.len()
        + record.result.as_ref().map_or(0, |result| result.len());
    u64::try_from(bytes).unwrap_or(u64::MAX).saturating_add(NUMERIC_FIELDS_BYTES)
}

impl Queue {
    /// Sizes and statistics, as Go's `currentStats`.
    pub(crate) fn info(&self, name: &QueueName, now: SystemTime) -> QueueInfo {
        let mut info = QueueInfo::empty(name, now);
        info.pending = self.pending.len();
        info.active = self.active.len();
        info.scheduled = self.scheduled.len();
        info.retry = self.retry.len();
        info.archived = self.archived.len();
        info.completed = self.completed.len();
        info.groups = self.groups.len();
        info.aggregating = self.groups.iter().filter_map(|group| self.group_sets.get(group)).map(ZSet::len).sum();
        info.waiting = self.waiting_count();
        info.size = info.sum_of_states();
        info.processed = self.stats.processed_today(now);
        info.failed = self.stats.failed_today(now);
        info.processed_total = self.stats.processed_total();
        info.failed_total = self.stats.failed_total();
        info.paused = self.paused.is_some();
        info.memory_usage = self.memory_usage();
        // The longest wait of the next task of each priority (the oldest of each); a requeued
        // one has no `pending_since` and reads as zero latency.
        let waits = self.pending.heads().filter_map(|id| self.tasks.get(id)?.pending_since).filter(|&nanos| nanos != 0);
        info.latency =
            waits.map(|nanos| now.duration_since(from_unix_nanos(nanos)).unwrap_or_default()).max().unwrap_or_default();
        info
    }

    /// An estimate of the bytes the queue's tasks take, made as Go's `memoryUsage` makes it:
    /// for each list and sorted set (pending, active, scheduled, retry, archived, completed), the
    /// average [`task_size`] of up to [`MEMORY_SAMPLE`] of its tasks times its length; for the
    /// registered groups, the average over up to [`MEMORY_SAMPLE`] tasks of each of the first
    /// [`MEMORY_GROUP_SAMPLE`] groups times the number of tasks in all of them. Zero for a queue
    /// without tasks; tasks in aggregation sets are not counted.
    pub(crate) fn memory_usage(&self) -> u64 {
        let mut total = self.estimate(self.pending.iter(), self.pending.len());
        total = total.saturating_add(self.estimate(self.active.iter().map(String::as_str), self.active.len()));
        for set in [&self.scheduled, &self.retry, &self.archived, &self.completed] {
            total = total.saturating_add(self.estimate(set.members(), set.len()));
        }
        let groups = || self.groups.iter().filter_map(|group| self.group_sets.get(group));
        let grouped = groups().map(ZSet::len).sum();
        let sample = groups().take(MEMORY_GROUP_SAMPLE).flat_map(|members| members.members().take(MEMORY_SAMPLE));
        total.saturating_add(self.estimate_sampled(sample, grouped))
    }

    /// `count` times the average size of the first [`MEMORY_SAMPLE`] tasks of `ids`.
    fn estimate<'a>(&self, ids: impl Iterator<Item = &'a str>, count: usize) -> u64 {
        self.estimate_sampled(ids.take(MEMORY_SAMPLE), count)
    }

    /// `count` times the average size of the tasks of `sample` that have a record.
    fn estimate_sampled<'a>(&self, sample: impl Iterator<Item = &'a str>, count: usize) -> u64 {
        let (mut bytes, mut sampled) = (0u128, 0u128);
        for record in sample.filter_map(|id| self.tasks.get(id)) {
            bytes += u128::from(task_size(record));
            sampled += 1;
        }
        if sampled == 0 {
            return 0;
        }
        let count = u128::try_from(count).unwrap_or(u128::MAX);
        u64::try_from(bytes.saturating_mul(count) / sampled).unwrap_or(u64::MAX)
    }

    /// The number of task records the queue holds, in any state.
    pub(crate) fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Processed and failed counts for the `days` UTC dates ending with the date of `now`,
    /// today first (Go's `historicalStats`).
    pub(crate) fn history(&self, name: &QueueName, days: usize, now: SystemTime) -> Vec<DailyStats> {
        let today = unix_secs(now);
        (0..days)
            .map(|back| {
                let back = i64::try_from(back).unwrap_or(i64::MAX).saturating_mul(DAY_SECS);
                let date = utc_date(from_unix_secs(today.saturating_sub(back)));
                let (processed, failed) = self.stats.on_date(&date, now);
                DailyStats { queue: name.clone(), date, processed, failed }
            })
            .collect()
    }

    /// One page of the tasks waiting in `group`, oldest first (Go's `listZSetEntries` on the
    /// group's sorted set); empty for an unknown group. The group need not be registered.
    pub(crate) fn group_tasks(&self, group: &str, page: Page) -> Vec<TaskInfo> {
        let Some(members) = self.group_sets.get(group) else { return Vec::new() };
        members
            .members()
            .skip(page.size.saturating_mul(page.number))
            .take(page.size)
            .filter_map(|id| self.tasks.get(id))
            .map(|record| record.info(TaskState::Aggregating, None))
            .collect()
    }

    /// One task, as Go's `getTaskInfo`: the next process time is the due time of a scheduled
    /// or retry task and the current second for a pending one.
    pub(crate) fn task_info(&self, id: &str, now: SystemTime) -> Option<TaskInfo> {
        let Some(record) = self.tasks.get(id) else { return self.waiting_task_info(id) };
        let next_process_at = match record.state {
            TaskState::Scheduled => self.scheduled.score(id).map(from_unix_secs),
            TaskState::Retry => self.retry.score(id).map(from_unix_secs),
            TaskState::Pending => Some(from_unix_secs(unix_secs(now))),
            _ => None,
        };
        Some(record.info(record.state, next_process_at))
    }

    /// One page of the tasks in `state`: pending and active next-to-run first, the sorted sets
    /// by score, and the groups registered in `groups` one after another by name (a group that
    /// only forwarding filled is not registered, so its tasks are not listed). A page is cut
    /// from the IDs before their records are read, so an ID without a record leaves a hole, as
    /// in Go. Pending tasks are due `now`, unrounded, as Go's listing reports them.
    pub(crate) fn list(&self, state: TaskState, page: Page, now: SystemTime) -> Vec<TaskInfo> {
        let ids: Box<dyn Iterator<Item = &str> + '_> = match state {
            TaskState::Pending => Box::new(self.pending.iter()),
            TaskState::Active => Box::new(self.active.iter().rev().map(String::as_str)),
            TaskState::Scheduled => Box::new(self.scheduled.members()),
            TaskState::Retry => Box::new(self.retry.members()),
            TaskState::Archived => Box::new(self.archived.members()),
            TaskState::Completed => Box::new(self.completed.members()),
            TaskState::Aggregating => {
                Box::new(self.groups.iter().filter_map(|group| self.group_sets.get(group)).flat_map(ZSet::members))
            }
            TaskState::Waiting => return self.list_waiting(page),
        };
        let now_secs = unix_secs(now);
        ids.skip(page.size.saturating_mul(page.number))
            .take(page.size)
            .filter_map(|id| {
                let record = self.tasks.get(id)?;
                let next_process_at = match state {
                    TaskState::Pending => Some(now),
                    TaskState::Scheduled => self.scheduled.score(id).map(from_unix_secs),
                    TaskState::Retry => self.retry.score(id).map(from_unix_secs),
                    _ => None,
                };
                let mut info = record.info(state, next_process_at);
                info.is_orphaned =
                    state == TaskState::Active && self.lease.score(id).is_some_and(|expiry| expiry <= now_secs);
                Some(info)
            })
            .collect()
    }
}
