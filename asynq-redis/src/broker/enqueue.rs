//! Enqueue for [`RedisBroker`]: one `enqueue_plain.lua` call per plain task (see [`is_plain`]),
//! one `enqueue.lua` call per other task, and batches as a pipeline of `enqueue_batch.lua` calls
//! per queue, each storing up to `ENQUEUE_BATCH` tasks of any placement (`ENQUEUE_BATCH_GROUPED`
//! grouped ones).

use super::*;
use crate::scripts::DirectCall;
use asynq_core::{Replace, TaskPriority};

/// Whether `request` is a plain task, which `enqueue_plain.lua` stores as `enqueue.lua` would:
/// pending now, of the default priority, neither unique nor replacing another, in a queue that
/// keeps no event log (by `events`).
fn is_plain(request: &EnqueueRequest, events: &EventCaps) -> bool {
    request.placement == Placement::Pending
        && request.unique_ttl.is_none()
        && request.priority.is_default()
        && request.replace.is_none()
        && !events.logs(&request.message.queue)
}

impl RedisBroker {
    /// The `enqueue.lua` call that stores `request`, with the message it stores (its
    /// `unique_key` filled in for unique tasks), logging to the queue's event log under `events`.
    fn enqueue_call(&self, request: EnqueueRequest, events: &EventCaps) -> Result<(ScriptCall, StoredTask)> {
        self.enqueue_call_with(&SCRIPTS.enqueue, request, events)
    }

    /// As [`RedisBroker::enqueue_call`], calling `script`, which takes `enqueue.lua`'s KEYS and
    /// ARGV first (callers may append their own).
    pub(crate) fn enqueue_call_with(
        &self,
        script: &'static Script,
        request: EnqueueRequest,
        events: &EventCaps,
    ) -> Result<(ScriptCall, StoredTask)> {
        request.check_priority()?;
        let priority = priority_arg(request.priority);
        let mut msg = request.message;
        let k = self.queue_keys(&msg.queue);
        let unique_key = request.unique_ttl.map(|_| k.unique(&msg.type_name, &msg.payload));
        msg.unique_key.clone_from(&unique_key);
        let encoded = encode_checked(&msg)?;
        let now = self.now();
        // A scheduled task publishes on the due-notice channel where a pending one wakes servers.
        let channel = match request.placement {
            Placement::Scheduled { .. } => self.namespace().due_channel(),
            _ => k.ready_channel(),
        };
        let (placement, destination, score, group) = match &request.placement {
            Placement::Pending if request.priority.is_default() => {
                ("pending", k.pending(), unix_nanos(now), String::new())
            }
            Placement::Pending => ("pending", k.prioritized(), unix_nanos(now), String::new()),
            Placement::Scheduled { process_at } => ("scheduled", k.scheduled(), unix_secs(*process_at), String::new()),
            Placement::Grouped { group } => ("group", k.group(group), unix_secs(now), group.to_string()),
        };
        let mut call = ScriptCall::new(script);
        call.key(k.task(&msg.id)).key(destination).key(k.groups()).key(k.idle_workers()).key(k.priority_sequence());
        call.arg(encoded).arg(msg.id.as_str()).arg(placement).arg(score).arg(group).arg(channel);
        call.arg(priority);
        if let (Some(key), Some(ttl)) = (unique_key, request.unique_ttl) {
            call.key(key).arg(ttl.as_secs().max(1));
        }
        call.key(k.events()).arg(events.arg(&msg.queue));
        Ok((call, msg))
    }
}

impl RedisBroker {
    /// Stores the plain task `msg` (see [`is_plain`]) with `enqueue_plain.lua`: Go's enqueue
    /// script's width and commands, and a wake-up when the task makes the pending list non-empty.
    async fn enqueue_plain(&self, msg: StoredTask) -> Result<()> {
        let encoded = encode_checked(&msg)?;
        let k = self.queue_keys(&msg.queue);
        let mut call = DirectCall::new(&SCRIPTS.enqueue_plain, 2);
        call.arg(k.task(&msg.id)).arg(k.pending());
        call.arg(encoded).arg(msg.id.as_str()).arg(unix_nanos(self.now())).arg(k.ready_channel());
        self.register_queue(&msg.queue).await?;
        let reply = call.run(&mut self.conn(), "enqueue").await?;
        if matches!(reply, 1 | 2) {
            self.pubsub().made_pending(&msg.queue);
        }
        self.registered_again_if_fresh(&msg.queue, reply);
        enqueue_result(msg, reply)
    }
}

