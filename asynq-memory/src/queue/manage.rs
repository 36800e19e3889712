//! Operator actions on one queue (scripts 6.9–6.13): run, archive or delete one task or every
//! task of a state or group, replace a scheduled task's payload, and empty the queue for its
//! removal.
//!
//! Departures from Go asynq, all deliberate:
//! - every delete, one task or many, pending and grouped tasks included, releases the uniqueness
//!   lock the task still holds (Go releases it only in `deleteTask` and `deleteAll`);
//! - a task run by an operator has no `pending_since` even if it had one before it was archived,
//!   so the queue's latency reads zero while it is next (Go keeps a stale `pending_since` in the
//!   hash across archive and run);
//! - the archive trim deletes the records of the tasks it drops, as the core archive does (Go's
//!   inspector leaves their hashes behind).

use super::{Queue, TaskRecord, check_deletes, state_after};
use asynq_core::events::EventKind;
use asynq_core::state::Event;
use asynq_core::time::unix_secs;
use asynq_core::{
    ArchiveReport, EnqueueRequest, Error, QueueName, Replace, Result, TaskId, TaskInfo, TaskSet, TaskState,
};
use bytes::Bytes;
use std::time::SystemTime;

fn not_found(queue: &QueueName, id: &TaskId) -> Error {
    Error::TaskNotFound { queue: queue.clone(), id: id.clone() }
}

fn refused(reason: impl Into<String>) -> Error {
    Error::FailedPrecondition(reason.into())
}

impl Queue {
    /// The state of task `id`, or `TaskNotFound`.
    fn state_of(&self, queue: &QueueName, id: &TaskId) -> Result<TaskState> {
        if self.waiting_task_info(id.as_str()).is_some() {
            return Err(asynq_core::workflow::waiting_task_refused(id));
        }
        self.tasks.get(id.as_str()).map(|record| record.state).ok_or_else(|| not_found(queue, id))
    }

    /// Takes task `id`, in `state`, out of the container that holds it. Fails and changes
    /// nothing when that container does not hold it, which happens to an aggregating task only:
    /// one an aggregation check took out of its group into an aggregation set (where Go's
    /// scripts fail with an error reply).
    fn detach(&mut self, id: &str, state: TaskState) -> Result<()> {
        let detached = match state {
            TaskState::Pending => self.pending.remove(id),
            // A workflow's waiting tasks are not in `tasks`, so no operator action reaches one.
            TaskState::Active | TaskState::Waiting => false,
            TaskState::Scheduled => self.scheduled.remove(id),
            TaskState::Retry => self.retry.remove(id),
            TaskState::Archived => self.archived.remove(id),
            TaskState::Completed => self.completed.remove(id),
            TaskState::Aggregating => {
                let group = self.tasks.get(id).and_then(|record| record.group.clone());
                group.is_some_and(|group| self.remove_from_group(&group, id))
            }
        };
        match (detached, state) {
            (true, _) => Ok(()),
            (false, TaskState::Aggregating) => {
                Err(refused(format!("task {id:?} is being aggregated: it is in an aggregation set, not in its group")))
            }
            (false, state) => Err(refused(format!("task {id:?} is {state} but not in the queue's {state} tasks"))),
        }
    }

    /// Removes `id` from `group`, unregistering the group once it is empty (as Go's scripts
    /// `SREM` it); returns whether the group held it.
    fn remove_from_group(&mut self, group: &str, id: &str) -> bool {
        let Some(members) = self.group_sets.get_mut(group) else { return false };
        let removed = members.remove(id);
        if members.len() == 0 {
            self.group_sets.remove(group);
            self.groups.remove(group);
        }
        removed
    }

    /// Removes every task of `set` from its container and returns their IDs: pending ones
    /// next-to-run first, the others in score order. A group is unregistered.
    fn take_set(&mut self, set: &TaskSet) -> Vec<String> {
        match set {
            TaskSet::State(TaskState::Pending) => self.pending.take_all(),
            TaskSet::State(TaskState::Scheduled) => self.scheduled.take_lowest(usize::MAX),
            TaskSet::State(TaskState::Retry) => self.retry.take_lowest(usize::MAX),
            TaskSet::State(TaskState::Archived) => self.archived.take_lowest(usize::MAX),
            TaskSet::State(TaskState::Completed) => self.completed.take_lowest(usize::MAX),
            // Refused by `validate_bulk` before the queue is touched.
            TaskSet::State(TaskState::Active | TaskState::Aggregating | TaskState::Waiting) => Vec::new(),
            TaskSet::Group(group) => {
                self.groups.remove(group.as_str());
                self.group_sets
                    .remove(group.as_str())
                    .map_or_else(Vec::new, |mut members| members.take_lowest(usize::MAX))
            }
        }
    }

