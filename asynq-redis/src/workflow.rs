//! Workflows for [`RedisBroker`] (see `scripts/workflow.lua` for the keys).
//!
//! Storing: `workflow_store.lua` stores the tasks of one queue, up to [`STORE_BATCH`] per call,
//! all or nothing; a workflow of one queue and at most that many tasks is one call. A larger one
//! runs its calls one after the other, every call holding waiting tasks before any holding roots
//! (no call holds both), so that no task runs before every task waiting for it is stored
//! ([`store_order`]); when a call is refused (a task ID taken) or fails, `workflow_discard.lua`
//! takes back what the earlier calls stored, as far as it still can.
//!
//! Settling: a workflow task's final outcome (it succeeds, or is archived) is written by
//! `workflow_settle.lua`, which wraps `done_batch.lua` or `settle_batch.lua` and, in the same
//! step, records the outcome and passes it on to the tasks waiting for it: at once when they are
//! few and all in its queue, otherwise through the queue's outbox. [`Workflows::relay`] empties
//! the outboxes: for each settled task, `workflow_pass.lua` in each dependent's queue (its own
//! Cluster slot), then the task's children list and outbox entry are deleted. Each step is
//! idempotent (a dependent hears of each parent once), so a relay cut short by a crash is done
//! again by the next one, and nothing is lost or released twice.
//!
//! Who relays: the broker itself spawns nothing. Settling workflow tasks that leave outbox
//! entries marks their queue and wakes [`Workflows::relay_wanted`]; a server's relayer, on this
//! broker, then relays the marked queues at once ([`Workflows::relay_settled`], see `wanted.rs`),
//! and its shutdown stops it. Servers also relay their queues every second, for what Go servers
//! and operators settle. So a process without a server (a flow producer, an inspector that
//! archives or deletes parents) leaves the dependents in the outbox for a server's periodic
//! relay: within a second while a server serves the parent's queue.

use crate::RedisBroker;
use crate::batch::BatchCall;
use crate::broker::{changed_keys, checked_message_len, encode};
use crate::connection::Connection;
use crate::error::{broker_error, unexpected};
use crate::events::EventCaps;
use crate::keys::QueueKeys;
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::Outcome;
use asynq_core::broker::Page;
use asynq_core::broker::Workflows;
use asynq_core::time::from_unix_secs;
use asynq_core::time::{unix_nanos, unix_secs};
use asynq_core::workflow::{
    CancelMark, OnParentFailure, PARENT_FAILED_ERROR, ParentOutcome, ParentResult, PlannedTask, TaskRef,
    WORKFLOW_CANCELLED_ERROR, WORKFLOW_HEADER, WORKFLOW_RESULT_TTL, WorkflowCancellation, WorkflowNode, WorkflowPlan,
    WorkflowSummary,
};
use asynq_core::{Error, Placement, QueueName, Result, StoredTask, TaskId, WorkflowId};
use bytes::Bytes;
use futures::future::try_join_all;
use redis::{AsyncCommands, Script};
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;
use std::time::SystemTime;

mod relay;
mod store_order;
mod wanted;

pub(crate) use wanted::RelayWanted;

/// `workflow_store.lua` stores at most this many tasks per call, so that no call is long.
const STORE_BATCH: usize = 100;
/// [`Workflows::relay`] goes round the outboxes at most this many times per call.
const RELAY_ROUNDS: usize = 8;

/// Per queue, the `HSCAN` cursor over `<ns>:{q}:wf:open` where this process's next sweep starts.
pub(crate) type SweepCursors = std::sync::Mutex<HashMap<String, String>>;

/// The script file `scripts/<file>.lua` as the body of `local function settle(KEYS, ARGV)`.
macro_rules! as_settle_function {
    ($file:literal) => {
        concat!("local function settle(KEYS, ARGV)\n", include_str!(concat!("scripts/", $file, ".lua")), "\nend\n")
    };
}

/// The preludes of the scripts that pass outcomes on.
macro_rules! preludes {
    () => {
        concat!(
            include_str!("scripts/common.lua"),
            include_str!("scripts/message.lua"),
            include_str!("scripts/manage_common.lua"),
            include_str!("scripts/events.lua"),
            include_str!("scripts/priority.lua"),
            include_str!("scripts/workflow.lua"),
        )
    };
}

