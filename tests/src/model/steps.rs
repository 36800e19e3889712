//! What durable steps do to the model's state: step records, parks and signals.

use super::Model;
use super::vocab::*;
use asynq_core::TaskState;

impl Model {
    /// Records step `step` of the active task `id` of `queue`.
    pub(super) fn record_step(&mut self, queue: &str, id: &str, step: &str) -> Result<(), ErrorKind> {
        match self.queue(queue).tasks.get_mut(id) {
            Some(task) if task.state == TaskState::Active => {
                task.steps.insert(step.to_owned());
                Ok(())
            }
            _ => Err(ErrorKind::TaskNotFound),
        }
    }

    /// Parks the active task `id` of `queue`: scheduled until `secs` from now, or now when it
    /// waits for a signal it was sent already; charged nothing, its lease given up, out of any
    /// group it was once in.
    pub(super) fn park(
        &mut self,
        queue: &str,
        id: &str,
        why: ParkFor,
        secs: u64,
        step: Option<&str>,
    ) -> Result<(), ErrorKind> {
        let now = self.now;
        let until = now + secs as i64;
        let q = self.queue(queue);
        if !q.active.iter().any(|a| a == id) {
            return Err(ErrorKind::TaskNotFound);
        }
        q.active.retain(|a| a != id);
        q.lease.remove(id);
        q.started.remove(id);
        let task = q.tasks.get_mut(id).expect("an active task exists");
        let signalled = matches!(why, ParkFor::Signal(name) if task.signals.contains(name));
        task.state = TaskState::Scheduled;
        task.parked = Some((why, until));
        task.group = None;
        if let Some(step) = step {
            task.steps.insert(step.to_owned());
        }
        q.scheduled.insert((if signalled { now } else { until }, id.to_owned()));
        Ok(())
    }

    /// Keeps signal `name` with task `id` of `queue`; returns whether it woke the task (parked
    /// waiting for it, now pending as an operator's run makes it).
    pub(super) fn signal(&mut self, queue: &str, id: &str, name: &str) -> Result<bool, ErrorKind> {
        let q = self.queue(queue);
        let Some(task) = q.tasks.get_mut(id) else {
            return Err(ErrorKind::TaskNotFound);
        };
        task.signals.insert(name.to_owned());
        let waits = task.state == TaskState::Scheduled
            && matches!(task.parked, Some((ParkFor::Signal(waited), _)) if waited == name);
        if waits {
            self.run_task(queue, id)?;
        }
        Ok(waits)
    }
}