/// How long a debounce mark outlives its task's due time. The mark counts only while the task it
/// names is still scheduled, so a longer life costs nothing but the key; this one lets a
/// forwarder up to an hour late still find the task to replace.
const DEBOUNCE_MARK_GRACE: Duration = Duration::from_secs(3600);

impl RedisBroker {
    /// Stores `request` in place of the task `replace` names, with `enqueue_replacing.lua`.
    /// `request` has passed [`EnqueueRequest::check_replacement`].
    async fn enqueue_replacing(&self, request: EnqueueRequest, replace: &Replace) -> Result<()> {
        let msg = request.message;
        checked_message_len(&msg)?;
        let k = self.queue_keys(&msg.queue);
        let (placement, score, channel) = match request.placement {
            Placement::Scheduled { process_at } => ("scheduled", unix_secs(process_at), self.namespace().due_channel()),
            _ => ("pending", unix_nanos(self.now()), k.ready_channel()),
        };
        let mut call = ScriptCall::new(&SCRIPTS.enqueue_replacing);
        call.key(k.task(&msg.id)).key(k.pending()).key(k.scheduled()).key(k.groups()).key(k.idle_workers());
        call.key(k.prioritized()).key(k.priority_sequence());
        let (mode, mark_lifetime, key) = match replace {
            Replace::Debounced(debounce) => {
                call.key(k.debounce(debounce.key()));
                ("debounce", debounce.window().saturating_add(DEBOUNCE_MARK_GRACE), debounce.key())
            }
            Replace::Waiting => ("replace", Duration::ZERO, ""),
            _ => return Err(Error::Unsupported { capability: "this kind of replacement" }),
        };
        call.arg(encode(&msg)).arg(msg.id.as_str()).arg(mode).arg(placement).arg(score).arg(channel);
        call.arg(k.prefix()).arg(k.group_prefix()).arg(k.finished_channel());
        call.arg(u64::try_from(mark_lifetime.as_millis()).unwrap_or(u64::MAX)).arg(key);
        call.arg(priority_arg(request.priority));
        call.key(k.events()).arg(self.event_caps_now().await?.arg(&msg.queue));
        self.register_queue(&msg.queue).await?;
        let reply: i64 = call.run(&mut self.conn(), "enqueue replacing").await?;
        if placement == "pending" && reply == 1 {
            self.pubsub().made_pending(&msg.queue);
        }
        match (mode, reply) {
            ("debounce", 1 | 2) | ("replace", 1) => Ok(()),
            ("debounce", 0) => Err(Error::TaskIdConflict { queue: msg.queue, id: msg.id }),
            ("replace", 0) => Err(Error::TaskNotFound { queue: msg.queue, id: msg.id }),
            ("replace", -1) => Err(Error::FailedPrecondition(format!(
                "task {} is neither pending nor scheduled: only a waiting task can be replaced",
                msg.id
            ))),
            ("replace", -2) => Err(asynq_core::steps::started_task_refused(&msg.id)),
            (_, other) => Err(unexpected("enqueue replacing", format!("unexpected reply {other}"))),
        }
    }
}

/// A task's priority as the scripts take it (`priority.lua`): "" for the default, else the
/// number.
fn priority_arg(priority: TaskPriority) -> String {
    if priority.is_default() { String::new() } else { priority.to_string() }
}

/// What `enqueue.lua` answered for `msg` (2: stored into an empty container, which the caller
/// reads first with [`RedisBroker::registered_again_if_fresh`]).
pub(crate) fn enqueue_result(msg: StoredTask, reply: i64) -> Result<()> {
    match reply {
        1 | 2 => Ok(()),
        0 => Err(Error::TaskIdConflict { queue: msg.queue, id: msg.id }),
        -1 => Err(Error::DuplicateTask { queue: msg.queue, type_name: msg.type_name }),
        -3 => Err(Error::FailedPrecondition(format!(
            "the uniqueness lock key {} holds a value of another type than a lock: nothing was stored",
            msg.unique_key.unwrap_or_default()
        ))),
        other => Err(unexpected("enqueue", format!("unexpected reply {other}"))),
    }
}

