//! The capability to keep the records of durable steps.

#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::steps::{Parked, StepName, StepRecord};
use crate::{QueueName, Result, StoredTask, TaskId};
use async_trait::async_trait;
use bytes::Bytes;

/// The records of durable steps ([`crate::steps`]), kept with their task: they go when the
/// task goes (deleted, done without retention, trimmed from the archive), and stay while it
/// waits to retry, is scheduled again, or is kept completed. Used by a server's handlers
/// (`TaskContext::step`) and by operators' tools.
#[async_trait]
pub trait Steps: Send + Sync {
    /// The step records of task `id` of `queue`, by when each was recorded, then by name; empty
    /// when the task has none or does not exist.
    async fn step_records(&self, queue: &QueueName, id: &TaskId) -> Result<Vec<StepRecord>>;

    /// Records `record` for the active task `id` of `queue`, in one step, replacing a record of
    /// the same name.
    ///
    /// Errors: [`Error::TaskNotFound`] when the task does not exist or is not active (nothing
    /// is written).
    async fn record_step(&self, queue: &QueueName, id: &TaskId, record: &StepRecord) -> Result<()>;

    /// Parks the active task `message` (its handler sleeps, or waits for a signal): in one step,
    /// moves it to scheduled, due at `parked.until`, charged nothing (its retry count and the
    /// queue's counters stay), records `parked` as why, and records `record` (the sleep's or
    /// wait's own step) when given. A task parked waiting for a signal that came already is
    /// made due at once. Go's servers see a scheduled task and run it when due.
    ///
    /// Errors: [`Error::TaskNotFound`] when the task is not active (nothing is written).
    async fn park(&self, message: &StoredTask, parked: &Parked, record: Option<&StepRecord>) -> Result<()>;

    /// Sends signal `name` with `value` to task `id` of `queue`, in one step: keeps it with the
    /// task (replacing one of the same name), and when the task is parked waiting for this
    /// signal, makes it pending. Returns whether it woke the task.
    ///
    /// Errors: [`Error::TaskNotFound`] when the task does not exist; [`Error::TooLarge`] from
    /// [`check_signal_value`](crate::steps::check_signal_value) (nothing is written).
    async fn signal(&self, queue: &QueueName, id: &TaskId, name: &StepName, value: Bytes) -> Result<bool>;

    /// The value of signal `name` sent to task `id` of `queue`; `None` when none was sent or
    /// the task does not exist.
    async fn signal_value(&self, queue: &QueueName, id: &TaskId, name: &StepName) -> Result<Option<Bytes>>;
}
