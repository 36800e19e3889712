//! Task options, their defaults and override rule, and the request they resolve into
//! ([`resolve_enqueue`](crate::resolve_enqueue)).

use crate::error::{Error, Result};
use crate::names::{GroupName, QueueName, TaskId};
use crate::priority::TaskPriority;
use crate::stored::StoredTask;
use crate::{DEFAULT_QUEUE, MAX_DURATION};
use std::time::{Duration, SystemTime};

/// When a task becomes ready to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessAt {
    /// At this instant.
    At(SystemTime),
    /// This long after it is enqueued.
    In(Duration),
}

/// Options that control where and how a task runs, with Go asynq's names and defaults.
///
/// Every option is unset until given. A task carries default options
/// ([`Task::with_options`](crate::Task::with_options)); options given at enqueue time override them one by one
/// ([`TaskOptions::merge`]). Unset options take the defaults: queue `"default"`, 25 retries, a
/// 30-minute timeout when neither a timeout nor a deadline is set, processing now. A duration,
/// deadline or process time more than Go's longest `time.Duration` (about 292 years) away is
/// refused, as Go servers sharing the queue could not hold it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskOptions {
    // Read by `resolve_enqueue` (`resolve.rs`); set through the builder methods.
    pub(crate) queue: Option<String>,
    pub(crate) max_retry: Option<u32>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) deadline: Option<SystemTime>,
    pub(crate) process_at: Option<ProcessAt>,
    pub(crate) unique: Option<Duration>,
    pub(crate) task_id: Option<String>,
    pub(crate) retention: Option<Duration>,
    pub(crate) group: Option<String>,
    pub(crate) debounce: Option<(String, Duration)>,
    pub(crate) priority: Option<i32>,
    pub(crate) shard_key: Option<String>,
}

impl TaskOptions {
    /// No options set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The queue to put the task in (default `"default"`).
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// How many times a failing task is retried before it is archived (default 25).
    pub fn max_retry(mut self, n: u32) -> Self {
        self.max_retry = Some(n);
        self
    }

    /// How long one attempt may run (at least one second). When both a timeout and a deadline
    /// are set, the earlier of the two wins.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The instant by which the task must have finished.
    pub fn deadline(mut self, deadline: SystemTime) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Process the task at `t` rather than now.
    pub fn process_at(mut self, t: SystemTime) -> Self {
        self.process_at = Some(ProcessAt::At(t));
        self
    }

    /// Process the task `d` after it is enqueued.
    pub fn process_in(mut self, d: Duration) -> Self {
        self.process_at = Some(ProcessAt::In(d));
        self
    }

    /// Refuse to enqueue another task with the same queue, type and payload for `ttl` (at least
    /// one second), or until this one succeeds or is deleted.
    pub fn unique(mut self, ttl: Duration) -> Self {
        self.unique = Some(ttl);
        self
    }

    /// Use `id` as the task ID instead of a random UUID.
    pub fn task_id(mut self, id: impl Into<String>) -> Self {
        self.task_id = Some(id.into());
        self
    }

    /// Keep the task, and the result its handler wrote, for `d` after it succeeds.
    pub fn retention(mut self, d: Duration) -> Self {
        self.retention = Some(d);
        self
    }

    /// Put the task in group `name`, to be aggregated with the group's other tasks.
    pub fn group(mut self, name: impl Into<String>) -> Self {
        self.group = Some(name.into());
        self
    }

