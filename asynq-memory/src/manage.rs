//! [`Manage`] for the memory broker: operator actions (run, archive and delete tasks, update
//! payloads, remove queues). Each call checks its arguments, then does its work on one known
//! queue under the broker's lock, so it is atomic as the Redis scripts are; the queue-level
//! moves are in `queue/manage.rs`.
//!
//! Afterwards a call that made tasks pending wakes idle dequeuers, and one that archived or
//! deleted tasks wakes waits on task outcomes.

use crate::queue::Queue;
use crate::{MemoryBroker, State};
use async_trait::async_trait;
use asynq_core::broker::Manage;
use asynq_core::workflow::TaskRef;
use asynq_core::{
    ArchiveLimits, ArchiveOutlook, ArchiveReport, BulkAction, BulkProgress, Error, OnProgress, QueueName, Result,
    TaskId, TaskInfo, TaskSet, validate_bulk,
};
use bytes::Bytes;

impl State {
    /// The queue `name` for an operator action, which fails for a queue not known (never
    /// enqueued to, or removed).
    fn known_queue_mut(&mut self, name: &QueueName) -> Result<&mut Queue> {
        if !self.known.contains(name) {
            return Err(Error::QueueNotFound { queue: name.clone() });
        }
        self.queues.get_mut(name).ok_or_else(|| Error::QueueNotFound { queue: name.clone() })
    }
}

impl MemoryBroker {
    /// Runs `action` on the known queue `queue` under the lock.
    fn with_queue<T>(&self, queue: &QueueName, action: impl FnOnce(&mut Queue) -> Result<T>) -> Result<T> {
        action(self.state().known_queue_mut(queue)?)
    }

    /// Wakes waits on task outcomes after tasks were archived or deleted.
    fn tasks_left(&self) {
        self.inner.signals.task_finished();
    }
}

#[async_trait]
impl Manage for MemoryBroker {
    async fn run_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.with_queue(queue, |q| q.run_task(queue, id))?;
        self.wake_waiters();
        Ok(())
    }

    async fn archive_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        let now = self.now();
        self.with_queue(queue, |q| q.archive_task(queue, id, now))?;
        self.tasks_left();
        Ok(())
    }

    fn archive_limits(&self) -> ArchiveLimits {
        self.state().archive_limits
    }

    async fn archive_outlook(&self, queue: &QueueName, adding: usize) -> Result<ArchiveOutlook> {
        let now = self.now();
        self.with_queue(queue, |q| Ok(q.archive_outlook(adding, now)))
    }

    async fn archive_reporting(
        &self,
        queue: &QueueName,
        set: &TaskSet,
        progress: OnProgress<'_>,
    ) -> Result<ArchiveReport> {
        validate_bulk(BulkAction::Archive, set)?;
        let now = self.now();
        let report = self.with_queue(queue, |q| Ok(q.archive_all(set, now)))?;
        if report.archived > 0 {
            self.tasks_left();
        }
        progress(BulkProgress::new(report.archived, report.archived));
        Ok(report)
    }

    async fn archive_task_reporting(&self, queue: &QueueName, id: &TaskId) -> Result<ArchiveReport> {
        let now = self.now();
        let (by_age, by_size) = self.with_queue(queue, |q| q.archive_task(queue, id, now))?;
        self.tasks_left();
        Ok(ArchiveReport::new(1, by_age, by_size))
    }

    async fn delete_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        let now = self.now();
        self.with_queue(queue, |q| q.delete_task(queue, id, now))?;
        self.tasks_left();
        Ok(())
    }

    async fn run_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        validate_bulk(BulkAction::Run, set)?;
        let moved = self.with_queue(queue, |q| Ok(q.run_all(set)))?;
        if moved > 0 {
            self.wake_waiters();
        }
        Ok(moved)
    }

    async fn archive_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        validate_bulk(BulkAction::Archive, set)?;
        let now = self.now();
        let archived = self.with_queue(queue, |q| Ok(q.archive_all(set, now)))?.archived;
        if archived > 0 {
            self.tasks_left();
        }
        Ok(archived)
    }

    async fn delete_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        validate_bulk(BulkAction::Delete, set)?;
        let now = self.now();
        let deleted = self.with_queue(queue, |q| Ok(q.delete_all(set, now)))?;
        if deleted > 0 {
            self.tasks_left();
        }
        Ok(deleted)
    }

    async fn update_task_payload(&self, queue: &QueueName, id: &TaskId, payload: Bytes) -> Result<TaskInfo> {
        let now = self.now();
        self.with_queue(queue, |q| q.update_payload(queue, id, payload, now))
    }

    /// Forgets the queue: it leaves [`Inspect::queues`](asynq_core::broker::Inspect::queues)
    /// and every inspector call on it fails with [`Error::QueueNotFound`] until a task is
    /// enqueued to it again, when its surviving completed and grouped tasks, counters and
    /// paused mark show again (as on Redis, where their keys stay).
    ///
    /// A deleted task that workflow tasks wait for vanished: each task waiting for it is
    /// archived unrun, naming it
    /// ([`parent_vanished_error`](asynq_core::workflow::parent_vanished_error)), whatever its
    /// policy, and that failure flows on down the workflow, as the Redis broker's relay does
    /// after a forced removal (ours or Go's).
    async fn delete_queue(&self, queue: &QueueName, force: bool) -> Result<()> {
        let now = self.now();
        let (deleted, changed) = {
            let mut state = self.state();
            let mut deleted = state.known_queue_mut(queue)?.empty_for_removal(queue, force)?;
            state.known.remove(queue);
            // In ID order, as the Redis broker's sweep: a task waiting for two of them is
            // archived naming the first.
            deleted.sort_unstable();
            let parents = deleted
                .iter()
                .map(|id| TaskRef { queue: queue.clone(), id: TaskId::new(id.as_str()).expect("stored IDs are valid") })
                .collect();
            let changed = state.pass_vanished(parents, now)?;
            (deleted.len(), changed)
        };
        if deleted > 0 {
            self.tasks_left();
        }
        if changed {
            self.wake_waiters();
            self.inner.signals.task_finished();
        }
        Ok(())
    }
}