#[async_trait]
impl Enqueue for RedisBroker {
    async fn enqueue(&self, mut request: EnqueueRequest) -> Result<()> {
        request.check_replacement()?;
        request.check_priority()?;
        if let Some(replace) = request.replace.take() {
            return self.enqueue_replacing(request, &replace).await;
        }
        let pending = request.placement == Placement::Pending;
        let events = self.event_caps_now().await?;
        if is_plain(&request, &events) {
            return self.enqueue_plain(request.message).await;
        }
        let (call, msg) = self.enqueue_call(request, &events)?;
        self.register_queue(&msg.queue).await?;
        let reply = call.run(&mut self.conn(), "enqueue").await?;
        if pending && matches!(reply, 1 | 2) {
            self.pubsub().made_pending(&msg.queue);
        }
        self.registered_again_if_fresh(&msg.queue, reply);
        enqueue_result(msg, reply)
    }

    /// One pipeline per queue (a queue's keys share a Cluster slot), so a batch for one queue
    /// is one round trip.
    async fn enqueue_batch(&self, requests: Vec<EnqueueRequest>) -> Vec<Result<()>> {
        if requests.is_empty() {
            return Vec::new();
        }
        let now = self.now();
        let events = match self.event_caps_now().await {
            Ok(events) => events,
            Err(e) => return requests.iter().map(|_| Err(e.duplicate())).collect(),
        };
        let mut results: Vec<Option<Result<()>>> = Vec::with_capacity(requests.len());
        // Per queue, the tasks in request order, in `enqueue_batch.lua` calls of up to
        // `ENQUEUE_BATCH` tasks whatever their placement: the script stores them in order, so a
        // batch's outcome is that of the same enqueues one by one (which of two tasks with one
        // ID wins, which takes a lock, the pending order).
        let mut by_queue: BTreeMap<String, QueueCalls> = BTreeMap::new();
        // Tasks that replace others (debounced, or replacing one by ID) each take a script call
        // of their own, after the rest.
        let mut replacing = Vec::new();
        for (index, request) in requests.into_iter().enumerate() {
            results.push(None);
            if request.replace.is_some() {
                replacing.push((index, request));
                continue;
            }
            match BatchTask::new(request, self.namespace()) {
                Ok(task) => {
                    let queue = task.msg.queue.clone();
                    by_queue
                        .entry(queue.into_string())
                        .or_insert_with_key(|queue| {
                            let due = self.namespace().due_channel();
                            QueueCalls::new(self.queue_keys(queue), due, now, events.arg(queue))
                        })
                        .push(index, task);
                }
                Err(e) => results[index] = Some(Err(e)),
            }
        }
        let mut conn = self.conn();
        for (queue, calls) in by_queue {
            let pending = calls.makes_pending;
            let calls = calls.finish();
            if let Err(e) = self.register_queue(&queue).await {
                for batch in calls {
                    batch.items.iter().for_each(|(index, _)| results[*index] = Some(Err(e.duplicate())));
                }
                continue;
            }
            for (index, msg, code) in run_pipeline(&mut conn, calls).await {
                if let Ok(code) = code {
                    self.registered_again_if_fresh(&queue, code);
                }
                results[index] = Some(code.and_then(|code| enqueue_result(msg, code)));
            }
            if pending {
                self.pubsub().made_pending(&queue);
            }
        }
        for (index, request) in replacing {
            results[index] = Some(self.enqueue(request).await);
        }
        results.into_iter().map(|r| r.expect("every request has a result")).collect()
    }
}

/// One task of an `enqueue_batch`, checked and encoded for `enqueue_batch.lua`.
struct BatchTask {
    /// The message, its `unique_key` filled in for a unique task.
    msg: StoredTask,
    encoded: Vec<u8>,
    placement: Placement,
    /// The uniqueness lock's TTL in whole seconds, for a unique task.
    unique_ttl: Option<u64>,
    priority: TaskPriority,
}

impl BatchTask {
    fn new(request: EnqueueRequest, namespace: &Namespace) -> Result<Self> {
        request.check_priority()?;
        let EnqueueRequest { message: mut msg, placement, unique_ttl, priority, .. } = request;
        if unique_ttl.is_some() {
            msg.unique_key = Some(namespace.queue(&msg.queue).unique(&msg.type_name, &msg.payload));
        }
        let encoded = encode_checked(&msg)?;
        Ok(Self { msg, encoded, placement, unique_ttl: unique_ttl.map(|ttl| ttl.as_secs().max(1)), priority })
    }

