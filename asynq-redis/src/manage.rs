//! Operator actions ([`Manage`]): run, archive and delete tasks one by one or a whole state or
//! group at once, replace a scheduled task's payload, remove a queue; with Go asynq v0.26's
//! Inspector scripts' effects, so Go's CLI and asynqmon see what they would have written.
//!
//! Beyond Go: every delete releases the uniqueness locks of the tasks it deletes, and archiving
//! trims the archive with the trimmed tasks' hashes, as the core archive script does, rather
//! than leaving them behind.

use crate::broker::{RedisBroker, decode};
use crate::error::unexpected;
use crate::keys::QueueKeys;
use crate::proto;
use crate::scripts::{SCRIPTS, ScriptCall};
use async_trait::async_trait;
use asynq_core::broker::Manage;
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::workflow::waiting_task_refused;
use asynq_core::{
    ArchiveLimits, ArchiveOutlook, ArchiveReport, BulkAction, BulkProgress, Error, OnProgress, QueueName, Result,
    TaskId, TaskInfo, TaskPriority, TaskSet, TaskState, validate_bulk,
};
use bytes::Bytes;
use prost::Message;
use redis::{AsyncCommands, FromRedisValue, Value};

/// How many times [`Manage::update_task_payload`] reads the task again when it changed between
/// the read and the write.
const UPDATE_ATTEMPTS: usize = 3;

/// How a bulk script reads its source container.
fn container(k: &QueueKeys, set: &TaskSet) -> (String, &'static str, String) {
    match set {
        TaskSet::Group(group) => (k.group(group), "zset", group.to_string()),
        TaskSet::State(TaskState::Pending) => (k.pending(), "list", String::new()),
        TaskSet::State(state) => (format!("{}{}", k.prefix(), state.as_str()), "zset", String::new()),
    }
}

impl RedisBroker {
    fn task_not_found(queue: &QueueName, id: &TaskId) -> Error {
        Error::TaskNotFound { queue: queue.clone(), id: id.clone() }
    }

    /// The raw `task_info.lua` reply for task `id`: its encoded message, state, next process
    /// time (Unix seconds, 0 if none), result and priority.
    async fn read_task(
        &self,
        k: &QueueKeys,
        queue: &QueueName,
        id: &TaskId,
    ) -> Result<(Vec<u8>, String, i64, Option<Bytes>, TaskPriority)> {
        let mut call = ScriptCall::new(&SCRIPTS.task_info);
        call.key(k.task(id)).arg(id.as_str()).arg(unix_secs(self.now())).arg(k.prefix());
        let values: Vec<Value> = call.run(&mut self.conn(), "task info").await?;
        let [msg, state, next, result, _, _, priority, ..] = values.as_slice() else {
            return Err(Self::task_not_found(queue, id));
        };
        let msg = Vec::<u8>::from_redis_value_ref(msg).map_err(|e| unexpected("task info", e))?;
        let state = String::from_redis_value_ref(state).map_err(|e| unexpected("task info", e))?;
        let next = Option::<i64>::from_redis_value_ref(next).ok().flatten().unwrap_or(0);
        let result = Option::<Vec<u8>>::from_redis_value_ref(result).ok().flatten().map(Bytes::from);
        Ok((msg, state, next, result, crate::broker::read_priority(priority)))
    }
}

