//! Inspect for [`RedisBroker`]: queues, tasks, history, servers and backend information for operators.

use super::memory_estimates::Estimate;
use super::*;
use asynq_core::broker::Aggregate;
use asynq_core::{GroupName, Progress, QueueName, TaskId, TaskPriority};

/// Reads a text field of a task hash, as a script returned it (false when absent).
fn read_text(value: &Value) -> Option<String> {
    Option::<String>::from_redis_value_ref(value).ok().flatten()
}

/// Reads a task hash's `progress` field, as a script returned it (false when absent).
fn read_progress(value: &Value) -> Option<Progress> {
    Option::<Vec<u8>>::from_redis_value_ref(value).ok().flatten().and_then(|bytes| crate::progress::decode(&bytes))
}

/// Reads a task hash's `priority` field, as a script returned it (false when absent): the
/// default for none, and for a value that is no priority, which no dequeue orders either.
pub(crate) fn read_priority(value: &Value) -> TaskPriority {
    Option::<i32>::from_redis_value_ref(value)
        .ok()
        .flatten()
        .and_then(|n| TaskPriority::new(n).ok())
        .unwrap_or_default()
}

/// Reads an integer that Redis returned as a number or a decimal string.
fn int(value: &Value) -> i64 {
    i64::from_redis_value_ref(value).unwrap_or(0)
}

/// How many groups' sizes a listing of aggregating tasks reads in one round trip.
const GROUP_SIZE_SLICE: usize = 200;

impl RedisBroker {
    /// One page of `container` (read as `kind`, see `list_tasks.lua`), as tasks in `state`.
    async fn list_page(
        &self,
        k: &QueueKeys,
        container: String,
        kind: &str,
        state: TaskState,
        page: Page,
        now: SystemTime,
    ) -> Result<Vec<TaskInfo>> {
        let size = page.size.max(1);
        self.list_range(k, container, kind, state, size.saturating_mul(page.number), size, now).await
    }

    /// One page of the queue's aggregating tasks, by group name and then score: the group names
    /// ([`Aggregate::group_names`]), then, in name order, the sizes of the groups before the
    /// page and of those it spans ([`GROUP_SIZE_SLICE`] `ZCARD`s a round trip), then the page's
    /// tasks from the groups it spans, one call per group. No call reads every group (one
    /// script used to, 100 000 groups holding Redis for hundreds of milliseconds), and an early
    /// page reads few sizes. Not one atomic read: a group that changes between the calls shifts
    /// the page by its change.
    async fn list_aggregating(&self, queue: &QueueName, k: &QueueKeys, page: Page) -> Result<Vec<TaskInfo>> {
        let (size, now) = (page.size.max(1), self.now());
        let mut skip = size.saturating_mul(page.number);
        let mut tasks = Vec::new();
        let groups = Aggregate::group_names(self, queue).await?;
        for slice in groups.chunks(GROUP_SIZE_SLICE) {
            let mut sizes = redis::pipe();
            for group in slice {
                sizes.zcard(k.group(group));
            }
            let sizes: Vec<usize> =
                sizes.query_async(&mut self.conn()).await.map_err(|e| crate::error::broker_error("group sizes", e))?;
            for (group, group_size) in slice.iter().zip(sizes) {
                if skip >= group_size {
                    skip -= group_size;
                    continue;
                }
                let wanted = size - tasks.len();
                let container = k.group(group);
                tasks.extend(self.list_range(k, container, "zset", TaskState::Aggregating, skip, wanted, now).await?);
                if tasks.len() >= size {
                    return Ok(tasks);
                }
                skip = 0;
            }
        }
        Ok(tasks)
    }