struct WorkflowScripts {
    store: Script,
    discard: Script,
    pass: Script,
    sweep: Script,
    cancel: Script,
    settle_done: Script,
    settle_others: Script,
}

static SCRIPTS: LazyLock<WorkflowScripts> = LazyLock::new(|| WorkflowScripts {
    store: Script::new(concat!(
        include_str!("scripts/common.lua"),
        include_str!("scripts/message.lua"),
        include_str!("scripts/events.lua"),
        include_str!("scripts/workflow_store.lua"),
    )),
    discard: Script::new(include_str!("scripts/workflow_discard.lua")),
    pass: Script::new(concat!(preludes!(), include_str!("scripts/workflow_pass.lua"))),
    sweep: Script::new(concat!(preludes!(), include_str!("scripts/workflow_sweep.lua"))),
    cancel: Script::new(concat!(preludes!(), include_str!("scripts/workflow_cancel.lua"))),
    settle_done: Script::new(concat!(
        preludes!(),
        as_settle_function!("done_batch"),
        include_str!("scripts/workflow_settle.lua")
    )),
    settle_others: Script::new(concat!(
        preludes!(),
        as_settle_function!("settle_batch"),
        include_str!("scripts/workflow_settle.lua")
    )),
});

/// An outcome as `workflow.lua` stores it: "1" and the result, "2" (succeeded, no result), or
/// "0" and the error.
fn read_outcome(stored: &[u8]) -> ParentOutcome {
    match stored.split_first() {
        Some((b'1', result)) => ParentOutcome::Succeeded { result: Some(Bytes::copy_from_slice(result)) },
        Some((b'2', _)) => ParentOutcome::Succeeded { result: None },
        Some((b'0', error)) => ParentOutcome::Failed { error: String::from_utf8_lossy(error).into_owned() },
        _ => ParentOutcome::Unknown,
    }
}

/// A task's entry in a workflow's record (`<ns>:workflow:<id>`): its queue, its ID and its
/// parents' positions in the record, comma-separated, one per line, then its DAG name for a task
/// of a DAG (the rest of the entry, so a name may hold anything).
fn record_entry(node: &WorkflowNode) -> String {
    let parents: Vec<String> = node.parents.iter().map(usize::to_string).collect();
    let entry = format!("{}\n{}\n{}", node.task.queue, node.task.id, parents.join(","));
    match &node.name {
        Some(name) => format!("{entry}\n{name}"),
        None => entry,
    }
}

/// The task at `position` of a workflow's record, from its entry; one of two lines (the record
/// before it kept edges) has no parents, one of three (before it kept names) no name. `None` for
/// an entry naming a bad queue or ID, or a parent that is not before it.
fn read_record_entry(entry: &str, position: usize) -> Option<WorkflowNode> {
    let mut lines = entry.splitn(4, '\n');
    let queue = QueueName::new(lines.next()?).ok()?;
    let id = TaskId::new(lines.next()?).ok()?;
    let parents = match lines.next() {
        None | Some("") => Vec::new(),
        Some(parents) => parents
            .split(',')
            .map(|parent| parent.parse().ok().filter(|&parent| parent < position))
            .collect::<Option<_>>()?,
    };
    let name = lines.next().map(str::to_owned);
    Some(WorkflowNode { task: TaskRef { queue, id }, parents, name, type_name: None })
}

/// What a cancel recorded it did, from its mark (`<archived>,<stopping>`); `None` for a mark
/// whose cancel has not recorded it (empty) or one that cannot be read.
fn read_cancel_mark(mark: &str) -> Option<WorkflowCancellation> {
    let (archived, stopping) = mark.split_once(',')?;
    Some(WorkflowCancellation { archived: archived.parse().ok()?, stopping: stopping.parse().ok()? })
}