#[async_trait]
impl Manage for RedisBroker {
    async fn run_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&SCRIPTS.run_task);
        call.key(k.task(id)).key(k.pending()).key(k.groups()).key(k.idle_workers());
        call.key(k.prioritized()).key(k.priority_sequence());
        call.arg(id.as_str()).arg(k.prefix()).arg(k.group_prefix()).arg(k.ready_channel());
        match call.run::<i64>(&mut self.conn(), "run task").await? {
            1 => {
                self.pubsub().made_pending(queue);
                Ok(())
            }
            0 => Err(Self::task_not_found(queue, id)),
            -1 => Err(Error::FailedPrecondition("task is already running".into())),
            -2 => Err(Error::FailedPrecondition("task is already in pending state".into())),
            -3 => Err(waiting_task_refused(id)),
            n => Err(unexpected("run task", format!("the script returned {n}"))),
        }
    }

    async fn archive_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.archive_task_reporting(queue, id).await.map(|_| ())
    }

    fn archive_limits(&self) -> ArchiveLimits {
        self.archive_limits_set()
    }

    async fn archive_outlook(&self, queue: &QueueName, adding: usize) -> Result<ArchiveOutlook> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let limits = self.archive_limits_set();
        let cutoff = limits.cutoff_secs(self.now());
        let (archived, expired): (usize, usize) = redis::pipe()
            .zcard(k.archived())
            .zcount(k.archived(), "-inf", cutoff)
            .query_async(&mut self.conn())
            .await
            .map_err(|e| crate::error::broker_error("archive outlook", e))?;
        Ok(limits.outlook(archived, expired, adding))
    }

    /// One `archive_all.lua` call per [`BULK_STEP`] tasks, each replying what its trim deleted.
    async fn archive_reporting(
        &self,
        queue: &QueueName,
        set: &TaskSet,
        progress: OnProgress<'_>,
    ) -> Result<ArchiveReport> {
        validate_bulk(BulkAction::Archive, set)?;
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let (source, kind, group) = container(&k, set);
        let now = unix_secs(self.now());
        let (cutoff, max_size) = self.archive_args(now);
        let mut call = ScriptCall::new(&SCRIPTS.archive_all);
        call.key(source).key(k.archived()).key(k.groups()).key(k.prioritized()).key(k.events());
        call.arg(kind).arg(now).arg(cutoff).arg(max_size);
        call.arg(k.task_prefix()).arg(group).arg(k.finished_channel());
        call.arg(self.event_caps_now().await?.arg(queue));
        let steps = self.in_steps(call, action_context(BulkAction::Archive), 0, progress, |_| {}).await?;
        Ok(ArchiveReport::new(steps.done, steps.extra[0], steps.extra[1]))
    }

    async fn archive_task_reporting(&self, queue: &QueueName, id: &TaskId) -> Result<ArchiveReport> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let now = unix_secs(self.now());
        let mut call = ScriptCall::new(&SCRIPTS.archive_task);
        call.key(k.task(id)).key(k.archived()).key(k.groups()).key(k.events());
        let (cutoff, max_size) = self.archive_args(now);
        call.arg(id.as_str()).arg(now).arg(cutoff).arg(max_size);
        call.arg(k.prefix()).arg(k.group_prefix()).arg(k.task_prefix()).arg(k.finished_channel());
        call.arg(self.event_caps_now().await?.arg(queue));
        let reply: Value = call.run(&mut self.conn(), "archive task").await?;
        if let Ok([1, by_age, by_size]) = <[i64; 3]>::from_redis_value_ref(&reply) {
            return Ok(ArchiveReport::new(1, by_age.max(0) as usize, by_size.max(0) as usize));
        }
        match i64::from_redis_value_ref(&reply) {
            Ok(0) => Err(Self::task_not_found(queue, id)),
            Ok(-1) => Err(Error::FailedPrecondition(format!("task is already archived: id={id}, queue={queue}"))),
            Ok(-2) => Err(Error::FailedPrecondition(
                "cannot archive task in active state. use CancelProcessing instead.".into(),
            )),
            Ok(-3) => Err(waiting_task_refused(id)),
            _ => Err(unexpected("archive task", format!("the script returned {reply:?}"))),
        }
    }

    async fn delete_task(&self, queue: &QueueName, id: &TaskId) -> Result<()> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&SCRIPTS.delete_task);
        call.key(k.task(id)).key(k.groups()).key(k.events());
        call.arg(id.as_str()).arg(k.prefix()).arg(k.group_prefix()).arg(k.finished_channel());
        call.arg(self.event_caps_now().await?.arg(queue));
        match call.run::<i64>(&mut self.conn(), "delete task").await? {
            1 => Ok(()),
            0 => Err(Self::task_not_found(queue, id)),
            -1 => Err(Error::FailedPrecondition(
                "cannot delete task in active state. use CancelProcessing instead.".into(),
            )),
            -3 => Err(waiting_task_refused(id)),
            n => Err(unexpected("delete task", format!("the script returned {n}"))),
        }
    }

    async fn run_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        self.bulk_action(queue, BulkAction::Run, set, &|_| {}).await
    }

    async fn archive_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        self.bulk_action(queue, BulkAction::Archive, set, &|_| {}).await
    }

    async fn delete_all(&self, queue: &QueueName, set: &TaskSet) -> Result<usize> {
        self.bulk_action(queue, BulkAction::Delete, set, &|_| {}).await
    }

    /// One script call per [`BULK_STEP`] tasks: see `bulk_slice.lua`.
    async fn bulk_action(
        &self,
        queue: &QueueName,
        action: BulkAction,
        set: &TaskSet,
        progress: OnProgress<'_>,
    ) -> Result<usize> {
        validate_bulk(action, set)?;
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let (source, _, group) = container(&k, set);
        let call = match action {
            BulkAction::Run => {
                let mut call = ScriptCall::new(&SCRIPTS.run_all);
                call.key(source).key(k.pending()).key(k.groups()).key(k.idle_workers());
                call.key(k.prioritized()).key(k.priority_sequence());
                call.arg(k.task_prefix()).arg(group).arg(k.ready_channel());
                call
            }
            BulkAction::Archive => return Ok(self.archive_reporting(queue, set, progress).await?.archived),
            BulkAction::Delete => self.delete_all_call(&k, set, self.event_caps_now().await?.arg(queue)),
        };
        let made_pending = action == BulkAction::Run;
        let steps = self.in_steps(call, action_context(action), 0, progress, |acted| {
            if made_pending && acted > 0 {
                self.pubsub().made_pending(queue);
            }
        });
        Ok(steps.await?.done)
    }

    /// Reads the task, replaces the payload in its message and writes the message back, as Go
    /// does; the write happens only if the message is still the one read (else it reads again).
    async fn update_task_payload(&self, queue: &QueueName, id: &TaskId, payload: Bytes) -> Result<TaskInfo> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        for _ in 0..UPDATE_ATTEMPTS {
            let (old, state, next, result, priority) = self.read_task(&k, queue, id).await?;
            if state != TaskState::Scheduled.as_str() {
                return Err(not_scheduled());
            }
            let mut msg = proto::TaskMessage::decode(old.as_slice())
                .map_err(|e| unexpected("cannot decode a task message", e))?;
            msg.payload = payload.clone();
            let new = msg.encode_to_vec();
            crate::broker::check_value_len("task message", new.len())?;
            let mut call = ScriptCall::new(&SCRIPTS.update_task_payload);
            call.key(k.task(id)).arg(new.as_slice()).arg(old.as_slice());
            match call.run::<i64>(&mut self.conn(), "update task payload").await? {
                1 => {
                    let msg = decode(&new)?;
                    let next = (next != 0).then(|| from_unix_secs(next));
                    let mut info = TaskInfo::new(&msg, TaskState::Scheduled, next, result);
                    info.priority = priority;
                    return Ok(info);
                }
                0 => return Err(Self::task_not_found(queue, id)),
                -1 => return Err(not_scheduled()),
                -2 => continue,
                -3 => return Err(asynq_core::steps::started_task_refused(id)),
                n => return Err(unexpected("update task payload", format!("the script returned {n}"))),
            }
        }
        Err(Error::FailedPrecondition(format!("task {id} kept changing while its payload was being updated")))
    }

    async fn delete_queue(&self, queue: &QueueName, force: bool) -> Result<()> {
        self.delete_queue_with_progress(queue, force, &|_| {}).await
    }

    /// A forced removal deletes the tasks in [`BULK_STEP`] slices first (see `bulk_slice.lua`),
    /// then removes the queue's containers with `delete_queue.lua`.
    async fn delete_queue_with_progress(&self, queue: &QueueName, force: bool, progress: OnProgress<'_>) -> Result<()> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let mut conn = self.conn();
        if force {
            self.delete_tasks_of_queue(&k, progress).await?;
        }
        let mut call = ScriptCall::new(&SCRIPTS.delete_queue);
        call.key(k.pending()).key(k.active()).key(k.scheduled()).key(k.retry()).key(k.archived()).key(k.lease());
        call.key(k.prioritized()).key(k.priority_sequence());
        call.arg(k.task_prefix()).arg(if force { "1" } else { "0" }).arg(k.finished_channel());
        match call.run::<i64>(&mut conn, "delete queue").await? {
            1 => {}
            -1 => return Err(Error::QueueNotEmpty { queue: queue.to_owned() }),
            -2 => return Err(active_tasks_refused()),
            n => return Err(unexpected("delete queue", format!("the script returned {n}"))),
        }
        // asynq:queues is global: outside the script, which keeps to the queue's slot.
        let _: i64 = conn
            .srem(self.namespace().all_queues(), queue.as_str())
            .await
            .map_err(|e| crate::error::broker_error("delete queue", e))?;
        self.forget_queue(queue);
        Ok(())
    }
}