    /// The `size` tasks of `container` (read as `kind`, see `list_tasks.lua`) from position
    /// `first`, as tasks in `state`.
    #[allow(clippy::too_many_arguments)]
    async fn list_range(
        &self,
        k: &QueueKeys,
        container: String,
        kind: &str,
        state: TaskState,
        first: usize,
        size: usize,
        now: SystemTime,
    ) -> Result<Vec<TaskInfo>> {
        let mut invocation = ScriptCall::new(&SCRIPTS.list_tasks);
        invocation.key(container).key(k.lease()).key(k.prioritized());
        invocation.arg(kind).arg(first).arg(size).arg(k.task_prefix());
        let values: Vec<Value> = invocation.run(&mut self.conn(), "list tasks").await?;
        let now_secs = unix_secs(now);
        let mut tasks = Vec::with_capacity(values.len() / 7);
        for entry in values.chunks_exact(7) {
            let Ok(bytes) = Vec::<u8>::from_redis_value_ref(&entry[0]) else { continue };
            let Ok(msg) = decode(&bytes) else { continue };
            let result = Option::<Vec<u8>>::from_redis_value_ref(&entry[1]).ok().flatten().map(Bytes::from);
            let score = Option::<i64>::from_redis_value_ref(&entry[2]).ok().flatten();
            // Whole seconds, or half a second more for a task no handler started (dequeue.lua).
            let lease = Option::<f64>::from_redis_value_ref(&entry[3]).ok().flatten().map(|score| score.floor() as i64);
            let next_process_at = match state {
                TaskState::Pending => Some(now),
                TaskState::Scheduled | TaskState::Retry => score.map(from_unix_secs),
                _ => None,
            };
            let mut info = TaskInfo::new(&msg, state, next_process_at, result);
            info.is_orphaned = state == TaskState::Active && lease.is_some_and(|expiry| expiry <= now_secs);
            info.progress = read_progress(&entry[4]);
            info.debounce_key = read_text(&entry[5]);
            info.priority = read_priority(&entry[6]);
            tasks.push(info);
        }
        Ok(tasks)
    }

    /// Go asynq's estimate of the memory `queue` takes, reused for a while (see
    /// `memory_estimates.rs`).
    async fn memory_estimate(&self, queue: &QueueName, k: &QueueKeys) -> Result<u64> {
        let now = self.now();
        match self.inner.memory_estimates.lookup(queue, now) {
            Estimate::Reuse(bytes) => Ok(bytes),
            Estimate::Take => {
                let bytes = self.memory_usage(k).await?;
                self.inner.memory_estimates.record(queue, now, bytes);
                Ok(bytes)
            }
        }
    }

    /// Go asynq's estimate of the memory `k`'s queue takes (`memory_usage.lua`); 0 when the
    /// server refuses `MEMORY USAGE`.
    async fn memory_usage(&self, k: &QueueKeys) -> Result<u64> {
        let mut call = ScriptCall::new(&SCRIPTS.memory_usage);
        call.key(k.active()).key(k.pending()).key(k.scheduled()).key(k.retry()).key(k.archived());
        call.key(k.completed()).key(k.groups()).key(k.prioritized());
        call.arg(k.task_prefix()).arg(MEMORY_SAMPLE_TASKS).arg(MEMORY_SAMPLE_GROUPS).arg(k.group_prefix());
        let bytes: i64 = call.run(&mut self.conn(), "memory usage").await?;
        Ok(bytes.max(0) as u64)
    }
}

#[async_trait]
impl Inspect for RedisBroker {
    /// Reads only, in two round trips whatever the number of servers: the live server keys,
    /// then every server's record and workers at once (concurrent requests, which the
    /// connection pipelines). Expired entries are left for the heartbeats to prune
    /// ([`ServerState::write_server_state`]), so that a scrape or a listing writes nothing.
    async fn servers(&self) -> Result<Vec<(ServerInfo, Vec<WorkerInfo>)>> {
        let now = unix_secs(self.now());
        let conn = self.conn();
        let fail = |e| broker_error("list servers", e);
        let live: Vec<String> =
            conn.clone().zrangebyscore(self.namespace().all_servers(), now, "+inf").await.map_err(fail)?;
        let records = futures::future::try_join_all(live.iter().map(|server_key| {
            let (mut info_conn, mut workers_conn) = (conn.clone(), conn.clone());
            // A server key of another shape (written by hand) has no workers key to read.
            let workers_key = self.namespace().workers_of(server_key);
            async move {
                let info = info_conn.get::<_, Option<Vec<u8>>>(server_key);
                let workers = async move {
                    match workers_key {
                        Some(key) => workers_conn.hvals::<_, Vec<Vec<u8>>>(key).await,
                        None => Ok(Vec::new()),
                    }
                };
                futures::try_join!(info, workers)
            }
        }))
        .await
        .map_err(fail)?;
        let mut servers = Vec::new();
        for (server_key, (info, values)) in live.iter().zip(records) {
            let Some(info) = info else { continue };
            let Ok(info) = proto::ServerInfo::decode(info.as_slice()) else {
                tracing::warn!(key = %server_key, "skipping an undecodable server record");
                continue;
            };
            let workers = values
                .iter()
                .filter_map(|v| proto::WorkerInfo::decode(v.as_slice()).ok())
                .map(WorkerInfo::from)
                .collect();
            servers.push((ServerInfo::from(info), workers));
        }
        servers.sort_by(|(a, _), (b, _)| (&a.host, a.pid, &a.server_id).cmp(&(&b.host, b.pid, &b.server_id)));
        Ok(servers)
    }

