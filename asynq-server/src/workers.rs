//! The tasks this server holds, shared by the processor (which adds and removes them), the
//! heartbeater (which reports the running ones and extends every lease) and cancellation.

use asynq_core::{Lease, StoredTask, WorkerInfo};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;
use tokio_util::sync::CancellationToken;

/// Where a held task is in its attempt. Its start is recorded in every phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Taken ahead, waiting for a worker.
    Waiting,
    /// Its handler runs.
    Running,
    /// Its handler returned; its outcome is being written.
    Settling,
}

/// One task this server holds: running, taken ahead and waiting for a worker, or finished
/// with its outcome not yet written.
#[derive(Debug, Clone)]
pub(crate) struct ActiveTask {
    pub(crate) message: StoredTask,
    /// When it started, or was taken ahead.
    pub(crate) started: SystemTime,
    pub(crate) deadline: SystemTime,
    pub(crate) lease: Lease,
    /// Fires the attempt's cancellation (the handler's [`TaskContext::cancelled`](crate::TaskContext::cancelled));
    /// fired before the attempt starts, the attempt ends as cancelled at once.
    pub(crate) cancel: CancellationToken,
    /// Only a [`Phase::Running`] task is reported as a worker; every phase holds a lease.
    pub(crate) phase: Phase,
}

/// The tasks one server holds, by task ID.
#[derive(Debug, Default)]
pub(crate) struct ActiveTasks {
    tasks: Mutex<HashMap<String, ActiveTask>>,
}

impl ActiveTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ActiveTask>> {
        self.tasks.lock().expect("active tasks lock poisoned")
    }

    pub(crate) fn insert(&self, task: ActiveTask) {
        self.lock().insert(task.message.id.to_string(), task);
    }

    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Marks task `id` as finished: it holds its lease until its outcome is written, but is no
    /// longer reported as a worker.
    pub(crate) fn settling(&self, id: &str) {
        if let Some(task) = self.lock().get_mut(id) {
            task.phase = Phase::Settling;
        }
    }

    /// Cancels the attempt at task `id`; false when this server is not running it.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        self.lock().get(id).map(|task| task.cancel.cancel()).is_some()
    }

    /// How many handlers are running: never more than the concurrency.
    pub(crate) fn len(&self) -> usize {
        self.lock().values().filter(|t| t.phase == Phase::Running).count()
    }

    /// Every task held, in any phase: their leases all need extending.
    pub(crate) fn snapshot(&self) -> Vec<ActiveTask> {
        self.lock().values().cloned().collect()
    }

    /// The heartbeat's view of the running tasks.
    pub(crate) fn worker_infos(&self, host: &str, pid: u32, server_id: &str) -> Vec<WorkerInfo> {
        self.lock()
            .values()
            .filter(|t| t.phase == Phase::Running)
            .map(|t| WorkerInfo {
                host: host.to_owned(),
                pid,
                server_id: server_id.to_owned(),
                task_id: t.message.id.to_string(),
                task_type: t.message.type_name.clone(),
                task_payload: t.message.payload.clone(),
                queue: t.message.queue.to_string(),
                started: t.started,
                deadline: t.deadline,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{Clock, QueueName, SystemClock, TaskId};
    use std::sync::Arc;
    use std::time::Duration;

    fn hold(active: &ActiveTasks, id: &str, phase: Phase) {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let now = clock.now();
        active.insert(ActiveTask {
            message: StoredTask::new(TaskId::new(id).unwrap(), QueueName::from_static("q"), "t"),
            started: now,
            deadline: now + Duration::from_secs(60),
            lease: Lease::new(now + Duration::from_secs(30), clock),
            cancel: CancellationToken::new(),
            phase,
        });
    }

    #[test]
    fn only_running_handlers_are_workers_but_every_held_task_keeps_its_lease() {
        let active = ActiveTasks::default();
        hold(&active, "running", Phase::Running);
        hold(&active, "finished", Phase::Running);
        hold(&active, "ahead", Phase::Waiting);
        active.settling("finished");

        assert_eq!(active.len(), 1);
        let workers = active.worker_infos("host", 1, "server");
        assert_eq!(workers.iter().map(|w| w.task_id.as_str()).collect::<Vec<_>>(), ["running"]);
        let mut held: Vec<_> = active.snapshot().into_iter().map(|t| (t.message.id.into_string(), t.phase)).collect();
        held.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            held,
            [
                ("ahead".to_owned(), Phase::Waiting),
                ("finished".to_owned(), Phase::Settling),
                ("running".to_owned(), Phase::Running)
            ]
        );
    }
}