/// Whether settling `msg` with `outcome` passes a workflow outcome on: it is a workflow task
/// and the outcome is final.
pub(crate) fn passes_outcome_on(msg: &StoredTask, outcome: &Outcome) -> bool {
    msg.headers.contains_key(WORKFLOW_HEADER)
        && matches!(outcome, Outcome::Done | Outcome::Complete | Outcome::Archive { .. })
}

impl RedisBroker {
    /// A call of `script` with the KEYS and ARGV `workflow.lua`'s functions take for queue `k`
    /// (see `workflow_pass.lua`'s KEYS and ARGV[1..11]), to which the script's own follow.
    fn workflow_call(
        &self,
        script: &'static Script,
        queue: &str,
        k: &QueueKeys,
        now: SystemTime,
        events: &EventCaps,
    ) -> ScriptCall {
        let mut call = ScriptCall::new(script);
        call.key(k.pending()).key(k.archived()).key(k.idle_workers()).key(k.events()).key(k.workflow_outbox());
        call.key(k.workflow_waiting()).key(k.workflow_open());
        let now_secs = unix_secs(now);
        call.arg(queue).arg(k.task_prefix()).arg(k.workflow_prefix()).arg(now_secs).arg(unix_nanos(now).to_string());
        let (cutoff, max_size) = self.archive_args(now_secs);
        call.arg(cutoff).arg(max_size).arg(WORKFLOW_RESULT_TTL.as_secs());
        call.arg(k.ready_channel()).arg(k.finished_channel()).arg(events.arg(queue));
        call
    }

    /// `inner`, a `done_batch.lua` (`done`) or `settle_batch.lua` call of queue `queue`, wrapped
    /// in `workflow_settle.lua` so that each of its tasks in `outcomes` (by item index: whether
    /// it succeeded, and its error) passes its outcome on.
    pub(crate) fn settle_passing_outcomes(
        &self,
        queue: &str,
        inner: BatchCall,
        done: bool,
        outcomes: &HashMap<usize, (bool, String)>,
        now: SystemTime,
        events: &EventCaps,
    ) -> BatchCall {
        let k = self.queue_keys(queue);
        let own = self.workflow_call(&SCRIPTS.pass, queue, &k, now, events);
        let (keys, mut args) = own.into_parts();
        for (position, (index, msg)) in inner.items.iter().enumerate() {
            if let Some((ok, error)) = outcomes.get(index) {
                args.push((position + 1).to_string().into_bytes());
                args.push(msg.id.as_bytes().to_vec());
                args.push(if *ok { b"1".to_vec() } else { b"0".to_vec() });
                args.push(error.clone().into_bytes());
            }
        }
        let script = if done { &SCRIPTS.settle_done } else { &SCRIPTS.settle_others };
        let call = ScriptCall::wrapping(script, keys, args, inner.call);
        BatchCall { call, context: inner.context, items: inner.items }
    }

