//! The tasks this server holds, shared by the processor (which adds and removes them), the
//! heartbeater (which reports the running ones and extends every lease) and cancellation; and
//! the cancellation requests heard for tasks it did not hold then, so that taking such a task
//! later cancels it.

use asynq_core::{Lease, MAX_KEPT_CANCELS, StoredTask, WorkerInfo};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::SystemTime;
use tokio::sync::mpsc::UnboundedSender;
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

/// What the subscriber does about a cancellation request, told by the tasks' comings and goings.
#[derive(Debug)]
pub(crate) enum CancelEvent {
    /// A task was taken while a request for it was known: the subscriber settles the request
    /// with the broker, and fires `cancel` if this server settled it (another server may have
    /// settled it, cancelling an earlier attempt).
    Claim { id: String, cancel: CancellationToken },
    /// The attempt of a task a request cancelled ended: the request is settled.
    Settle(String),
    /// A task whose cancellation was requested left this server without an attempt ending (it
    /// was given back at shutdown, or its lease was lost): the request is made anew, for the
    /// server that takes the task next.
    Renew(String),
}

/// The cancellation requests one server knows of.
#[derive(Debug, Default)]
struct Requests {
    /// Heard for tasks not held then, with their expiry; at most [`MAX_KEPT_CANCELS`].
    remembered: HashMap<String, SystemTime>,
    /// Held tasks whose token a request fired, until their attempt ends.
    fired: HashSet<String>,
}

/// The tasks one server holds, by task ID, and the cancellation requests it knows of.
#[derive(Debug, Default)]
pub(crate) struct ActiveTasks {
    tasks: Mutex<HashMap<String, ActiveTask>>,
    requests: Mutex<Requests>,
    /// Where [`CancelEvent`]s go; set by the subscriber, if any.
    events: OnceLock<UnboundedSender<CancelEvent>>,
}

impl ActiveTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ActiveTask>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, event: CancelEvent) {
        if let Some(events) = self.events.get() {
            // The subscriber stopped: the server is going away.
            let _ = events.send(event);
        }
    }

    /// Holds `task`. If a cancellation request for it is known and not expired, the task is
    /// claimed ([`CancelEvent::Claim`]).
    pub(crate) fn insert(&self, task: ActiveTask) {
        let (id, cancel, now) = (task.message.id.to_string(), task.cancel.clone(), task.started);
        self.lock().insert(id.clone(), task);
        // After the insert, so that a request recorded meanwhile is seen either here or by
        // `request`'s look at the tasks (or both; cancelling twice is harmless).
        let requested = self.requests().remembered.remove(&id).is_some_and(|expiry| expiry > now);
        if requested {
            self.send(CancelEvent::Claim { id, cancel });
        }
    }

    /// Sends the [`CancelEvent`]s to `events`.
    pub(crate) fn send_events_to(&self, events: UnboundedSender<CancelEvent>) {
        let _ = self.events.set(events);
    }

    /// Handles a request to cancel task `id`, kept until `expiry`: fires the task's token if
    /// this server holds it, and returns true (the request is settled when the attempt ends,
    /// [`ActiveTasks::settling`]); else remembers the request until `expiry`, so that taking the
    /// task before then claims it ([`ActiveTasks::insert`]). Past [`MAX_KEPT_CANCELS`]
    /// remembered requests, expired ones go, then those closest to expiry.
    pub(crate) fn request(&self, id: &str, expiry: SystemTime, now: SystemTime) -> bool {
        {
            let mut requests = self.requests();
            let remembered = &mut requests.remembered;
            remembered.insert(id.to_owned(), expiry);
            if remembered.len() > MAX_KEPT_CANCELS {
                remembered.retain(|_, e| *e > now);
            }
            if remembered.len() > MAX_KEPT_CANCELS {
                let mut by_expiry: Vec<(SystemTime, String)> =
                    remembered.iter().map(|(id, e)| (*e, id.clone())).collect();
                by_expiry.sort();
                for (_, id) in by_expiry.into_iter().take(remembered.len() - MAX_KEPT_CANCELS) {
                    remembered.remove(&id);
                }
            }
        }
        self.fire(id)
    }

    /// Fires the token of held task `id` on a request, which is settled when its attempt ends;
    /// false when this server does not hold it, or holds it settling: that attempt has ended and
    /// its outcome stands, and a request still remembered claims the task if it comes back.
    pub(crate) fn fire(&self, id: &str) -> bool {
        let tasks = self.lock();
        let Some(task) = tasks.get(id).filter(|task| task.phase != Phase::Settling) else { return false };
        let mut requests = self.requests();
        requests.remembered.remove(id);
        requests.fired.insert(id.to_owned());
        task.cancel.cancel();
        true
    }

    /// Lets task `id` go. A task whose cancellation was requested and whose attempt did not end
    /// ([`ActiveTasks::settling`]) renews the request ([`CancelEvent::Renew`]).
    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
        if self.requests().fired.remove(id) {
            self.send(CancelEvent::Renew(id.to_owned()));
        }
    }

    /// Marks task `id` as finished: it holds its lease until its outcome is written, but is no
    /// longer reported as a worker. `ended` says whether its attempt ended (the handler returned,
    /// failed or was cancelled), rather than being abandoned at shutdown or losing its lease: a
    /// request that cancelled an attempt that ended is settled ([`CancelEvent::Settle`]), one
    /// whose attempt did not is renewed ([`CancelEvent::Renew`]).
    pub(crate) fn settling(&self, id: &str, ended: bool) {
        if let Some(task) = self.lock().get_mut(id) {
            task.phase = Phase::Settling;
        }
        if self.requests().fired.remove(id) {
            self.send(if ended { CancelEvent::Settle(id.to_owned()) } else { CancelEvent::Renew(id.to_owned()) });
        }
    }

    /// How many requests for tasks not held it remembers.
    #[cfg(test)]
    pub(crate) fn requests_known(&self) -> usize {
        self.requests().remembered.len()
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
    fn at_most_max_kept_cancels_requests_are_remembered_the_soonest_to_expire_going_first() {
        let active = ActiveTasks::default();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for i in 0..=MAX_KEPT_CANCELS {
            let expiry = now + Duration::from_millis(i as u64 + 1);
            assert!(!active.request(&format!("t{i}"), expiry, now), "no such task is held");
        }
        assert_eq!(active.requests_known(), MAX_KEPT_CANCELS);
        assert!(!active.requests().remembered.contains_key("t0"), "the soonest to expire went");
    }

    #[test]
    fn only_running_handlers_are_workers_but_every_held_task_keeps_its_lease() {
        let active = ActiveTasks::default();
        hold(&active, "running", Phase::Running);
        hold(&active, "finished", Phase::Running);
        hold(&active, "ahead", Phase::Waiting);
        active.settling("finished", true);

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