    /// Makes the detached task `id` pending, after the tasks of its priority (the list's left
    /// end, Go's `LPUSH`, for the default), in `state`, without a pending time.
    fn make_pending(&mut self, id: String, state: TaskState) {
        let mut priority = asynq_core::TaskPriority::DEFAULT;
        if let Some(record) = self.tasks.get_mut(&id) {
            record.state = state;
            record.pending_since = None;
            priority = record.priority;
        }
        self.pending.push(id, priority);
    }

    /// Puts the detached task `id` in the archive at `now` (the trim is left to the caller).
    fn put_in_archive(&mut self, id: &str, state: TaskState, now: SystemTime) {
        self.archived.insert(id, unix_secs(now));
        self.rewrite_state(id, state);
    }

    /// Deletes the record of the detached task `id` and releases the uniqueness lock it holds.
    /// The key comes from the message, which carries it for grouped unique tasks too.
    fn forget(&mut self, id: &str) {
        if let Some(record) = self.tasks.remove(id) {
            self.release_lock(record.msg.unique_key.as_deref(), id);
        }
    }

    /// Stores `request` in place of the task `replace` names (`enqueue_replacing.lua`): for a
    /// debounce, the task the key's mark names if it is still scheduled and has not started
    /// (deleted, and the new task stored under its own ID); for [`Replace::Waiting`], the
    /// pending or scheduled task with the request's ID, which keeps the ID, unless it has
    /// started (refused). `request` has passed
    /// [`EnqueueRequest::check_replacement`] and has no `replace` of its own left.
    pub(crate) fn enqueue_replacing(
        &mut self,
        request: EnqueueRequest,
        replace: Replace,
        now: SystemTime,
    ) -> Result<()> {
        let (queue, id) = (request.message.queue.clone(), request.message.id.clone());
        match replace {
            Replace::Debounced(debounce) => {
                let key = debounce.key();
                let old = self.debounce_marks.get(key).filter(|old| self.debounced_here(old, key)).cloned();
                match old {
                    Some(old) if old == id.as_str() => self.take_out_waiting(&old, TaskState::Scheduled)?,
                    _ if self.holds_id(id.as_str()) => return Err(Error::TaskIdConflict { queue, id }),
                    Some(old) => {
                        self.emit_stored(now, EventKind::Deleted, &old);
                        self.take_out_waiting(&old, TaskState::Scheduled)?;
                    }
                    None => {}
                }
                self.enqueue(request, now)?;
                if let Some(record) = self.tasks.get_mut(id.as_str()) {
                    record.debounce = Some(key.to_owned());
                }
                self.debounce_marks.insert(key.to_owned(), id.to_string());
                // A mark counts only while its task is scheduled with its key; the others go when
                // the map has doubled since they last went, so each enqueue costs O(1) amortized.
                if self.debounce_marks.len() >= self.debounce_sweep_at {
                    let marks = std::mem::take(&mut self.debounce_marks);
                    self.debounce_marks = marks.into_iter().filter(|(key, id)| self.debounced_here(id, key)).collect();
                    self.debounce_sweep_at = (self.debounce_marks.len() * 2).max(64);
                }
            }
            Replace::Waiting => {
                let state = self.state_of(&queue, &id)?;
                if !matches!(state, TaskState::Pending | TaskState::Scheduled) {
                    return Err(refused(format!(
                        "task {id} is neither pending nor scheduled: only a waiting task can be replaced"
                    )));
                }
                if self.tasks.get(id.as_str()).is_some_and(TaskRecord::has_started) {
                    return Err(asynq_core::steps::started_task_refused(&id));
                }
                self.take_out_waiting(id.as_str(), state)?;
                self.enqueue(request, now)?;
            }
            _ => return Err(Error::Unsupported { capability: "this kind of replacement" }),
        }
        Ok(())
    }

    /// Whether task `id` is scheduled, debounced with `key`, and has not started.
    fn debounced_here(&self, id: &str, key: &str) -> bool {
        self.tasks.get(id).is_some_and(|record| {
            record.state == TaskState::Scheduled && record.debounce.as_deref() == Some(key) && !record.has_started()
        })
    }

    /// Takes waiting task `id`, in `state`, out of its container and forgets it (releasing its
    /// lock), for a replacement to take its place.
    fn take_out_waiting(&mut self, id: &str, state: TaskState) -> Result<()> {
        self.detach(id, state)?;
        self.forget(id);
        Ok(())
    }