    /// The records of `workflow_store.lua` for `tasks` (all of one queue), in order.
    fn store_call(
        &self,
        queue: &str,
        tasks: &[&PlannedTask],
        now: SystemTime,
        events: &EventCaps,
    ) -> Result<ScriptCall> {
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&SCRIPTS.store);
        call.key(k.pending()).key(k.scheduled()).key(k.idle_workers()).key(k.events()).key(k.workflow_waiting());
        call.key(k.workflow_open());
        call.arg(k.task_prefix()).arg(k.workflow_prefix()).arg(unix_nanos(now).to_string()).arg(k.ready_channel());
        call.arg(events.arg(queue)).arg(unix_secs(now));
        for task in tasks {
            let msg = &task.request.message;
            checked_message_len(msg)?;
            call.arg(msg.id.as_str()).arg(encode(msg));
            if task.parents.is_empty() {
                match task.request.placement {
                    Placement::Scheduled { process_at } => call.arg("scheduled").arg(unix_secs(process_at)),
                    _ => call.arg("pending").arg(""),
                };
                call.arg("").arg("");
            } else {
                let policy = match task.on_parent_failure {
                    OnParentFailure::FailWorkflow => "fail",
                    OnParentFailure::RunAnyway => "run",
                };
                call.arg("waiting").arg("").arg(policy).arg(encode(&msg.archived(PARENT_FAILED_ERROR, now)));
            }
            for list in [&task.parents, &task.children] {
                call.arg(list.len());
                for task in list {
                    call.arg(task.queue.as_str()).arg(task.id.as_str());
                }
            }
        }
        Ok(call)
    }

    /// Records `plan`'s workflow for operators: its ID in `<ns>:workflows`, its tasks and their
    /// parents in `<ns>:workflow:<id>` and their types in `<ns>:workflow_types:<id>` (each
    /// pushed a page at a time), all kept for [`WORKFLOW_RESULT_TTL`].
    async fn record_workflow(&self, conn: &mut Connection, plan: &WorkflowPlan, now: SystemTime) -> Result<()> {
        let ns = self.namespace();
        let (index, list, types) = (ns.workflows(), ns.workflow(plan.id.as_str()), ns.workflow_types(plan.id.as_str()));
        let fail = |e| broker_error("record a workflow", e);
        let _: i64 = conn.zadd(&index, plan.id.as_str(), unix_secs(now)).await.map_err(fail)?;
        let nodes = plan.nodes();
        let entries: Vec<String> = nodes.iter().map(record_entry).collect();
        let type_names: Vec<&str> = plan.tasks.iter().map(|task| task.request.message.type_name.as_str()).collect();
        for (key, values) in [(&list, entries.iter().map(String::as_str).collect::<Vec<_>>()), (&types, type_names)] {
            for page in values.chunks(1_000) {
                let _: i64 = conn.rpush(key, page).await.map_err(fail)?;
            }
            let _: bool = conn.expire(key, WORKFLOW_RESULT_TTL.as_secs() as i64).await.map_err(fail)?;
        }
        Ok(())
    }

    /// Drops the record of a workflow that failed to store.
    async fn forget_workflow(&self, conn: &mut Connection, id: &WorkflowId) {
        let ns = self.namespace();
        let dropped: redis::RedisResult<()> = async {
            let _: i64 = conn.zrem(ns.workflows(), id.as_str()).await?;
            // One key a command: on a Cluster the two may live on two nodes.
            let _: i64 = conn.del(ns.workflow(id.as_str())).await?;
            let _: i64 = conn.del(ns.workflow_types(id.as_str())).await?;
            Ok(())
        }
        .await;
        if let Err(e) = dropped {
            tracing::error!(workflow = %id, error = %e, "could not drop the record of a workflow that failed to store");
        }
    }

    /// Takes back the tasks of `written` (queue and IDs) that a failed store left, as far as they
    /// are still waiting, or pending or scheduled and not taken.
    async fn discard(&self, written: &[(String, Vec<TaskId>)]) {
        let mut conn = self.conn();
        for (queue, ids) in written {
            let k = self.queue_keys(queue);
            let mut call = ScriptCall::new(&SCRIPTS.discard);
            call.key(k.pending()).key(k.scheduled()).key(k.workflow_waiting()).key(k.workflow_open());
            call.arg(k.task_prefix()).arg(k.workflow_prefix());
            for id in ids {
                call.arg(id.as_str());
            }
            if let Err(e) = call.run::<i64>(&mut conn, "take back a workflow's tasks").await {
                tracing::error!(%queue, error = %e, "could not take back the tasks of a workflow that failed to store");
            }
        }
    }
}

impl RedisBroker {
    /// The outcomes kept of `tasks` (`wf:outcome:<id>`), in order: one pipeline per queue, as a
    /// Cluster takes no pipeline across slots.
    async fn outcomes(&self, tasks: &[TaskRef]) -> Result<Vec<ParentOutcome>> {
        let mut by_queue: BTreeMap<&QueueName, Vec<usize>> = BTreeMap::new();
        for (index, task) in tasks.iter().enumerate() {
            by_queue.entry(&task.queue).or_default().push(index);
        }
        let conn = self.conn();
        let reads = try_join_all(by_queue.into_iter().map(|(queue, indexes)| {
            let k = self.queue_keys(queue);
            let mut pipe = redis::pipe();
            for &index in &indexes {
                pipe.get(k.workflow_outcome(tasks[index].id.as_str()));
            }
            let mut conn = conn.clone();
            async move {
                let outcomes: Vec<Option<Vec<u8>>> = pipe.query_async(&mut conn).await?;
                Ok::<_, redis::RedisError>(indexes.into_iter().zip(outcomes))
            }
        }))
        .await
        .map_err(|e| broker_error("read workflow outcomes", e))?;
        let mut outcomes: Vec<ParentOutcome> = vec![ParentOutcome::Unknown; tasks.len()];
        for (index, stored) in reads.into_iter().flatten() {
            outcomes[index] = stored.map_or(ParentOutcome::Unknown, |stored| read_outcome(&stored));
        }
        Ok(outcomes)
    }
}

