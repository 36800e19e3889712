//! The tasks this server is running, shared by the processor (which adds and removes them), the
//! heartbeater (which reports them and extends their leases) and cancellation.

use asynq_core::{Lease, TaskMessage, WorkerInfo};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;
use tokio_util::sync::CancellationToken;

/// One task this server holds: running, or taken ahead and waiting for a worker.
#[derive(Debug, Clone)]
pub(crate) struct ActiveTask {
    pub(crate) message: TaskMessage,
    /// When it started, or was taken ahead.
    pub(crate) started: SystemTime,
    pub(crate) deadline: SystemTime,
    pub(crate) lease: Lease,
    /// Fires the attempt's cancellation (the handler's [`TaskContext::cancelled`](crate::TaskContext::cancelled));
    /// fired before the attempt starts, the attempt ends as cancelled at once.
    pub(crate) cancel: CancellationToken,
    /// Taken ahead and not started: leased and cancellable, but not reported as a worker.
    pub(crate) waiting: bool,
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
        self.lock().insert(task.message.id.clone(), task);
    }

    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Cancels the attempt at task `id`; false when this server is not running it.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        self.lock().get(id).map(|task| task.cancel.cancel()).is_some()
    }

    /// How many are running (not waiting).
    pub(crate) fn len(&self) -> usize {
        self.lock().values().filter(|t| !t.waiting).count()
    }

    /// Every task held, waiting ones included: their leases all need extending.
    pub(crate) fn snapshot(&self) -> Vec<ActiveTask> {
        self.lock().values().cloned().collect()
    }

    /// The heartbeat's view of the running tasks.
    pub(crate) fn worker_infos(&self, host: &str, pid: u32, server_id: &str) -> Vec<WorkerInfo> {
        self.lock()
            .values()
            .filter(|t| !t.waiting)
            .map(|t| WorkerInfo {
                host: host.to_owned(),
                pid,
                server_id: server_id.to_owned(),
                task_id: t.message.id.clone(),
                task_type: t.message.type_name.clone(),
                task_payload: t.message.payload.clone(),
                queue: t.message.queue.clone(),
                started: t.started,
                deadline: t.deadline,
            })
            .collect()
    }
}