    /// Makes task `id` pending now (script `runTask`, 6.9).
    pub(crate) fn run_task(&mut self, queue: &QueueName, id: &TaskId) -> Result<()> {
        let state = self.state_of(queue, id)?;
        match state {
            TaskState::Active => return Err(refused("task is already running")),
            TaskState::Pending => return Err(refused("task is already in pending state")),
            _ => {}
        }
        let next = state_after(Some(state), Event::Run)?;
        self.detach(id, state)?;
        self.make_pending(id.to_string(), next);
        Ok(())
    }

    /// Archives task `id` at `now`, then trims the archive (script `archiveTask`, 6.10). The
    /// message is left as it is.
    /// Returns how many archived tasks the trim deleted: (by age, by size).
    pub(crate) fn archive_task(&mut self, queue: &QueueName, id: &TaskId, now: SystemTime) -> Result<(usize, usize)> {
        let state = self.state_of(queue, id)?;
        match state {
            TaskState::Active => {
                return Err(refused("cannot archive task in active state. use CancelProcessing instead."));
            }
            TaskState::Archived => return Err(refused(format!("task is already archived: id={id}, queue={queue}"))),
            _ => {}
        }
        let next = state_after(Some(state), Event::Archive)?;
        self.detach(id, state)?;
        self.put_in_archive(id, next, now);
        self.emit_stored(now, EventKind::Archived, id.as_str());
        Ok(self.trim_archive(now))
    }

    /// Deletes task `id` and releases its uniqueness lock (script `deleteTask`, 6.11).
    pub(crate) fn delete_task(&mut self, queue: &QueueName, id: &TaskId, now: SystemTime) -> Result<()> {
        let state = self.state_of(queue, id)?;
        if state == TaskState::Active {
            return Err(refused("cannot delete task in active state. use CancelProcessing instead."));
        }
        check_deletes(Some(state), Event::Delete)?;
        self.detach(id, state)?;
        self.emit_stored(now, EventKind::Deleted, id.as_str());
        self.forget(id);
        Ok(())
    }

    /// Makes every task of `set` pending; returns how many (scripts `runAll` and
    /// `runAllAggregating`, 6.9). `set` must have passed `validate_bulk`.
    pub(crate) fn run_all(&mut self, set: &TaskSet) -> usize {
        let mut moved = 0;
        for id in self.take_set(set) {
            let Some(record) = self.tasks.get(&id) else { continue };
            let Ok(next) = state_after(Some(record.state), Event::Run) else { continue };
            self.make_pending(id, next);
            moved += 1;
        }
        moved
    }

    /// Archives every task of `set` at `now`, then trims the archive once; returns how many
    /// (scripts `archiveAll`, `archiveAllPending` and `archiveAllAggregating`, 6.10). `set`
    /// must have passed `validate_bulk`. The report counts what the trim deleted.
    pub(crate) fn archive_all(&mut self, set: &TaskSet, now: SystemTime) -> ArchiveReport {
        let mut archived = 0;
        for id in self.take_set(set) {
            let Some(record) = self.tasks.get(&id) else { continue };
            let Ok(next) = state_after(Some(record.state), Event::Archive) else { continue };
            self.put_in_archive(&id, next, now);
            self.emit_stored(now, EventKind::Archived, &id);
            archived += 1;
        }
        let (by_age, by_size) = self.trim_archive(now);
        ArchiveReport::new(archived, by_age, by_size)
    }

    /// Deletes every task of `set`, releasing the uniqueness locks they hold; returns how many
    /// (scripts `deleteAll`, `deleteAllPending` and `deleteAllAggregating`, 6.11). `set` must
    /// have passed `validate_bulk`.
    pub(crate) fn delete_all(&mut self, set: &TaskSet, now: SystemTime) -> usize {
        let mut deleted = 0;
        for id in self.take_set(set) {
            let Some(record) = self.tasks.get(&id) else { continue };
            if check_deletes(Some(record.state), Event::Delete).is_ok() {
                self.emit_stored(now, EventKind::Deleted, &id);
                self.forget(&id);
                deleted += 1;
            }
        }
        deleted
    }

    /// Replaces the payload of the scheduled task `id` and returns the task as it now is
    /// (script `updateTaskPayload`, 6.12), unless the task has started (refused). Everything
    /// else, the uniqueness-lock key in the message included, stays.
    pub(crate) fn update_payload(
        &mut self,
        queue: &QueueName,
        id: &TaskId,
        payload: Bytes,
        now: SystemTime,
    ) -> Result<TaskInfo> {
        let record = self.tasks.get_mut(id.as_str()).ok_or_else(|| not_found(queue, id))?;
        if record.state != TaskState::Scheduled {
            return Err(refused("cannot update task that is not in scheduled state."));
        }
        if record.has_started() {
            return Err(asynq_core::steps::started_task_refused(id));
        }
        record.msg.payload = payload;
        self.task_info(id, now).ok_or_else(|| not_found(queue, id))
    }

