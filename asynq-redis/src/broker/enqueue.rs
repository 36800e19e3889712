//! Enqueue for [`RedisBroker`]: one `enqueue.lua` call per task, and batches as a pipeline of script calls per queue.

use super::*;

impl RedisBroker {
    /// The `enqueue.lua` call that stores `request`, with the message it stores (its
    /// `unique_key` filled in for unique tasks).
    fn enqueue_call(&self, request: EnqueueRequest) -> Result<(ScriptCall, TaskMessage)> {
        self.enqueue_call_with(&SCRIPTS.enqueue, request)
    }

    /// As [`RedisBroker::enqueue_call`], calling `script`, which takes `enqueue.lua`'s KEYS and
    /// ARGV first (callers may append their own).
    pub(crate) fn enqueue_call_with(
        &self,
        script: &'static Script,
        request: EnqueueRequest,
    ) -> Result<(ScriptCall, TaskMessage)> {
        let mut msg = request.message;
        validate_queue_name(&msg.queue)?;
        checked_message_len(&msg)?;
        let k = QueueKeys::new(&msg.queue);
        let unique_key = request.unique_ttl.map(|_| k.unique(&msg.type_name, &msg.payload));
        if let Some(key) = &unique_key {
            msg.unique_key = key.clone();
        }
        let now = self.now();
        let (placement, destination, score, group) = match &request.placement {
            Placement::Pending => ("pending", k.pending(), unix_nanos(now), String::new()),
            Placement::Scheduled { process_at } => ("scheduled", k.scheduled(), unix_secs(*process_at), String::new()),
            Placement::Grouped { group } => ("group", k.group(group), unix_secs(now), group.clone()),
        };
        let mut call = ScriptCall::new(script);
        call.key(k.task(&msg.id)).key(destination).key(k.groups()).key(k.idle_workers());
        call.arg(encode(&msg)).arg(&msg.id).arg(placement).arg(score).arg(group).arg(k.ready_channel());
        if let (Some(key), Some(ttl)) = (unique_key, request.unique_ttl) {
            call.key(key).arg(ttl.as_secs().max(1));
        }
        Ok((call, msg))
    }
}

/// What `enqueue.lua` answered for `msg`.
pub(crate) fn enqueue_result(msg: TaskMessage, reply: i64) -> Result<()> {
    match reply {
        1 => Ok(()),
        0 => Err(Error::TaskIdConflict { queue: msg.queue, id: msg.id }),
        -1 => Err(Error::DuplicateTask { queue: msg.queue, type_name: msg.type_name }),
        -3 => Err(Error::FailedPrecondition(format!(
            "the uniqueness lock key {} holds a value of another type than a lock: nothing was stored",
            msg.unique_key
        ))),
        other => Err(unexpected("enqueue", format!("unexpected reply {other}"))),
    }
}

#[async_trait]
impl Enqueue for RedisBroker {
    async fn enqueue(&self, request: EnqueueRequest) -> Result<()> {
        let (call, msg) = self.enqueue_call(request)?;
        self.register_queue(&msg.queue).await?;
        let reply = call.run(&mut self.conn(), "enqueue").await?;
        enqueue_result(msg, reply)
    }

    /// One pipeline per queue (a queue's keys share a Cluster slot), so a batch for one queue
    /// is one round trip.
    async fn enqueue_batch(&self, requests: Vec<EnqueueRequest>) -> Vec<Result<()>> {
        let now = self.now();
        let mut results: Vec<Option<Result<()>>> = Vec::with_capacity(requests.len());
        // Per queue, the calls in request order: runs of plain pending tasks go in one
        // `enqueue_batch.lua` call each (up to `ENQUEUE_BATCH` tasks), every other task in an
        // `enqueue.lua` call of its own. Keeping the order keeps a batch's outcome that of the
        // same enqueues one by one (which of two tasks with one ID wins, the pending order).
        let mut by_queue: BTreeMap<String, QueueCalls> = BTreeMap::new();
        for (index, request) in requests.into_iter().enumerate() {
            results.push(None);
            if request.placement == Placement::Pending && request.unique_ttl.is_none() {
                if let Err(e) = validate_queue_name(&request.message.queue).and(checked_message_len(&request.message)) {
                    results[index] = Some(Err(e));
                    continue;
                }
                let msg = request.message;
                by_queue.entry(msg.queue.clone()).or_default().plain.push((index, msg));
                continue;
            }
            match self.enqueue_call(request) {
                Ok((call, msg)) => {
                    let queue = by_queue.entry(msg.queue.clone()).or_default();
                    queue.flush_plain(&msg.queue, now);
                    queue.calls.push(BatchCall { call, context: "enqueue", items: vec![(index, msg)] });
                }
                Err(e) => results[index] = Some(Err(e)),
            }
        }
        let mut conn = self.conn();
        for (queue, mut calls) in by_queue {
            calls.flush_plain(&queue, now);
            if let Err(e) = self.register_queue(&queue).await {
                for batch in calls.calls {
                    batch.items.iter().for_each(|(index, _)| results[*index] = Some(Err(e.duplicate())));
                }
                continue;
            }
            for (index, msg, code) in run_pipeline(&mut conn, calls.calls).await {
                results[index] = Some(code.and_then(|code| enqueue_result(msg, code)));
            }
        }
        results.into_iter().map(|r| r.expect("every request has a result")).collect()
    }
}

/// The script calls of one queue's share of an `enqueue_batch`, in request order.
#[derive(Default)]
struct QueueCalls {
    calls: Vec<BatchCall>,
    /// Plain pending tasks not yet in a call.
    plain: Vec<(usize, TaskMessage)>,
}

impl QueueCalls {
    /// Puts the plain pending tasks collected so far into `enqueue_batch.lua` calls.
    fn flush_plain(&mut self, queue: &str, now: SystemTime) {
        let k = QueueKeys::new(queue);
        let new_call = || {
            let mut call = ScriptCall::new(&SCRIPTS.enqueue_batch);
            call.key(k.pending()).key(k.idle_workers());
            call.arg(unix_nanos(now)).arg(k.task_prefix()).arg(k.ready_channel());
            call
        };
        // Each message is encoded once; its length decides where a call ends.
        let (mut call, mut items, mut bytes) = (new_call(), Vec::new(), 0);
        for (index, msg) in std::mem::take(&mut self.plain) {
            let encoded = encode(&msg);
            if !items.is_empty() && (items.len() == ENQUEUE_BATCH || bytes + encoded.len() > ENQUEUE_BATCH_BYTES) {
                let full = std::mem::replace(&mut call, new_call());
                self.calls.push(BatchCall { call: full, context: "enqueue batch", items: std::mem::take(&mut items) });
                bytes = 0;
            }
            bytes += encoded.len();
            call.arg(&msg.id).arg(encoded);
            items.push((index, msg));
        }
        if !items.is_empty() {
            self.calls.push(BatchCall { call, context: "enqueue batch", items });
        }
    }
}
