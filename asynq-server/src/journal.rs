//! What one attempt knows of its durable steps (`steps.rs` runs them): the task's records,
//! read at its first step, and the names its steps used.

use asynq_core::broker::Steps;
use asynq_core::steps::{Parked, StepName, StepRecord};
use asynq_core::{Clock, QueueName, TaskId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

/// The steps of one attempt; clones share them.
#[derive(Clone)]
pub(crate) struct StepJournal(pub(crate) Arc<JournalInner>);

/// The attempt's task, where its records are kept, and what the attempt saw.
pub(crate) struct JournalInner {
    /// Keeps the records; `None` when the broker lacks the capability.
    pub(crate) broker: Option<Arc<dyn Steps>>,
    pub(crate) queue: QueueName,
    pub(crate) id: TaskId,
    /// Stamps the records.
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) state: tokio::sync::Mutex<JournalState>,
}

/// What the attempt saw, behind a lock never held across a step's body.
#[derive(Default)]
pub(crate) struct JournalState {
    /// The task's records as the attempt began, once read, with those recorded since.
    pub(crate) records: Option<HashMap<StepName, StepRecord>>,
    /// The names of the steps this attempt ran or returned.
    pub(crate) seen: HashSet<StepName>,
    /// How many durable sleeps this attempt reached (each is a step named `sleep#<n>`).
    pub(crate) sleeps: u32,
}

/// A handler's request to park its task, carried by
/// [`StepError::Suspended`](crate::StepError::Suspended) to the server, which parks the task
/// when the handler returns it: until when and why, and the step recording that the sleep or
/// wait was reached.
#[derive(Debug, Clone)]
pub struct Suspension {
    pub(crate) parked: Parked,
    pub(crate) record: Option<StepRecord>,
}

impl Suspension {
    /// Until when and why the task is parked.
    pub fn parked(&self) -> &Parked {
        &self.parked
    }
}

impl fmt::Display for Suspension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "parked: {}", self.parked)
    }
}

impl std::error::Error for Suspension {}

impl fmt::Debug for StepJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepJournal").field("durable", &self.0.broker.is_some()).finish_non_exhaustive()
    }
}

impl StepJournal {
    /// The journal of an attempt at task `id` of `queue`, keeping records through `broker`.
    pub(crate) fn new(broker: Option<Arc<dyn Steps>>, queue: QueueName, id: TaskId, clock: Arc<dyn Clock>) -> Self {
        Self(Arc::new(JournalInner { broker, queue, id, clock, state: Default::default() }))
    }

    /// This journal's task and clock, keeping records through `broker`.
    pub(crate) fn with_broker(&self, broker: Arc<dyn Steps>) -> Self {
        let JournalInner { queue, id, clock, .. } = &*self.0;
        Self::new(Some(broker), queue.clone(), id.clone(), Arc::clone(clock))
    }
}
