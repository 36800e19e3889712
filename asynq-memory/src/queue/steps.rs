//! The records of durable steps, kept in the task's record as Redis keeps them in its hash, and
//! tasks their handlers park (durable sleeps and signal waits).

use super::{Queue, state_after};
use asynq_core::events::EventKind;
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

    /// Forgets why the active task `id` was parked: an attempt reads its records at its first
    /// step, so a task that went on from a park drops the stale reason there, as Redis's
    /// `step_records.lua` does (a no-op for a task in any other state).
    pub(crate) fn forget_ended_park(&mut self, id: &str) {
        if let Some(record) = self.tasks.get_mut(id).filter(|record| record.state == TaskState::Active) {
            record.parked = None;
        }
    }

    /// Records `step` for the active task `id`, replacing one of the same name, and logs it at
    /// `now`; false (nothing written) if there is no such active task.
    pub(crate) fn record_step(&mut self, id: &str, step: &StepRecord, now: SystemTime) -> bool {
        let Some(record) = self.tasks.get_mut(id).filter(|record| record.state == TaskState::Active) else {
            return false;
        };
        record.steps.retain(|kept| kept.name() != step.name());
        record.steps.push(step.clone());
        self.emit_named(now, EventKind::Step, id, Some(step.name().as_str()));
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
    /// recorded, out of any group it was once in. False (nothing written) if it is not active.
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
        // A grouped task an operator ran resumes as pending when due, not in its group (as
        // Redis's `park.lua` drops the hash's `group` field).
        record.group = None;
        if let Some(step) = step {
            record.steps.retain(|kept| kept.name() != step.name());
            record.steps.push(step.clone());
        }
        self.active.remove(position);
        self.lease.remove(id);
        self.unstarted.remove(id);
        let due = if signalled { now } else { parked.until };
        self.scheduled.insert(id, unix_secs(due));
        let signal = match &parked.reason {
            ParkReason::Signal(name) => Some(name.as_str()),
            _ => None,
        };
        self.emit_named(now, EventKind::Parked, id, signal);
        true
    }

    /// Keeps signal `name` for task `id` and, when the task is parked waiting for it, makes it
    /// pending (see `Steps::signal`); logs it at `now`. `None` when there is no such task;
    /// otherwise whether it woke the task.
    pub(crate) fn signal(
        &mut self,
        queue: &QueueName,
        id: &TaskId,
        name: &StepName,
        value: Bytes,
        now: SystemTime,
    ) -> Option<bool> {
        if let Some(signals) = self.waiting_signals(id.as_str()) {
            // A workflow task waiting for its parents keeps it for when it runs.
            signals.insert(name.clone(), value);
            self.emit_waiting_signalled(now, id.as_str(), name);
            return Some(false);
        }
        let record = self.tasks.get_mut(id.as_str())?;
        record.signals.insert(name.clone(), value);
        self.emit_named(now, EventKind::Signalled, id.as_str(), Some(name.as_str()));
        let record = self.tasks.get_mut(id.as_str())?;
        let waits = record.state == TaskState::Scheduled
            && matches!(&record.parked, Some(Parked { reason: ParkReason::Signal(waited), .. }) if waited == name);
        let woke = waits && self.run_task(queue, id).is_ok();
        if woke && let Some(record) = self.tasks.get_mut(id.as_str()) {
            record.parked = None;
        }
        Some(woke)
    }

    /// The value of signal `name` sent to task `id`.
    pub(crate) fn signal_value(&self, id: &str, name: &StepName) -> Option<Bytes> {
        match self.tasks.get(id) {
            Some(record) => record.signals.get(name).cloned(),
            None => self.waiting_signal_value(id, name),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::MemoryBroker;
    use asynq_core::broker::{Dequeue, Enqueue, Forward, Steps};
    use asynq_core::steps::{ParkReason, Parked, StepName};
    use asynq_core::{Clock, QueueName, SimulatedClock, StoredTask, Task, TaskId, TaskOptions, resolve_enqueue};
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    fn parked_field(broker: &MemoryBroker, id: &str) -> Option<Parked> {
        broker.state().queues[&QueueName::from_static("q")].tasks[id].parked.clone()
    }

    async fn take(broker: &MemoryBroker) -> StoredTask {
        broker.dequeue(&[QueueName::from_static("q")], 1).await.unwrap().remove(0).message
    }

    /// Why a task was parked goes when the park ends: when a signal wakes it, or when the
    /// attempt that goes on reads its records (after a forward); a read while it is parked
    /// keeps it.
    #[tokio::test]
    async fn the_reason_of_a_park_goes_when_the_task_goes_on() {
        let clock = SimulatedClock::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000));
        let broker = MemoryBroker::with_clock(Arc::new(clock.clone()));
        let (q, id) = (QueueName::from_static("q"), TaskId::from_static("a"));
        let options = TaskOptions::new().queue("q").task_id("a");
        let request = resolve_enqueue(&Task::new("t", ""), &options, clock.now(), || unreachable!()).unwrap();
        broker.enqueue(request).await.unwrap();

        let message = take(&broker).await;
        let sleep = Parked::new(ParkReason::Sleep, clock.now() + Duration::from_secs(10));
        broker.park(&message, &sleep, None).await.unwrap();
        broker.step_records(&q, &id).await.unwrap();
        assert_eq!(parked_field(&broker, "a"), Some(sleep), "a read while parked keeps it");
        clock.advance(Duration::from_secs(10));
        broker.forward_ready(std::slice::from_ref(&q)).await.unwrap();
        let message = take(&broker).await;
        assert!(parked_field(&broker, "a").is_some(), "kept until the attempt reads its records");
        broker.step_records(&q, &id).await.unwrap();
        assert_eq!(parked_field(&broker, "a"), None);

        let go = StepName::new("go").unwrap();
        let wait = Parked::new(ParkReason::Signal(go.clone()), clock.now() + Duration::from_secs(60));
        broker.park(&message, &wait, None).await.unwrap();
        assert!(broker.signal(&q, &id, &go, bytes::Bytes::new()).await.unwrap());
        assert_eq!(parked_field(&broker, "a"), None, "the signal that wakes it ends the park");
    }
}
