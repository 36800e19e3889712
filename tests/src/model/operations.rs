//! What each broker call does to the model's state: enqueueing (unique, debounced, replacing),
//! dequeueing and finishing, the server roles (forwarder, recoverer, janitor) and the
//! operator's actions on one task, on a whole state and on a queue.

use super::vocab::*;
use super::{Lock, Model, Task};
use asynq_core::{FREE_STALLS, TaskState};
use std::collections::BTreeSet;

impl Model {
    pub(super) fn enqueue(&mut self, task: &NewTask) -> Result<(), ErrorKind> {
        let NewTask { queue, id, payload, when, unique, retention, max_retry, priority } = *task;
        let now = self.now;
        // The queue is registered before the store is attempted, whatever its outcome.
        self.known.insert(queue.to_owned());
        let lock_key = (queue.to_owned(), payload.to_owned());
        if unique {
            let delay = match when {
                When::In(secs) | When::GroupIn(_, secs) => secs as i64,
                When::Now | When::Group(_) => 0,
            };
            if self.locks.get(&lock_key).is_some_and(|lock| lock.expires_at > now) {
                return Err(ErrorKind::DuplicateTask);
            }
            let expires_at = now + delay + UNIQUE_TTL.as_secs() as i64;
            self.locks.insert(lock_key.clone(), Lock { holder: id.to_owned(), expires_at });
        }
        let q = self.queue(queue);
        if q.tasks.contains_key(id) {
            // Go keeps the lock it just took.
            return Err(ErrorKind::TaskIdConflict);
        }
        let (state, group) = match when {
            When::Now => {
                q.pending.push_back(id.to_owned(), priority);
                (TaskState::Pending, None)
            }
            When::In(secs) | When::GroupIn(_, secs) => {
                q.scheduled.insert((now + secs as i64, id.to_owned()));
                (TaskState::Scheduled, None)
            }
            When::Group(group) => {
                q.groups.entry(group.to_owned()).or_default().insert((now, id.to_owned()));
                q.group_names.insert(group.to_owned());
                (TaskState::Aggregating, Some(group.to_owned()))
            }
        };
        let task = Task {
            state,
            retry: max_retry,
            retried: 0,
            retention: retention as i64,
            unique: unique.then_some(lock_key),
            group,
            stalls: 0,
            debounce: None,
            workflow: false,
            priority,
            steps: BTreeSet::new(),
            parked: None,
            signals: BTreeSet::new(),
        };
        q.tasks.insert(id.to_owned(), task);
        Ok(())
    }

    pub(super) fn debounce(&mut self, task: &NewTask, key: &str, window: u64) -> Result<(), ErrorKind> {
        let (queue, id) = (task.queue, task.id);
        self.known.insert(queue.to_owned());
        let mark = (queue.to_owned(), key.to_owned());
        let tasks = &self.queues.entry(queue.to_owned()).or_default().tasks;
        let old = self.debounce_marks.get(&mark).filter(|old| {
            tasks.get(old.as_str()).is_some_and(|t| {
                t.state == TaskState::Scheduled && t.debounce.as_deref() == Some(key) && !t.has_started()
            })
        });
        match old.cloned() {
            Some(old) if old == id => self.forget_waiting(queue, id),
            _ if self.queue(queue).tasks.contains_key(id) => return Err(ErrorKind::TaskIdConflict),
            Some(old) => self.forget_waiting(queue, &old),
            None => {}
        }
        self.store_waiting(task, Some(window), Some(key));
        self.debounce_marks.insert(mark, id.to_owned());
        Ok(())
    }

    pub(super) fn replace(&mut self, task: &NewTask) -> Result<(), ErrorKind> {
        // The queue is registered before the replacement is attempted, whatever its outcome.
        self.known.insert(task.queue.to_owned());
        let state = self.task_state(task.queue, task.id)?;
        if !matches!(state, TaskState::Pending | TaskState::Scheduled) {
            return Err(ErrorKind::FailedPrecondition);
        }
        if self.queue(task.queue).tasks.get(task.id).is_some_and(Task::has_started) {
            return Err(ErrorKind::FailedPrecondition);
        }
        self.forget_waiting(task.queue, task.id);
        let delay = match task.when {
            When::In(secs) => Some(secs),
            _ => None,
        };
        self.store_waiting(task, delay, None);
        Ok(())
    }

