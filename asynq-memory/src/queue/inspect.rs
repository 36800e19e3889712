//! Read-only views of a queue for the inspector: its statistics, one task, and pages of tasks
//! (scripts 6.2, 6.5, 6.7 and 6.8).

use super::Queue;
use crate::zset::ZSet;
use asynq_core::broker::Page;
use asynq_core::time::{from_unix_nanos, from_unix_secs, unix_secs};
use asynq_core::{QueueInfo, TaskInfo, TaskState};
use std::time::{Duration, SystemTime};

impl Queue {
    /// Sizes and statistics, as Go's `currentStats`.
    pub(crate) fn info(&self, name: &str, now: SystemTime) -> QueueInfo {
        let mut info = QueueInfo::empty(name, now);
        info.pending = self.pending.len();
        info.active = self.active.len();
        info.scheduled = self.scheduled.len();
        info.retry = self.retry.len();
        info.archived = self.archived.len();
        info.completed = self.completed.len();
        info.groups = self.groups.len();
        info.aggregating = self.groups.iter().filter_map(|group| self.group_sets.get(group)).map(ZSet::len).sum();
        info.size = info.sum_of_states();
        info.processed = self.stats.processed_today(now);
        info.failed = self.stats.failed_today(now);
        info.processed_total = self.stats.processed_total();
        info.failed_total = self.stats.failed_total();
        info.paused = self.paused.is_some();
        // The next task to run; a requeued one has no `pending_since` and reads as zero latency.
        let oldest = self.pending.back().and_then(|id| self.tasks.get(id)?.pending_since).filter(|&nanos| nanos != 0);
        info.latency =
            oldest.map_or(Duration::ZERO, |nanos| now.duration_since(from_unix_nanos(nanos)).unwrap_or_default());
        info
    }

    /// One task, as Go's `getTaskInfo`: the next process time is the due time of a scheduled
    /// or retry task and the current second for a pending one.
    pub(crate) fn task_info(&self, id: &str, now: SystemTime) -> Option<TaskInfo> {
        let record = self.tasks.get(id)?;
        let next_process_at = match record.state {
            TaskState::Scheduled => self.scheduled.score(id).map(from_unix_secs),
            TaskState::Retry => self.retry.score(id).map(from_unix_secs),
            TaskState::Pending => Some(from_unix_secs(unix_secs(now))),
            _ => None,
        };
        Some(TaskInfo::new(&record.msg, record.state, next_process_at, record.result.clone()))
    }

    /// One page of the tasks in `state`: pending and active next-to-run first, the sorted sets
    /// by score, and the groups registered in `groups` one after another by name (a group that
    /// only forwarding filled is not registered, so its tasks are not listed). A page is cut
    /// from the IDs before their records are read, so an ID without a record leaves a hole, as
    /// in Go. Pending tasks are due `now`, unrounded, as Go's listing reports them.
    pub(crate) fn list(&self, state: TaskState, page: Page, now: SystemTime) -> Vec<TaskInfo> {
        let ids: Box<dyn Iterator<Item = &str> + '_> = match state {
            TaskState::Pending => Box::new(self.pending.iter().rev().map(String::as_str)),
            TaskState::Active => Box::new(self.active.iter().rev().map(String::as_str)),
            TaskState::Scheduled => Box::new(self.scheduled.members()),
            TaskState::Retry => Box::new(self.retry.members()),
            TaskState::Archived => Box::new(self.archived.members()),
            TaskState::Completed => Box::new(self.completed.members()),
            TaskState::Aggregating => {
                Box::new(self.groups.iter().filter_map(|group| self.group_sets.get(group)).flat_map(ZSet::members))
            }
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
                let mut info = TaskInfo::new(&record.msg, state, next_process_at, record.result.clone());
                info.is_orphaned =
                    state == TaskState::Active && self.lease.score(id).is_some_and(|expiry| expiry <= now_secs);
                Some(info)
            })
            .collect()
    }
}