#[async_trait]
impl Workflows for RedisBroker {
    async fn store_workflow(&self, plan: &WorkflowPlan) -> Result<()> {
        let now = self.now();
        let events = self.event_caps_now().await?;
        // Every waiting task before any root (see `store_order`).
        let calls: Vec<(&str, Vec<&PlannedTask>)> = store_order::store_calls(&plan.tasks, STORE_BATCH)
            .into_iter()
            .map(|tasks| (tasks[0].request.message.queue.as_str(), tasks))
            .collect();
        let mut conn = self.conn();
        // Registered first, as Go's enqueue does, so that no stored task is in an unknown queue.
        let queues: Vec<&str> = calls.iter().map(|(queue, _)| *queue).collect();
        let _: i64 =
            conn.sadd(self.namespace().all_queues(), queues).await.map_err(|e| broker_error("store a workflow", e))?;
        self.record_workflow(&mut conn, plan, now).await?;
        let mut written: Vec<(String, Vec<TaskId>)> = Vec::new();
        for (queue, tasks) in &calls {
            let call = self.store_call(queue, tasks, now, &events)?;
            let failure = match call.run::<i64>(&mut conn, "store a workflow").await {
                Ok(0) => None,
                Ok(n) => {
                    let msg = usize::try_from(n - 1).ok().and_then(|n| tasks.get(n)).map(|task| &task.request.message);
                    Some(match msg {
                        Some(msg) => Error::TaskIdConflict { queue: msg.queue.clone(), id: msg.id.clone() },
                        None => unexpected("store a workflow", format!("workflow_store.lua replied {n}")),
                    })
                }
                Err(e) => Some(e),
            };
            if let Some(e) = failure {
                self.discard(&written).await;
                self.forget_workflow(&mut conn, &plan.id).await;
                return Err(e);
            }
            written.push((queue.to_string(), tasks.iter().map(|task| task.request.message.id.clone()).collect()));
        }
        for (queue, _) in &written {
            self.pubsub().made_pending(queue);
        }
        Ok(())
    }

    async fn list_workflows(&self, page: Page) -> Result<Vec<WorkflowSummary>> {
        let ns = self.namespace();
        let mut conn = self.conn();
        let fail = |e| broker_error("list workflows", e);
        let forgotten = unix_secs(self.now()) - WORKFLOW_RESULT_TTL.as_secs() as i64;
        let _: i64 = conn.zrembyscore(ns.workflows(), "-inf", forgotten).await.map_err(fail)?;
        let first = page.size.saturating_mul(page.number) as isize;
        let last = first.saturating_add(page.size as isize) - 1;
        let listed: Vec<(String, i64)> = conn.zrevrange_withscores(ns.workflows(), first, last).await.map_err(fail)?;
        let sizes = try_join_all(listed.iter().map(|(id, _)| {
            let mut conn = conn.clone();
            let (key, mark) = (ns.workflow(id), ns.workflow_cancelled(id));
            async move {
                let tasks = conn.llen::<_, usize>(key).await?;
                let cancelled = conn.exists::<_, bool>(mark).await?;
                Ok::<_, redis::RedisError>((tasks, cancelled))
            }
        }))
        .await
        .map_err(fail)?;
        Ok(listed
            .into_iter()
            .zip(sizes)
            .filter_map(|((id, created), (tasks, cancelled))| {
                let id = WorkflowId::new(id).ok()?;
                Some(WorkflowSummary { id, created_at: from_unix_secs(created), tasks, cancelled })
            })
            .collect())
    }