    /// Takes waiting task `id` out of its container and forgets it, releasing its lock.
    pub(super) fn forget_waiting(&mut self, queue: &str, id: &str) {
        self.queue(queue).detach(id);
        self.release(queue, id);
        self.queue(queue).tasks.remove(id);
    }

    /// Stores `task` as pending, or scheduled `delay` seconds ahead, holding no lock.
    pub(super) fn store_waiting(&mut self, task: &NewTask, delay: Option<u64>, debounce: Option<&str>) {
        let now = self.now;
        let q = self.queue(task.queue);
        let state = match delay {
            Some(secs) => {
                q.scheduled.insert((now + secs as i64, task.id.to_owned()));
                TaskState::Scheduled
            }
            None => {
                q.pending.push_back(task.id.to_owned(), task.priority);
                TaskState::Pending
            }
        };
        let stored = Task {
            state,
            retry: task.max_retry,
            retried: 0,
            retention: task.retention as i64,
            unique: None,
            group: None,
            stalls: 0,
            debounce: debounce.map(str::to_owned),
            workflow: false,
            priority: task.priority,
            steps: BTreeSet::new(),
            parked: None,
            signals: BTreeSet::new(),
        };
        q.tasks.insert(task.id.to_owned(), stored);
    }

    pub(super) fn dequeue(&mut self, queues: &[&'static str], max: usize) -> Vec<(String, String)> {
        let now = self.now;
        let mut taken = Vec::new();
        for name in queues {
            let q = self.queue(name);
            if q.paused {
                continue;
            }
            while taken.len() < max {
                let Some(id) = q.pending.pop_front() else { break };
                if let Some(task) = q.tasks.get_mut(&id) {
                    task.state = TaskState::Active;
                }
                q.active.push(id.clone());
                q.lease.insert(id.clone(), now + LEASE_SECS);
                q.started.remove(&id);
                taken.push((name.to_string(), id));
            }
        }
        hand(&mut self.handed, &taken);
        taken
    }

    pub(super) fn finish(&mut self, queue: &str, id: &str, with: FinishWith) -> Result<(), ErrorKind> {
        let now = self.now;
        let q = self.queue(queue);
        if !q.active.iter().any(|a| a == id) {
            return Err(ErrorKind::TaskNotFound);
        }
        q.active.retain(|a| a != id);
        q.lease.remove(id);
        let for_good = match with {
            FinishWith::Done | FinishWith::Complete => Some(true),
            FinishWith::Archive => Some(false),
            FinishWith::Retry { .. } | FinishWith::Requeue => None,
        };
        if let Some(ok) = for_good
            && q.tasks.get(id).is_some_and(|t| t.workflow)
        {
            self.settling.push((queue.to_owned(), id.to_owned(), ok));
        }
        let q = self.queue(queue);
        match with {
            FinishWith::Done => {
                q.count(now, false);
                self.release(queue, id);
                self.queue(queue).tasks.remove(id);
            }
            FinishWith::Complete => {
                q.count(now, false);
                let task = q.tasks.get_mut(id).expect("an active task exists");
                task.state = TaskState::Completed;
                let expires_at = now + task.retention;
                q.completed.insert((expires_at, id.to_owned()));
                self.release(queue, id);
            }
            FinishWith::Retry { in_secs, is_failure } => {
                if is_failure {
                    q.count(now, true);
                }
                let task = q.tasks.get_mut(id).expect("an active task exists");
                task.state = TaskState::Retry;
                if is_failure {
                    task.retried += 1;
                }
                q.retry.insert((now + in_secs as i64, id.to_owned()));
            }
            FinishWith::Archive => {
                q.count(now, true);
                q.archive(id, now);
            }
            FinishWith::Requeue => {
                let task = q.tasks.get_mut(id).expect("an active task exists");
                task.state = TaskState::Pending;
                let priority = task.priority;
                q.pending.push_front(id.to_owned(), priority);
            }
        }
        Ok(())
    }

    pub(super) fn forward(&mut self, queue: &str) -> usize {
        let now = self.now;
        let q = self.queue(queue);
        let mut moved = 0;
        for state in [TaskState::Scheduled, TaskState::Retry] {
            let due: Vec<(i64, String)> = q.zset(state).iter().filter(|(score, _)| *score <= now).cloned().collect();
            for entry in due {
                q.zset(state).remove(&entry);
                let id = entry.1;
                let task = q.tasks.get_mut(&id).expect("a due task exists");
                match task.group.clone() {
                    Some(group) => {
                        // Back into its group, without registering the group name (Go's forward).
                        task.state = TaskState::Aggregating;
                        q.groups.entry(group).or_default().insert((now, id));
                    }
                    None => {
                        task.state = TaskState::Pending;
                        let priority = task.priority;
                        q.pending.push_back(id, priority);
                    }
                }
                moved += 1;
            }
        }
        moved
    }

    pub(super) fn recover(&mut self, queues: &[&'static str]) -> Reply {
        let cutoff = self.now - LEASE_SECS;
        let mut expired = Vec::new();
        for name in queues {
            let q = self.queue(name);
            for (id, &expiry) in &q.lease {
                if expiry <= cutoff {
                    expired.push((name.to_string(), id.clone()));
                }
            }
        }
        expired.sort();
        expired.dedup();
        for (queue, id) in &expired {
            let q = &self.queues[queue];
            let task = &q.tasks[id];
            let stalled = q.started.contains(id) && task.stalls < FREE_STALLS;
            let with = if !q.started.contains(id) || stalled {
                FinishWith::Requeue
            } else if task.retried >= task.retry {
                FinishWith::Archive
            } else {
                FinishWith::Retry { in_secs: RECOVER_RETRY_DELAY.as_secs(), is_failure: true }
            };
            if let Err(kind) = self.finish(queue, id, with) {
                return Reply::Err(kind);
            }
            if stalled && let Some(task) = self.queue(queue).tasks.get_mut(id) {
                task.stalls += 1;
            }
        }
        hand(&mut self.handed, &expired);
        Reply::Tasks(expired)
    }

    pub(super) fn janitor(&mut self, queue: &str, batch: usize) -> usize {
        let now = self.now;
        let q = self.queue(queue);
        let expired: Vec<(i64, String)> =
            q.completed.iter().filter(|(score, _)| *score <= now).take(batch).cloned().collect();
        for entry in &expired {
            q.completed.remove(entry);
            q.tasks.remove(&entry.1);
        }
        expired.len()
    }

    pub(super) fn task_state(&self, queue: &str, id: &str) -> Result<TaskState, ErrorKind> {
        self.check_known(queue)?;
        self.queues.get(queue).and_then(|q| q.tasks.get(id)).map(|t| t.state).ok_or(ErrorKind::TaskNotFound)
    }

    pub(super) fn run_task(&mut self, queue: &str, id: &str) -> Result<(), ErrorKind> {
        match self.task_state(queue, id)? {
            TaskState::Active | TaskState::Pending | TaskState::Waiting => Err(ErrorKind::FailedPrecondition),
            _ => {
                let q = self.queue(queue);
                q.detach(id);
                let task = q.tasks.get_mut(id).expect("the task exists");
                task.state = TaskState::Pending;
                let priority = task.priority;
                q.pending.push_back(id.to_owned(), priority);
                Ok(())
            }
        }
    }

    pub(super) fn archive_task(&mut self, queue: &str, id: &str) -> Result<(), ErrorKind> {
        let now = self.now;
        match self.task_state(queue, id)? {
            TaskState::Active | TaskState::Archived | TaskState::Waiting => Err(ErrorKind::FailedPrecondition),
            _ => {
                let q = self.queue(queue);
                q.detach(id);
                q.archive(id, now);
                Ok(())
            }
        }
    }

    pub(super) fn delete_task(&mut self, queue: &str, id: &str) -> Result<(), ErrorKind> {
        match self.task_state(queue, id)? {
            TaskState::Active | TaskState::Waiting => Err(ErrorKind::FailedPrecondition),
            _ => {
                self.queue(queue).detach(id);
                self.release(queue, id);
                self.queue(queue).tasks.remove(id);
                Ok(())
            }
        }
    }

    /// The IDs of `set`, taken out of their container, in container order. Refuses a state the
    /// action does not apply to (`allowed`) before looking at the queue, as `validate_bulk` does.
    pub(super) fn take_set(&mut self, queue: &str, set: Set, allowed: &[TaskState]) -> Result<Vec<String>, ErrorKind> {
        if let Set::State(state) = set
            && !allowed.contains(&state)
        {
            return Err(ErrorKind::InvalidArgument);
        }
        self.check_known(queue)?;
        let q = self.queue(queue);
        let ids = match set {
            Set::State(TaskState::Pending) => q.pending.take_all(),
            Set::State(state) => std::mem::take(q.zset(state)).into_iter().map(|(_, id)| id).collect(),
            Set::Group(group) => {
                q.group_names.remove(group);
                q.groups.remove(group).unwrap_or_default().into_iter().map(|(_, id)| id).collect()
            }
        };
        Ok(ids)
    }

    pub(super) fn run_all(&mut self, queue: &str, set: Set) -> Result<usize, ErrorKind> {
        use TaskState::*;
        let ids = self.take_set(queue, set, &[Scheduled, Retry, Archived])?;
        let q = self.queue(queue);
        for id in &ids {
            let task = q.tasks.get_mut(id).expect("a listed task exists");
            task.state = Pending;
            let priority = task.priority;
            q.pending.push_back(id.clone(), priority);
        }
        Ok(ids.len())
    }

    pub(super) fn archive_all(&mut self, queue: &str, set: Set) -> Result<usize, ErrorKind> {
        use TaskState::*;
        let now = self.now;
        let ids = self.take_set(queue, set, &[Pending, Scheduled, Retry])?;
        let q = self.queue(queue);
        for id in &ids {
            q.archive(id, now);
        }
        // As Go's archiveAll scripts do, the archive is trimmed even when nothing was archived.
        q.trim_archive(now);
        Ok(ids.len())
    }

    pub(super) fn delete_all(&mut self, queue: &str, set: Set) -> Result<usize, ErrorKind> {
        use TaskState::*;
        let ids = self.take_set(queue, set, &[Pending, Scheduled, Retry, Archived, Completed])?;
        for id in &ids {
            self.release(queue, id);
            self.queue(queue).tasks.remove(id);
        }
        Ok(ids.len())
    }

    pub(super) fn delete_queue(&mut self, queue: &str, force: bool) -> Result<(), ErrorKind> {
        self.check_known(queue)?;
        let q = self.queue(queue);
        let held = !q.pending.is_empty()
            || !q.active.is_empty()
            || !q.scheduled.is_empty()
            || !q.retry.is_empty()
            || !q.archived.is_empty();
        if held && !force {
            return Err(ErrorKind::QueueNotEmpty);
        }
        if !q.active.is_empty() {
            return Err(ErrorKind::FailedPrecondition);
        }
        let mut doomed: Vec<String> = q.pending.take_all();
        for state in [TaskState::Scheduled, TaskState::Retry, TaskState::Archived] {
            doomed.extend(std::mem::take(q.zset(state)).into_iter().map(|(_, id)| id));
        }
        let now = self.now;
        for id in doomed {
            // Unlike Go's, a forced removal releases the locks the deleted tasks hold.
            self.release(queue, &id);
            let q = self.queue(queue);
            q.tasks.remove(&id);
            // A task others wait for vanished: each still waiting for it is archived unrun,
            // whatever its policy, and its failure flows on.
            let mut failed = Vec::new();
            for child in q.open.remove(&id).unwrap_or_default() {
                if q.waiting.remove(&child).is_some() {
                    q.archive(&child, now);
                    failed.push((child, false));
                }
            }
            self.pass_on(queue, failed);
        }
        self.known.remove(queue);
        Ok(())
    }
}