    /// Debounce the task: run it `window` after it is enqueued, unless another task is enqueued
    /// with the same `key` in the same queue before then, which takes its place (payload,
    /// options and due time, under its own ID) and waits a whole `window` again. So a burst
    /// of enqueues a shorter time apart than `window` runs once, with the last one's payload,
    /// `window` after the last one.
    ///
    /// Only a task still scheduled is replaced: once it is due (pending) or running, the next
    /// enqueue with the key starts a new window, and so it does beside a task whose handler
    /// started and parked it (a durable sleep or signal wait), which is left to go on. A
    /// task with the key's last task's own ID is then refused
    /// ([`Error::TaskIdConflict`](crate::Error::TaskIdConflict)). A replaced task is deleted: a client waiting
    /// for it learns so. The due time has the scheduled set's resolution, whole seconds. Not
    /// with [`process_at`](Self::process_at), [`process_in`](Self::process_in),
    /// [`unique`](Self::unique) or [`group`](Self::group) (an
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument)). Ours: Go asynq has no such
    /// option, and its servers run a debounced task as any scheduled one.
    pub fn debounce(mut self, key: impl Into<String>, window: Duration) -> Self {
        self.debounce = Some((key.into(), window));
        self
    }

    /// The task's priority within its queue, from −10 to 10, higher first (default 0; see
    /// [`TaskPriority`]): a queue's tasks above the default run before its tasks of the
    /// default priority, and those below the default after them; tasks of one priority run in
    /// the order they became pending. A priority out of range is refused with an
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the task is enqueued, and
    /// so is a priority on a grouped task (the task its group is aggregated into takes its own
    /// options) or on a workflow task. Ours: Go asynq has no such option; its servers run only
    /// the tasks of the default priority (see the guide, "Scheduling and priorities").
    pub fn priority(mut self, n: i32) -> Self {
        self.priority = Some(n);
        self
    }

    /// On a sharded queue ([`shard`](crate::shard)), place the task by `key`: tasks of one key
    /// go to one shard, where they keep the order they were enqueued in (by default a client
    /// places tasks round-robin). No effect on a queue that is not sharded. Not with
    /// [`unique`](Self::unique), [`group`](Self::group) or [`debounce`](Self::debounce), which
    /// place a task by their own keys (the client refuses the pair with an
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument)). Ours: Go asynq has no such
    /// option.
    pub fn shard_key(mut self, key: impl Into<String>) -> Self {
        self.shard_key = Some(key.into());
        self
    }

    /// The key given by [`shard_key`](Self::shard_key), if any.
    pub fn shard_key_option(&self) -> Option<&str> {
        self.shard_key.as_deref()
    }

    /// Whether [`task_id`](Self::task_id) is set.
    pub fn has_task_id(&self) -> bool {
        self.task_id.is_some()
    }

    /// These options with every option set in `overrides` replaced by the override.
    pub fn merge(&self, overrides: &TaskOptions) -> TaskOptions {
        TaskOptions {
            queue: overrides.queue.clone().or_else(|| self.queue.clone()),
            max_retry: overrides.max_retry.or(self.max_retry),
            timeout: overrides.timeout.or(self.timeout),
            deadline: overrides.deadline.or(self.deadline),
            process_at: overrides.process_at.or(self.process_at),
            unique: overrides.unique.or(self.unique),
            task_id: overrides.task_id.clone().or_else(|| self.task_id.clone()),
            retention: overrides.retention.or(self.retention),
            group: overrides.group.clone().or_else(|| self.group.clone()),
            debounce: overrides.debounce.clone().or_else(|| self.debounce.clone()),
            priority: overrides.priority.or(self.priority),
            shard_key: overrides.shard_key.clone().or_else(|| self.shard_key.clone()),
        }
    }

    /// The queue the task will go to.
    pub fn queue_name(&self) -> &str {
        self.queue.as_deref().unwrap_or(DEFAULT_QUEUE)
    }

    /// Each option that is set, written as Go asynq's `Option.String()` writes it, in field order:
    /// `Queue("critical")`, `MaxRetry(5)`, `Timeout(1m30s)`, `Deadline(Sun Nov 22 00:00:00 UTC
    /// 2026)`, `ProcessAt(…)` or `ProcessIn(5m0s)`, `Unique(1h0m0s)`, `TaskID("id")`,
    /// `Retention(24h0m0s)`, `Group("g")`. Go's scheduler stores these in its entries, and Go's
    /// inspector (`asynq cron ls`) parses them back. [`debounce`](Self::debounce) and
    /// [`priority`](Self::priority), which Go does not know, are left out.
    pub fn go_option_strings(&self) -> Vec<String> {
        use crate::go_format::{go_duration, go_quote, go_unix_date};
        let mut strings = Vec::new();
        if let Some(queue) = &self.queue {
            strings.push(format!("Queue({})", go_quote(queue)));
        }
        if let Some(n) = self.max_retry {
            strings.push(format!("MaxRetry({n})"));
        }
        if let Some(timeout) = self.timeout {
            strings.push(format!("Timeout({})", go_duration(timeout)));
        }
        if let Some(deadline) = self.deadline {
            strings.push(format!("Deadline({})", go_unix_date(deadline)));
        }
        match self.process_at {
            Some(ProcessAt::At(t)) => strings.push(format!("ProcessAt({})", go_unix_date(t))),
            Some(ProcessAt::In(d)) => strings.push(format!("ProcessIn({})", go_duration(d))),
            None => {}
        }
        if let Some(ttl) = self.unique {
            strings.push(format!("Unique({})", go_duration(ttl)));
        }
        if let Some(id) = &self.task_id {
            strings.push(format!("TaskID({})", go_quote(id)));
        }
        if let Some(retention) = self.retention {
            strings.push(format!("Retention({})", go_duration(retention)));
        }
        if let Some(group) = &self.group {
            strings.push(format!("Group({})", go_quote(group)));
        }
        strings
    }
}

/// Where a new task is placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Ready now: the pending list.
    Pending,
    /// Ready later: the scheduled set, due at `process_at`.
    Scheduled {
        /// When it becomes due.
        process_at: SystemTime,
    },
    /// Waiting for aggregation in `group`.
    Grouped {
        /// The group.
        group: GroupName,
    },
}

/// The longest debounce key, in bytes.
pub const MAX_DEBOUNCE_KEY_LEN: usize = 1024;