    async fn count_workflows(&self) -> Result<usize> {
        // Read only: the ones stored within the TTL, those a listing keeps.
        let forgotten = unix_secs(self.now()) - WORKFLOW_RESULT_TTL.as_secs() as i64;
        let kept: usize = self
            .conn()
            .zcount(self.namespace().workflows(), format!("({forgotten}"), "+inf")
            .await
            .map_err(|e| broker_error("count workflows", e))?;
        Ok(kept)
    }

    async fn workflow_tasks(&self, id: &WorkflowId) -> Result<Vec<WorkflowNode>> {
        let ns = self.namespace();
        // Two commands: the keys have no hash tag, so a Cluster may keep them on two nodes.
        let (mut records, mut type_lists) = (self.conn(), self.conn());
        let (entries, types): (Vec<String>, Vec<String>) = futures::try_join!(
            records.lrange(ns.workflow(id.as_str()), 0, -1),
            type_lists.lrange(ns.workflow_types(id.as_str()), 0, -1),
        )
        .map_err(|e| broker_error("read a workflow", e))?;
        if entries.is_empty() {
            return Err(Error::WorkflowNotFound { id: id.clone() });
        }
        // A record an earlier version wrote has no types.
        let mut types = (types.len() == entries.len()).then(|| types.into_iter());
        entries
            .iter()
            .enumerate()
            .map(|(position, entry)| {
                let mut node = read_record_entry(entry, position)
                    .ok_or_else(|| unexpected("read a workflow", format!("a bad task {entry:?}")))?;
                node.type_name = types.as_mut().and_then(Iterator::next);
                Ok(node)
            })
            .collect()
    }

    async fn mark_cancelled(&self, id: &WorkflowId) -> Result<CancelMark> {
        let ns = self.namespace();
        let mut conn = self.conn();
        let fail = |e| broker_error("mark a workflow cancelled", e);
        let kept: bool = conn.exists(ns.workflow(id.as_str())).await.map_err(fail)?;
        if !kept {
            return Err(Error::WorkflowNotFound { id: id.clone() });
        }
        let mark = ns.workflow_cancelled(id.as_str());
        let options = redis::SetOptions::default()
            .conditional_set(redis::ExistenceCheck::NX)
            .with_expiration(redis::SetExpiry::EX(WORKFLOW_RESULT_TTL.as_secs()));
        let marked: Option<String> = conn.set_options(&mark, "", options).await.map_err(fail)?;
        if marked.is_some() {
            return Ok(CancelMark::Marked);
        }
        let earlier: Option<String> = conn.get(&mark).await.map_err(fail)?;
        Ok(match earlier.as_deref().and_then(read_cancel_mark) {
            Some(done) => CancelMark::Done(done),
            None => CancelMark::Unfinished,
        })
    }

    async fn record_cancellation(&self, id: &WorkflowId, done: WorkflowCancellation) -> Result<()> {
        let mark = self.namespace().workflow_cancelled(id.as_str());
        let options = redis::SetOptions::default()
            .conditional_set(redis::ExistenceCheck::XX)
            .with_expiration(redis::SetExpiry::KEEPTTL);
        let value = format!("{},{}", done.archived, done.stopping);
        let _: Option<String> = self
            .conn()
            .set_options(&mark, value, options)
            .await
            .map_err(|e| broker_error("record a workflow's cancel", e))?;
        Ok(())
    }

    async fn is_cancelled(&self, id: &WorkflowId) -> Result<bool> {
        let mark = self.namespace().workflow_cancelled(id.as_str());
        self.conn().exists(mark).await.map_err(|e| broker_error("read a workflow's cancel mark", e))
    }

    async fn cancel_waiting(&self, task: &TaskRef) -> Result<bool> {
        let cancelled =
            self.archive_waiting(&task.queue, &[task.id.as_str()], WORKFLOW_CANCELLED_ERROR, self.now()).await?;
        if cancelled > 0 {
            self.want_relay(task.queue.clone());
        }
        Ok(cancelled > 0)
    }

