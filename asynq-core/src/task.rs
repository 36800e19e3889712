//! What a producer creates ([`Task`]) and what it gets back ([`TaskInfo`]).

use crate::StoredTask;
use crate::names::{GroupName, QueueName, TaskId};
use crate::options::TaskOptions;
use crate::priority::TaskPriority;
use crate::progress::Progress;
use crate::state::TaskState;
use bytes::Bytes;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// A unit of work: a type name that selects the handler, a payload, and optional headers and
/// default options.
///
/// Options given when the task is enqueued override the task's own (see
/// [`TaskOptions::merge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    type_name: String,
    payload: Bytes,
    headers: HashMap<String, String>,
    options: TaskOptions,
}

impl Task {
    /// A task of type `type_name` carrying `payload`.
    pub fn new(type_name: impl Into<String>, payload: impl Into<Bytes>) -> Self {
        Self {
            type_name: type_name.into(),
            payload: payload.into(),
            headers: HashMap::new(),
            options: TaskOptions::default(),
        }
    }

    /// Replaces the task's headers.
    pub fn with_headers(mut self, headers: HashMap<String, String>) -> Self {
        self.headers = headers;
        self
    }

    /// Adds one header.
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(key.into(), value.into());
        self
    }

    /// Replaces the task's default options.
    pub fn with_options(mut self, options: TaskOptions) -> Self {
        self.options = options;
        self
    }

    /// The type name.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The payload.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The headers.
    pub fn headers(&self) -> &HashMap<String, String> {
        &self.headers
    }

    /// The task's default options.
    pub fn options(&self) -> &TaskOptions {
        &self.options
    }

    /// The task a handler sees for a stored message.
    pub fn from_message(msg: &StoredTask) -> Self {
        Self {
            type_name: msg.type_name.clone(),
            payload: msg.payload.clone(),
            headers: msg.headers.clone(),
            options: TaskOptions::default(),
        }
    }
}

/// A snapshot of a stored task, as the client returns it from `enqueue` and the inspector from
/// its queries. Mirrors Go asynq's `TaskInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task ID.
    pub id: TaskId,
    /// The queue.
    pub queue: QueueName,
    /// The type name.
    pub type_name: String,
    /// The payload.
    pub payload: Bytes,
    /// The headers.
    pub headers: HashMap<String, String>,
    /// The state the task was in when the snapshot was taken.
    pub state: TaskState,
    /// How many times the task may be retried.
    pub max_retry: u32,
    /// How many times it has been retried.
    pub retried: u32,
    /// The last error, if it ever failed.
    pub last_error: Option<String>,
    /// When it last failed.
    pub last_failed_at: Option<SystemTime>,
    /// Its timeout, if any.
    pub timeout: Option<Duration>,
    /// Its deadline, if any.
    pub deadline: Option<SystemTime>,
    /// Its group, if any.
    pub group: Option<GroupName>,
    /// When it will next be processed: now for pending tasks, the due time for scheduled and
    /// retry tasks, none otherwise.
    pub next_process_at: Option<SystemTime>,
    /// True for an active task whose worker no longer holds its lease.
    pub is_orphaned: bool,
    /// How long it is kept after success.
    pub retention: Option<Duration>,
    /// When it completed, for completed tasks.
    pub completed_at: Option<SystemTime>,
    /// The result its handler wrote, if any.
    pub result: Option<Bytes>,
    /// How far its handler said it had come in its current (or last) attempt, if it said.
    pub progress: Option<Progress>,
    /// The debounce key it was enqueued with ([`TaskOptions::debounce`](crate::TaskOptions::debounce)),
    /// if any.
    pub debounce_key: Option<String>,
    /// Its priority within its queue ([`TaskOptions::priority`](crate::TaskOptions::priority));
    /// [`TaskPriority::DEFAULT`] for a task enqueued without one, Go's included.
    pub priority: TaskPriority,
    /// Why its handler parked it (a durable sleep or a wait for a signal), while it is
    /// scheduled; `None` otherwise, and for tasks the inspector lists (only
    /// `Inspector::get_task_info` reads it).
    pub parked: Option<crate::steps::Parked>,
    /// The records of its durable steps, by when each was recorded (only
    /// `Inspector::get_task_info` reads them; empty in listings).
    pub steps: Vec<crate::steps::StepRecord>,
}

impl TaskInfo {
    /// Builds the snapshot of `msg` in `state`.
    pub fn new(msg: &StoredTask, state: TaskState, next_process_at: Option<SystemTime>, result: Option<Bytes>) -> Self {
        Self {
            id: msg.id.clone(),
            queue: msg.queue.clone(),
            type_name: msg.type_name.clone(),
            payload: msg.payload.clone(),
            headers: msg.headers.clone(),
            state,
            max_retry: msg.max_retry,
            retried: msg.retried,
            last_error: msg.last_error.clone(),
            last_failed_at: msg.last_failed_at,
            timeout: msg.timeout,
            deadline: msg.deadline,
            group: msg.group.clone(),
            next_process_at,
            is_orphaned: false,
            retention: msg.retention,
            completed_at: msg.completed_at,
            result: result.filter(|r| !r.is_empty()),
            progress: None,
            debounce_key: None,
            priority: TaskPriority::DEFAULT,
            parked: None,
            steps: Vec::new(),
        }
    }
}