    /// Pending, not unique and of the default priority: a task `enqueue_batch.lua` takes
    /// without a placement record.
    fn is_plain(&self) -> bool {
        self.placement == Placement::Pending && self.unique_ttl.is_none() && self.priority.is_default()
    }
}

/// One queue's share of an `enqueue_batch`: its `enqueue_batch.lua` calls, in request order.
struct QueueCalls {
    keys: QueueKeys,
    /// The namespace's due-notice channel.
    due_channel: String,
    now: SystemTime,
    /// The queue's event log cap, or "".
    event_cap: String,
    calls: Vec<BatchCall>,
    /// The tasks of the call being filled, with their request indexes.
    open: Vec<(usize, BatchTask)>,
    /// The bytes of task messages in `open`.
    open_bytes: usize,
    /// The grouped tasks in `open`.
    open_grouped: usize,
    /// Whether some task is to be pending (rather than scheduled or grouped).
    makes_pending: bool,
}

impl QueueCalls {
    fn new(keys: QueueKeys, due_channel: String, now: SystemTime, event_cap: String) -> Self {
        Self {
            keys,
            due_channel,
            now,
            event_cap,
            calls: Vec::new(),
            open: Vec::new(),
            open_bytes: 0,
            open_grouped: 0,
            makes_pending: false,
        }
    }

    /// Adds the next task, starting a new call once the open one holds `ENQUEUE_BATCH` tasks
    /// (`ENQUEUE_BATCH_GROUPED` grouped ones, for a grouped task) or would carry more than
    /// `BATCH_BYTES` of messages.
    fn push(&mut self, index: usize, task: BatchTask) {
        let len = task.encoded.len();
        let grouped = matches!(task.placement, Placement::Grouped { .. });
        if !self.open.is_empty()
            && (self.open.len() == ENQUEUE_BATCH
                || (grouped && self.open_grouped == ENQUEUE_BATCH_GROUPED)
                || self.open_bytes + len > BATCH_BYTES)
        {
            self.close();
        }
        self.open_bytes += len;
        self.open_grouped += usize::from(grouped);
        self.makes_pending |= task.placement == Placement::Pending;
        self.open.push((index, task));
    }

    /// Every call, the open one closed.
    fn finish(mut self) -> Vec<BatchCall> {
        if !self.open.is_empty() {
            self.close();
        }
        self.calls
    }

    /// Turns the open tasks into one `enqueue_batch.lua` call: a pair (ID, message) per task,
    /// then a placement record per task that is not plain pending.
    fn close(&mut self) {
        let (k, now) = (&self.keys, self.now);
        let tasks = std::mem::take(&mut self.open);
        self.open_bytes = 0;
        self.open_grouped = 0;
        let mut call = ScriptCall::new(&SCRIPTS.enqueue_batch);
        call.key(k.pending()).key(k.scheduled()).key(k.groups()).key(k.idle_workers());
        call.key(k.prioritized()).key(k.priority_sequence()).key(k.events());
        call.arg(unix_nanos(now)).arg(unix_secs(now)).arg(k.task_prefix()).arg(k.group_prefix());
        call.arg(k.ready_channel()).arg(&self.due_channel).arg(tasks.len());
        let mut records = Vec::new();
        let mut items = Vec::with_capacity(tasks.len());
        for (n, (index, task)) in (1usize..).zip(tasks) {
            let plain = task.is_plain();
            call.arg(task.msg.id.as_str()).arg(task.encoded);
            if !plain {
                let lock = task.unique_ttl.map(|ttl| (task.msg.unique_key.clone().unwrap_or_default(), ttl));
                records.push((n, task.placement, lock, task.priority));
            }
            items.push((index, task.msg));
        }
        for (n, placement, lock, priority) in records {
            let (placement, score, group) = match placement {
                Placement::Pending => ("pending", String::new(), String::new()),
                Placement::Scheduled { process_at } => ("scheduled", unix_secs(process_at).to_string(), String::new()),
                Placement::Grouped { group } => ("group", String::new(), group.into_string()),
            };
            let (lock, ttl) = lock.map_or((String::new(), String::new()), |(key, ttl)| (key, ttl.to_string()));
            call.arg(n).arg(placement).arg(score).arg(group).arg(lock).arg(ttl).arg(priority_arg(priority));
        }
        call.arg(self.event_cap.as_str());
        self.calls.push(BatchCall { call, context: "enqueue batch", items });
    }
}