/// The most tasks one step of a bulk action acts on. Each step is one script call doing a few
/// microseconds of Redis work per task, so no step blocks Redis for more than a few
/// milliseconds, while the round trips stay a small share of the whole.
pub const BULK_STEP: usize = 250;

/// The states a forced queue removal deletes, as Go's `removeQueueForce`.
const REMOVED_STATES: [TaskState; 4] =
    [TaskState::Pending, TaskState::Scheduled, TaskState::Retry, TaskState::Archived];

fn action_context(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Run => "run all",
        BulkAction::Archive => "archive all",
        BulkAction::Delete => "delete all",
    }
}

impl RedisBroker {
    /// A `delete_all.lua` call on the tasks of `set`, with the event stream's cap `events`
    /// (`""` for none); the step size is added by [`RedisBroker::in_steps`].
    fn delete_all_call(&self, k: &QueueKeys, set: &TaskSet, events: String) -> ScriptCall {
        let (source, kind, group) = container(k, set);
        let mut call = ScriptCall::new(&SCRIPTS.delete_all);
        call.key(source).key(k.groups()).key(k.prioritized()).key(k.events());
        call.arg(kind).arg(k.task_prefix()).arg(group).arg(k.finished_channel()).arg(events);
        call
    }

    /// Runs `call`, a bulk script whose last argument is the step size and whose reply is
    /// `{acted on, left in the source, ...}` (up to two further counts, summed over the steps
    /// into [`Steps::extra`]), until the source is empty or as many tasks as it held at first
    /// were acted on; calls `after_step` with each step's count and `progress` with the count
    /// so far, offset by `before` tasks of earlier parts of one action.
    async fn in_steps(
        &self,
        mut call: ScriptCall,
        context: &str,
        before: usize,
        progress: OnProgress<'_>,
        mut after_step: impl FnMut(usize),
    ) -> Result<Steps> {
        call.arg(BULK_STEP);
        let mut conn = self.conn();
        let mut steps = Steps::default();
        let mut total = None;
        loop {
            let reply: Vec<usize> = call.run(&mut conn, context).await?;
            let [acted, left, extra @ ..] = reply.as_slice() else {
                return Err(unexpected(context, format!("the script returned {reply:?}")));
            };
            let (acted, left) = (*acted, *left);
            steps.done += acted;
            for (sum, n) in steps.extra.iter_mut().zip(extra) {
                *sum += n;
            }
            let total = *total.get_or_insert(acted + left);
            after_step(acted);
            progress(BulkProgress::new(before + steps.done, before + total));
            if acted == 0 || left == 0 || steps.done >= total {
                return Ok(steps);
            }
        }
    }