/// A checked [`TaskOptions::debounce`]: a key (not blank, at most [`MAX_DEBOUNCE_KEY_LEN`]
/// bytes, no control characters) and a window (more than zero, at most Go's longest duration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debounce {
    key: String,
    window: Duration,
}

impl Debounce {
    /// Checks `key` and `window`.
    pub fn new(key: impl Into<String>, window: Duration) -> Result<Self> {
        let key = key.into();
        if key.trim().is_empty() {
            return Err(Error::invalid("debounce key", "debounce key cannot be blank"));
        }
        if key.len() > MAX_DEBOUNCE_KEY_LEN {
            let why = format!("debounce key is {} bytes, more than {MAX_DEBOUNCE_KEY_LEN}", key.len());
            return Err(Error::invalid("debounce key", why));
        }
        if key.chars().any(char::is_control) {
            return Err(Error::invalid("debounce key", "debounce key cannot hold control characters"));
        }
        if window.is_zero() {
            return Err(Error::invalid("debounce window", "a debounce window of zero debounces nothing"));
        }
        check_duration("debounce window", window)?;
        Ok(Self { key, window })
    }

    /// The key that tasks replacing each other share, within one queue.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// How long after the last enqueue the task runs.
    pub fn window(&self) -> Duration {
        self.window
    }
}

/// What a new task takes the place of, if anything (ours; Go asynq has no such option).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Replace {
    /// The task last stored with this debounce key in the queue, if it is still scheduled and
    /// has not started ([`TaskOptions::debounce`]); it is deleted in the same step as the new
    /// task is stored.
    Debounced(Debounce),
    /// The pending or scheduled task with the request's own ID, which keeps the ID and takes
    /// the request's message and placement (`Client::replace`), unless it has started
    /// ([`steps::started_task_refused`](crate::steps::started_task_refused)).
    Waiting,
}

/// A fully validated request to store a new task, as [`crate::broker::Enqueue`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueRequest {
    /// The message to store. Its `unique_key` is filled in by the broker when `unique_ttl` is set.
    pub message: StoredTask,
    /// Where it goes.
    pub placement: Placement,
    /// How long the uniqueness lock is held (whole seconds, at least one), if the task is unique.
    /// For a scheduled task this already includes the time until it is due.
    pub unique_ttl: Option<Duration>,
    /// The task it replaces, if any. A backend that cannot replace refuses such a request with
    /// [`Error::Unsupported`](crate::Error::Unsupported).
    pub replace: Option<Replace>,
    /// Its priority within its queue: whenever it is pending, it waits among the tasks of this
    /// priority ([`TaskPriority`]). A grouped task has the default priority
    /// ([`EnqueueRequest::check_priority`]).
    pub priority: TaskPriority,
}

impl EnqueueRequest {
    /// A request to store `message` at `placement`, not unique, replacing nothing.
    pub fn new(message: StoredTask, placement: Placement) -> Self {
        Self { message, placement, unique_ttl: None, replace: None, priority: TaskPriority::DEFAULT }
    }

    /// Refuses a request whose task is grouped and has a priority other than the default: it
    /// never waits as a pending task of its own, and the task its group is aggregated into takes
    /// its own options. What [`resolve_enqueue`](crate::resolve_enqueue) makes passes; a backend checks requests made
    /// by hand before writing.
    pub fn check_priority(&self) -> Result<()> {
        if !self.priority.is_default() && matches!(self.placement, Placement::Grouped { .. }) {
            return Err(Error::invalid(
                "priority",
                "a grouped task is aggregated into another task, which takes its own priority; it cannot have one",
            ));
        }
        Ok(())
    }

    /// The queue the task goes to.
    pub fn queue(&self) -> &QueueName {
        &self.message.queue
    }

    /// The task ID.
    pub fn id(&self) -> &TaskId {
        &self.message.id
    }

    /// Refuses a request that replaces a task ([`EnqueueRequest::replace`]) and is unique or
    /// grouped: a replacement waits as a pending or scheduled task, holding no lock. What
    /// [`resolve_enqueue`](crate::resolve_enqueue) makes passes; a backend checks requests made by hand before writing.
    pub fn check_replacement(&self) -> Result<()> {
        if self.replace.is_none() {
            return Ok(());
        }
        if self.unique_ttl.is_some() {
            return Err(Error::invalid("unique", "a task that replaces another cannot be unique"));
        }
        if let Placement::Grouped { .. } = self.placement {
            return Err(Error::invalid("group", "a task that replaces another cannot be grouped"));
        }
        Ok(())
    }
}

/// Refuses `d` for `field` if it is longer than [`MAX_DURATION`].
pub(crate) fn check_duration(field: &'static str, d: Duration) -> Result<()> {
    if d > MAX_DURATION {
        return Err(Error::invalid(field, format!("{d:?} is longer than Go's longest duration ({MAX_DURATION:?})")));
    }
    Ok(())
}