    async fn parent_results(&self, task: &TaskRef) -> Result<Vec<ParentResult>> {
        let mut conn = self.conn();
        let parents_key = self.queue_keys(&task.queue).workflow_parents(task.id.as_str());
        let pairs: Vec<String> =
            conn.lrange(&parents_key, 0, -1).await.map_err(|e| broker_error("read a workflow task's parents", e))?;
        let mut parents = Vec::with_capacity(pairs.len() / 2);
        for pair in pairs.chunks_exact(2) {
            let (Ok(queue), Ok(id)) = (QueueName::new(pair[0].as_str()), TaskId::new(pair[1].as_str())) else {
                return Err(unexpected("read a workflow task's parents", format!("a bad parent {pair:?}")));
            };
            parents.push(TaskRef { queue, id });
        }
        let outcomes = self.outcomes(&parents).await?;
        Ok(parents.into_iter().zip(outcomes).map(|(task, outcome)| ParentResult { task, outcome }).collect())
    }

    async fn settled_outcomes(&self, tasks: &[TaskRef]) -> Result<Vec<ParentOutcome>> {
        self.outcomes(tasks).await
    }

    async fn relay(&self, queues: &[QueueName]) -> Result<usize> {
        if queues.is_empty() {
            return Ok(0);
        }
        let open: Vec<String> = queues.iter().map(|queue| self.queue_keys(queue).workflow_open()).collect();
        let open =
            changed_keys(self.conn(), &open, false).await.map_err(|e| broker_error("look at workflow tasks", e))?;
        for index in open {
            self.sweep_queue(&queues[index]).await?;
        }
        // Outboxes filled by this relay (a dependent it archived passes its failure on) are
        // emptied by the next round, so a cascade across these queues ends in one call.
        let keys: Vec<String> = queues.iter().map(|queue| self.queue_keys(queue).workflow_outbox()).collect();
        let mut told = 0;
        for _ in 0..RELAY_ROUNDS {
            let busy = changed_keys(self.conn(), &keys, false)
                .await
                .map_err(|e| broker_error("look at workflow outboxes", e))?;
            if busy.is_empty() {
                break;
            }
            for index in busy {
                told += self.relay_queue(&queues[index]).await?;
            }
        }
        Ok(told)
    }

    async fn relay_wanted(&self) {
        self.relay_wanted_queues().wanted().await;
    }

    async fn relay_settled(&self) -> Result<usize> {
        self.relay_marked().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(queue: &'static str, id: &'static str, parents: &[usize]) -> WorkflowNode {
        let task = TaskRef { queue: QueueName::from_static(queue), id: TaskId::from_static(id) };
        WorkflowNode { task, parents: parents.to_vec(), name: None, type_name: None }
    }

    #[test]
    fn record_entries_keep_each_task_s_parents() {
        for (position, written) in
            [node("q", "a", &[]), node("q2", "b", &[0]), node("q", "sum", &[0, 1])].iter().enumerate()
        {
            assert_eq!(read_record_entry(&record_entry(written), position).as_ref(), Some(written));
        }
        assert_eq!(record_entry(&node("q", "sum", &[0, 1])), "q\nsum\n0,1");
        let named = WorkflowNode { name: Some("the\nsum".to_owned()), ..node("q", "id-1", &[0]) };
        assert_eq!(record_entry(&named), "q\nid-1\n0\nthe\nsum");
        assert_eq!(read_record_entry(&record_entry(&named), 1), Some(named), "a name may hold anything");
        let root = WorkflowNode { name: Some("fetch".to_owned()), ..node("q", "id-0", &[]) };
        assert_eq!(read_record_entry(&record_entry(&root), 0), Some(root));
    }

    #[test]
    fn a_record_entry_without_parents_as_the_previous_version_wrote_it_has_none() {
        assert_eq!(read_record_entry("q\na", 3), Some(node("q", "a", &[])));
    }

    #[test]
    fn a_bad_record_entry_is_refused() {
        for (entry, position) in [("q", 0), ("q{x}\na", 0), ("q\na\n1", 1), ("q\na\nx", 1), ("q\na\n0,", 1)] {
            assert_eq!(read_record_entry(entry, position), None, "{entry:?} at {position}");
        }
    }
}