    /// Deletes the tasks a forced removal of the queue deletes, in steps, after making sure
    /// none of its tasks is active (nothing is deleted then).
    async fn delete_tasks_of_queue(&self, k: &QueueKeys, progress: OnProgress<'_>) -> Result<()> {
        let mut conn = self.conn();
        let (active, pending, prioritized, scheduled, retry, archived): (usize, usize, usize, usize, usize, usize) =
            redis::pipe()
                .llen(k.active())
                .llen(k.pending())
                .zcard(k.prioritized())
                .zcard(k.scheduled())
                .zcard(k.retry())
                .zcard(k.archived())
                .query_async(&mut conn)
                .await
                .map_err(|e| crate::error::broker_error("delete queue", e))?;
        if active > 0 {
            return Err(active_tasks_refused());
        }
        let counts = [pending + prioritized, scheduled, retry, archived];
        let total = counts.iter().sum::<usize>();
        let mut deleted = 0;
        for (state, _) in REMOVED_STATES.into_iter().zip(counts).filter(|(_, count)| *count > 0) {
            // Go's removal writes no events; neither does ours.
            let call = self.delete_all_call(k, &TaskSet::State(state), String::new());
            let parts = |p: BulkProgress| progress(BulkProgress::new(p.done, total.max(p.total)));
            deleted += self.in_steps(call, "delete queue", deleted, &parts, |_| {}).await?.done;
        }
        Ok(())
    }
}

/// What the steps of a bulk action did.
#[derive(Debug, Default)]
struct Steps {
    /// Tasks acted on.
    done: usize,
    /// The sums of the further counts the steps replied (`archive_all.lua`: the archived tasks
    /// its trims deleted past the age limit, and over the size limit).
    extra: [usize; 2],
}

fn active_tasks_refused() -> Error {
    Error::FailedPrecondition("cannot remove queue with active tasks".into())
}

fn not_scheduled() -> Error {
    Error::FailedPrecondition("cannot update task that is not in scheduled state.".into())
}
