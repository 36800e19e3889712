//! Signals to tasks whose handlers wait for them (`TaskContext::wait_for_signal` in
//! asynq-server), sent through the broker's [`Steps`] capability.

use crate::Client;
use asynq_core::broker::Steps;
use asynq_core::steps::StepName;
use asynq_core::{Error, QueueName, Result, TaskId};
use bytes::Bytes;
use std::sync::Arc;

impl Client {
    /// This client, sending signals ([`Client::signal_bytes`], `Client::signal`) through `steps`: the broker it
    /// enqueues into, as its [`Steps`] capability (the memory and Redis brokers have it).
    ///
    /// ```
    /// # use asynq_client::Client;
    /// # use std::sync::Arc;
    /// let broker = asynq_memory::MemoryBroker::new();
    /// let client = Client::new(broker.clone()).with_steps(Arc::new(broker));
    /// # let _ = client;
    /// ```
    pub fn with_steps(mut self, steps: Arc<dyn Steps>) -> Self {
        self.steps = Some(steps);
        self
    }

    /// Sends signal `name` with `value` (raw bytes) to task `task_id` of `queue`: kept with
    /// the task, so a wait that comes later gets it at once, and a task parked waiting for it
    /// is made pending in the same step. Returns whether it woke a waiting task.
    ///
    /// Errors: [`Error::InvalidArgument`] for a bad queue, ID or name;
    /// [`Error::TooLarge`] for a value over
    /// [`MAX_SIGNAL_LEN`](asynq_core::steps::MAX_SIGNAL_LEN) bytes; [`Error::TaskNotFound`]
    /// when there is no such task; [`Error::Unsupported`] without [`Client::with_steps`].
    /// Nothing is written on error.
    pub async fn signal_bytes(&self, queue: &str, task_id: &str, name: &str, value: impl Into<Bytes>) -> Result<bool> {
        let queue = QueueName::new(queue)?;
        let id = TaskId::new(task_id)?;
        let name = StepName::new(name)?;
        let value = value.into();
        asynq_core::steps::check_signal_value(&value)?;
        let Some(steps) = &self.steps else {
            return Err(Error::Unsupported { capability: "signals (Client::with_steps)" });
        };
        steps.signal(&queue, &id, &name, value).await
    }

    /// [`Client::signal_bytes`] with `value` encoded as JSON, as
    /// `TaskContext::wait_for_signal` decodes it.
    ///
    /// Errors: as [`Client::signal_bytes`], and [`Error::InvalidArgument`] for a value that
    /// does not encode.
    #[cfg(feature = "json")]
    pub async fn signal<T: serde::Serialize + ?Sized>(
        &self,
        queue: &str,
        task_id: &str,
        name: &str,
        value: &T,
    ) -> Result<bool> {
        self.signal_bytes(queue, task_id, name, asynq_core::steps::signal_json(value)?).await
    }
}
