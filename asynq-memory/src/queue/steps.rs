//! The records of durable steps, kept in the task's record as Redis keeps them in its hash, and
//! tasks their handlers park (durable sleeps and signal waits).

use super::{Queue, state_after};
use asynq_core::state::Event;
use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord, sort_step_records};
use asynq_core::time::unix_secs;
use asynq_core::{QueueName, TaskId, TaskInfo, TaskState};
use bytes::Bytes;
use std::time::SystemTime;

impl Queue {
    /// The step records of task `id`, in listing order; empty for an unknown task.
    pub(crate) fn step_records(&self, id: &str) -> Vec<StepRecord> {
        let mut records = self.tasks.get(id).map(|record| record.steps.clone()).unwrap_or_default();
        sort_step_records(&mut records);
        records
    }

    /// Records `step` for the active task `id`, replacing one of the same name; false (nothing
    /// written) if there is no such active task.
    pub(crate) fn record_step(&mut self, id: &str, step: &StepRecord) -> bool {
        let Some(record) = self.tasks.get_mut(id).filter(|record| record.state == TaskState::Active) else {
            return false;
        };
        record.steps.retain(|kept| kept.name() != step.name());
        record.steps.push(step.clone());
        true
    }

    /// `info` of task `id` with its step records, and why it is parked while it is scheduled.
    pub(crate) fn with_durable_steps(&self, id: &str, mut info: TaskInfo) -> TaskInfo {
        info.steps = self.step_records(id);
        info.parked = self
            .tasks
            .get(id)
            .filter(|record| record.state == TaskState::Scheduled)
            .and_then(|record| record.parked.clone());
        info
    }

    /// Parks the active task `id` (see `Steps::park`): scheduled until `parked.until` (at
    /// `now` when it waits for a signal that came already), charged nothing, with `step`
    /// recorded. False (nothing written) if it is not active.
    pub(crate) fn park(&mut self, id: &str, parked: &Parked, step: Option<&StepRecord>, now: SystemTime) -> bool {
        let Some(position) = self.active.iter().rposition(|active| active == id) else { return false };
        if !self.lease.contains(id) {
            return false;
        }
        let Some(record) = self.tasks.get_mut(id) else { return false };
        let Ok(state) = state_after(Some(record.state), Event::Park) else { return false };
        let signalled = match &parked.reason {
            asynq_core::steps::ParkReason::Signal(name) => record.signals.contains_key(name),
            _ => false,
        };
        record.state = state;
        record.parked = Some(parked.clone());
        if let Some(step) = step {
            record.steps.retain(|kept| kept.name() != step.name());
            record.steps.push(step.clone());
        }
        self.active.remove(position);
        self.lease.remove(id);
        self.unstarted.remove(id);
        let due = if signalled { now } else { parked.until };
        self.scheduled.insert(id, unix_secs(due));
        true
    }

    /// Keeps signal `name` for task `id` and, when the task is parked waiting for it, makes it
    /// pending (see `Steps::signal`). `None` when there is no such task; otherwise whether it
    /// woke the task.
    pub(crate) fn signal(&mut self, queue: &QueueName, id: &TaskId, name: &StepName, value: Bytes) -> Option<bool> {
        if let Some(signals) = self.waiting_signals(id.as_str()) {
            // A workflow task waiting for its parents keeps it for when it runs.
            signals.insert(name.clone(), value);
            return Some(false);
        }
        let record = self.tasks.get_mut(id.as_str())?;
        record.signals.insert(name.clone(), value);
        let waits = record.state == TaskState::Scheduled
            && matches!(&record.parked, Some(Parked { reason: ParkReason::Signal(waited), .. }) if waited == name);
        Some(waits && self.run_task(queue, id).is_ok())
    }

    /// The value of signal `name` sent to task `id`.
    pub(crate) fn signal_value(&self, id: &str, name: &StepName) -> Option<Bytes> {
        match self.tasks.get(id) {
            Some(record) => record.signals.get(name).cloned(),
            None => self.waiting_signal_value(id, name),
        }
    }
}