    /// Empties the queue's task containers so that it can be forgotten (scripts `removeQueue`
    /// and `removeQueueForce`, 6.13); returns the IDs of the tasks deleted.
    ///
    /// Without `force`, refuses with `QueueNotEmpty` while pending, active, scheduled, retry or
    /// archived tasks exist. With it, refuses while tasks are active, else deletes the others.
    /// Completed and aggregating tasks, aggregation sets, counters and the paused mark stay, as
    /// in Go; unlike Go, the deleted tasks' uniqueness locks are released.
    pub(crate) fn empty_for_removal(&mut self, queue: &QueueName, force: bool) -> Result<Vec<String>> {
        if force {
            if !self.active.is_empty() {
                return Err(refused("cannot remove queue with active tasks"));
            }
        } else if !(self.pending.is_empty()
            && self.active.is_empty()
            && self.scheduled.len() == 0
            && self.retry.len() == 0
            && self.archived.len() == 0)
        {
            return Err(Error::QueueNotEmpty { queue: queue.clone() });
        }
        let mut ids: Vec<String> = self.pending.take_all();
        ids.extend(self.scheduled.take_lowest(usize::MAX));
        ids.extend(self.retry.take_lowest(usize::MAX));
        ids.extend(self.archived.take_lowest(usize::MAX));
        self.lease.take_lowest(usize::MAX);
        for id in &ids {
            self.forget(id);
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::time::from_unix_secs;
    use asynq_core::{GroupName, Task, TaskOptions, resolve_enqueue};

    fn at(secs: i64) -> SystemTime {
        from_unix_secs(secs)
    }

    fn add(queue: &mut Queue, id: &str, options: TaskOptions) {
        let task = Task::new("t", id.to_owned()).with_options(options.task_id(id));
        queue.enqueue(resolve_enqueue(&task, &TaskOptions::new(), at(100), String::new).unwrap(), at(100)).unwrap();
    }

    #[test]
    fn a_task_in_an_aggregation_set_is_refused_and_left_there() {
        let mut queue = Queue::default();
        add(&mut queue, "a", TaskOptions::new().group("g"));
        let limits = asynq_core::broker::AggregationLimits {
            grace_period: std::time::Duration::from_secs(1),
            max_delay: None,
            max_size: Some(1),
        };
        let set_id = queue.aggregation_check(&GroupName::from_static("g"), &limits, at(100)).unwrap();

        for result in [
            queue.run_task(&QueueName::from_static("q"), &TaskId::from_static("a")),
            queue.archive_task(&QueueName::from_static("q"), &TaskId::from_static("a"), at(100)).map(|_| ()),
            queue.delete_task(&QueueName::from_static("q"), &TaskId::from_static("a"), SystemTime::UNIX_EPOCH),
        ] {
            assert!(matches!(result, Err(Error::FailedPrecondition(ref m)) if m.contains("aggregat")), "{result:?}");
        }
        assert_eq!(queue.tasks["a"].state, TaskState::Aggregating);
        assert_eq!(queue.read_aggregation_set("g", &set_id).unwrap().messages.len(), 1);
    }

    #[test]
    fn memory_usage_counts_tasks_and_their_results_and_is_zero_without_tasks() {
        let mut queue = Queue::default();
        assert_eq!(queue.memory_usage(), 0);
        add(&mut queue, "a", TaskOptions::new());
        let one = queue.memory_usage();
        assert!(one > 0);
        assert!(queue.write_result("a", Bytes::from_static(b"a result")));
        assert_eq!(queue.memory_usage(), one + 8);
        add(&mut queue, "b", TaskOptions::new().group("g"));
        assert!(queue.memory_usage() > one + 8);
        queue.delete_all(&TaskSet::State(TaskState::Pending), SystemTime::UNIX_EPOCH);
        queue.delete_all(&TaskSet::Group(GroupName::from_static("g")), SystemTime::UNIX_EPOCH);
        assert_eq!(queue.memory_usage(), 0);
    }

    #[test]
    fn run_clears_a_pending_time_left_from_before_the_archive() {
        let mut queue = Queue::default();
        add(&mut queue, "a", TaskOptions::new());
        queue.archive_task(&QueueName::from_static("q"), &TaskId::from_static("a"), at(100)).unwrap();
        queue.run_task(&QueueName::from_static("q"), &TaskId::from_static("a")).unwrap();
        assert_eq!(queue.tasks["a"].pending_since, None);
        assert_eq!(queue.info(&QueueName::from_static("q"), at(200)).latency, std::time::Duration::ZERO);
    }
}