    async fn queues(&self) -> Result<Vec<QueueName>> {
        let names: Vec<String> =
            self.conn().smembers(self.namespace().all_queues()).await.map_err(|e| broker_error("list queues", e))?;
        let mut queues: Vec<QueueName> = names
            .into_iter()
            .filter_map(|name| {
                // Go registers any non-blank name; ours cannot address one our rules refuse.
                QueueName::new(name.as_str())
                    .inspect_err(
                        |e| tracing::warn!(queue = name, error = %e, "skipping a queue whose name is not ours"),
                    )
                    .ok()
            })
            .collect();
        queues.sort();
        Ok(queues)
    }

    async fn queue_info(&self, queue: &QueueName) -> Result<QueueInfo> {
        self.require_queue(queue).await?;
        let now = self.now();
        let k = self.queue_keys(queue);
        let date = utc_date(now);
        let mut invocation = ScriptCall::new(&SCRIPTS.queue_stats);
        invocation.key(k.pending()).key(k.active()).key(k.scheduled()).key(k.retry()).key(k.archived());
        invocation.key(k.completed()).key(k.processed_on(&date)).key(k.failed_on(&date));
        invocation.key(k.processed_total()).key(k.failed_total()).key(k.paused()).key(k.groups());
        invocation.key(k.workflow_waiting()).key(k.prioritized());
        invocation.arg(k.task_prefix()).arg(k.group_prefix());
        let mut values: Vec<Value> = invocation.run(&mut self.conn(), "queue info").await?;
        if values.get(13).is_some_and(|aggregating| int(aggregating) < 0) {
            // Groups that writers other than our scripts (Go's producers) added: bring the
            // index in step, in bounded calls, and count again.
            self.reconcile_group_index(queue).await?;
            values = invocation.run(&mut self.conn(), "queue info").await?;
        }
        if values.len() != 15 {
            return Err(unexpected("queue info", format!("{} values instead of 15", values.len())));
        }
        let n = |i: usize| int(&values[i]).max(0);
        let mut info = QueueInfo::empty(queue, now);
        info.pending = n(0) as usize;
        info.active = n(1) as usize;
        info.scheduled = n(2) as usize;
        info.retry = n(3) as usize;
        info.archived = n(4) as usize;
        info.completed = n(5) as usize;
        info.processed = n(6) as u64;
        info.failed = n(7) as u64;
        info.processed_total = n(8) as u64;
        info.failed_total = n(9) as u64;
        info.paused = n(10) != 0;
        let oldest = n(11);
        if oldest != 0 {
            info.latency = now.duration_since(from_unix_nanos(oldest)).unwrap_or_default();
        }
        info.groups = n(12) as usize;
        // Still out of step (writers at work meanwhile): the index's count, the best known.
        info.aggregating = if int(&values[13]) < 0 { (-1 - int(&values[13])) as usize } else { n(13) as usize };
        info.waiting = n(14) as usize;
        info.size = info.sum_of_states();
        info.memory_usage = self.memory_estimate(queue, &k).await?;
        Ok(info)
    }

