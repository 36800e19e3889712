//! The records of durable steps, kept in the task's record as Redis keeps them in its hash.

use super::Queue;
use asynq_core::TaskState;
use asynq_core::steps::{StepRecord, sort_step_records};

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
}