    async fn task_info(&self, queue: &QueueName, id: &TaskId) -> Result<TaskInfo> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        let mut invocation = ScriptCall::new(&SCRIPTS.task_info);
        invocation.key(k.task(id)).arg(id.as_str()).arg(unix_secs(self.now())).arg(k.prefix());
        let values: Vec<Value> = invocation.run(&mut self.conn(), "task info").await?;
        let [msg, state, next, result, progress, debounce, priority, parked, steps] = values.as_slice() else {
            return Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() });
        };
        let msg = decode(&Vec::<u8>::from_redis_value_ref(msg).map_err(|e| unexpected("task info", e))?)?;
        let state: String = String::from_redis_value_ref(state).map_err(|e| unexpected("task info", e))?;
        let state = state.parse::<TaskState>().map_err(|e| unexpected("task info", e))?;
        let next = int(next);
        let result = Option::<Vec<u8>>::from_redis_value_ref(result).ok().flatten().map(Bytes::from);
        let mut info = TaskInfo::new(&msg, state, (next != 0).then(|| from_unix_secs(next)), result);
        info.progress = read_progress(progress);
        info.debounce_key = read_text(debounce);
        info.priority = read_priority(priority);
        crate::step_fields::read_into(&mut info, parked, steps);
        Ok(info)
    }

    async fn list_tasks(&self, queue: &QueueName, state: TaskState, page: Page) -> Result<Vec<TaskInfo>> {
        self.require_queue(queue).await?;
        let now = self.now();
        let k = self.queue_keys(queue);
        let (container, kind) = match state {
            TaskState::Pending => (k.pending(), "pending"),
            TaskState::Active => (k.active(), "list"),
            TaskState::Scheduled => (k.scheduled(), "zset"),
            TaskState::Retry => (k.retry(), "zset"),
            TaskState::Archived => (k.archived(), "zset"),
            TaskState::Completed => (k.completed(), "zset"),
            TaskState::Aggregating => return self.list_aggregating(queue, &k, page).await,
            TaskState::Waiting => (k.workflow_waiting(), "zset"),
        };
        self.list_page(&k, container, kind, state, page, now).await
    }

    async fn list_group_tasks(&self, queue: &QueueName, group: &GroupName, page: Page) -> Result<Vec<TaskInfo>> {
        self.require_queue(queue).await?;
        let k = self.queue_keys(queue);
        self.list_page(&k, k.group(group), "zset", TaskState::Aggregating, page, self.now()).await
    }

    async fn history(&self, queue: &QueueName, days: usize) -> Result<Vec<DailyStats>> {
        DailyStats::validate_days(days)?;
        self.require_queue(queue).await?;
        let now = self.now();
        let k = self.queue_keys(queue);
        let dates: Vec<String> =
            (0..days as u64).map(|day| utc_date(now - Duration::from_secs(day * 24 * 60 * 60))).collect();
        // All the keys share the queue's slot, so one MGET serves a Cluster too.
        let mut mget = redis::cmd("MGET");
        for date in &dates {
            mget.arg(k.processed_on(date)).arg(k.failed_on(date));
        }
        let values: Vec<Value> = mget.query_async(&mut self.conn()).await.map_err(|e| broker_error("history", e))?;
        if values.len() != 2 * dates.len() {
            return Err(unexpected("history", format!("{} values for {} keys", values.len(), 2 * dates.len())));
        }
        let count = |v: &Value| int(v).max(0) as u64;
        Ok(dates
            .into_iter()
            .zip(values.chunks_exact(2))
            .map(|(date, pair)| DailyStats {
                queue: queue.clone(),
                date,
                processed: count(&pair[0]),
                failed: count(&pair[1]),
            })
            .collect())
    }

    async fn backend_info(&self) -> Result<BackendInfo> {
        let info = crate::backend::backend_info(&mut self.conn(), self.kind()).await?;
        Ok(info.with_namespace(self.namespace().as_str()))
    }

    async fn queue_location(&self, queue: &QueueName) -> Result<Option<QueueLocation>> {
        self.require_queue(queue).await?;
        if self.kind() != crate::backend::CLUSTER {
            return Ok(None);
        }
        crate::backend::queue_location(&mut self.conn(), &self.queue_keys(queue)).await.map(Some)
    }

    async fn pause_queue(&self, queue: &QueueName) -> Result<()> {
        let set: bool = redis::cmd("SETNX")
            .arg(self.queue_keys(queue).paused())
            .arg(unix_secs(self.now()))
            .query_async(&mut self.conn())
            .await
            .map_err(|e| broker_error("pause queue", e))?;
        if set { Ok(()) } else { Err(Error::FailedPrecondition(format!("queue {queue:?} is already paused"))) }
    }

    async fn unpause_queue(&self, queue: &QueueName) -> Result<()> {
        let k = self.queue_keys(queue);
        let mut conn = self.conn();
        let deleted: i64 = conn.del(k.paused()).await.map_err(|e| broker_error("unpause queue", e))?;
        if deleted != 1 {
            return Err(Error::FailedPrecondition(format!("queue {queue:?} is not paused")));
        }
        // Idle servers may be waiting on the queue's pending tasks.
        let _: i64 = conn.publish(k.ready_channel(), "").await.map_err(|e| broker_error("unpause queue", e))?;
        self.pubsub().made_pending(queue);
        Ok(())
    }
}
