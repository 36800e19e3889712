//! The JSON shapes `--json` prints, one `Serialize` struct per thing shown, built from the core
//! types (which do not depend on serde). Times are RFC 3339 strings in UTC, durations numbers of
//! seconds (fields ending in `_seconds`), byte strings a string plus its encoding.

use crate::output::rfc3339;
use asynq_client::{
    BackendInfo, DailyStats, GroupInfo, QueueInfo, SchedulerEnqueueEvent, SchedulerEntry, ServerReport, TaskInfo,
    WorkerInfo,
};
use base64::Engine;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

/// Bytes as JSON: the text when valid UTF-8 (`"utf-8"`), else standard padded base64 (`"base64"`).
fn encode(bytes: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), "utf-8"),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(bytes), "base64"),
    }
}

fn time(t: Option<SystemTime>) -> Option<String> {
    t.map(rfc3339)
}

/// One task.
#[derive(Debug, Serialize)]
pub(crate) struct TaskView {
    id: String,
    queue: String,
    #[serde(rename = "type")]
    type_name: String,
    payload: String,
    payload_encoding: &'static str,
    headers: BTreeMap<String, String>,
    state: &'static str,
    max_retry: u32,
    retried: u32,
    last_error: Option<String>,
    last_failed_at: Option<String>,
    timeout_seconds: Option<u64>,
    deadline: Option<String>,
    group: Option<String>,
    next_process_at: Option<String>,
    is_orphaned: bool,
    retention_seconds: Option<u64>,
    completed_at: Option<String>,
    result: Option<String>,
    result_encoding: Option<&'static str>,
    progress: Option<ProgressView>,
    /// The debounce key the task was enqueued with.
    debounce_key: Option<String>,
    /// Its priority within its queue, 0 by default.
    priority: i8,
    /// Why its handler parked it (a durable sleep or a wait for a signal), while scheduled.
    #[serde(skip_serializing_if = "Option::is_none")]
    parked: Option<ParkedView>,
    /// Its durable steps' records (task inspect only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    steps: Vec<StepView>,
}

/// Why a handler parked its task.
#[derive(Debug, Serialize)]
pub(crate) struct ParkedView {
    /// `sleeping`, or `waiting for signal "<name>"`.
    reason: String,
    until: String,
}

/// A durable step's record.
#[derive(Debug, Serialize)]
pub(crate) struct StepView {
    name: String,
    result: String,
    result_encoding: &'static str,
    recorded_at: String,
}

/// A handler's last progress report.
#[derive(Debug, Serialize)]
pub(crate) struct ProgressView {
    fraction: f64,
    message: String,
    reported_at: String,
}

impl From<&TaskInfo> for TaskView {
    fn from(t: &TaskInfo) -> Self {
        let (payload, payload_encoding) = encode(&t.payload);
        let result = t.result.as_deref().map(encode);
        let headers: HashMap<_, _> = t.headers.clone();
        Self {
            id: t.id.to_string(),
            queue: t.queue.to_string(),
            type_name: t.type_name.clone(),
            payload,
            payload_encoding,
            headers: headers.into_iter().collect(),
            state: t.state.as_str(),
            max_retry: t.max_retry,
            retried: t.retried,
            last_error: t.last_error.clone(),
            last_failed_at: time(t.last_failed_at),
            timeout_seconds: t.timeout.map(|d| d.as_secs()),
            deadline: time(t.deadline),
            group: t.group.as_ref().map(ToString::to_string),
            next_process_at: time(t.next_process_at),
            is_orphaned: t.is_orphaned,
            retention_seconds: t.retention.map(|d| d.as_secs()),
            completed_at: time(t.completed_at),
            result_encoding: result.as_ref().map(|(_, e)| *e),
            result: result.map(|(r, _)| r),
            progress: t.progress.as_ref().map(|p| ProgressView {
                fraction: p.fraction(),
                message: p.message().to_owned(),
                reported_at: rfc3339(p.reported_at()),
            }),
            debounce_key: t.debounce_key.clone(),
            priority: t.priority.get(),
            parked: t.parked.as_ref().map(|p| ParkedView { reason: p.to_string(), until: rfc3339(p.until) }),
            steps: t
                .steps
                .iter()
                .map(|s| {
                    let (result, result_encoding) = encode(s.result());
                    StepView {
                        name: s.name().to_string(),
                        result,
                        result_encoding,
                        recorded_at: rfc3339(s.recorded_at()),
                    }
                })
                .collect(),
        }
    }
}

/// Sizes and statistics of one queue.
#[derive(Debug, Serialize)]
pub(crate) struct QueueView {
    queue: String,
    paused: bool,
    size: usize,
    groups: usize,
    latency_seconds: f64,
    memory_usage_bytes: u64,
    active: usize,
    pending: usize,
    aggregating: usize,
    scheduled: usize,
    retry: usize,
    archived: usize,
    completed: usize,
    /// Workflow tasks waiting for their parents, not in `size` (as Go counts).
    waiting: usize,
    processed: u64,
    failed: u64,
    processed_total: u64,
    failed_total: u64,
    timestamp: String,
    /// A sharded queue's shards, whose sums the counts are; absent for an ordinary queue.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shards: Vec<String>,
    /// A resharded queue's previous generation's shards while they drain (in the sums too).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    draining_shards: Vec<String>,
}

impl From<&QueueInfo> for QueueView {
    fn from(q: &QueueInfo) -> Self {
        Self {
            queue: q.queue.to_string(),
            paused: q.paused,
            size: q.size,
            groups: q.groups,
            latency_seconds: q.latency.as_secs_f64(),
            memory_usage_bytes: q.memory_usage,
            active: q.active,
            pending: q.pending,
            aggregating: q.aggregating,
            scheduled: q.scheduled,
            retry: q.retry,
            archived: q.archived,
            completed: q.completed,
            waiting: q.waiting,
            processed: q.processed,
            failed: q.failed,
            processed_total: q.processed_total,
            failed_total: q.failed_total,
            timestamp: rfc3339(q.timestamp),
            shards: q.shards.iter().map(ToString::to_string).collect(),
            draining_shards: q.draining_shards.iter().map(ToString::to_string).collect(),
        }
    }
}

/// Counts of one queue on one day.
#[derive(Debug, Serialize)]
pub(crate) struct DailyStatsView {
    queue: String,
    date: String,
    processed: u64,
    failed: u64,
}

impl From<&DailyStats> for DailyStatsView {
    fn from(s: &DailyStats) -> Self {
        Self { queue: s.queue.to_string(), date: s.date.clone(), processed: s.processed, failed: s.failed }
    }
}

/// One group of a queue.
#[derive(Debug, Serialize)]
pub(crate) struct GroupView {
    group: String,
    size: usize,
}

impl From<&GroupInfo> for GroupView {
    fn from(g: &GroupInfo) -> Self {
        Self { group: g.group.to_string(), size: g.size }
    }
}

/// One workflow kept, as `asynq workflow ls --json` prints it.
#[derive(Debug, Serialize)]
pub(crate) struct WorkflowSummaryView {
    id: String,
    created_at: String,
    tasks: usize,
    /// Whether it was cancelled.
    cancelled: bool,
    /// `running`, `failed`, `succeeded` or `cancelled`; `null` when the listing did not work
    /// it out (a workflow of very many tasks: `asynq workflow inspect` tells).
    state: Option<&'static str>,
}

impl WorkflowSummaryView {
    /// The view of `w`, in `state` when known.
    pub(crate) fn new(w: &asynq_client::WorkflowSummary, state: Option<asynq_client::WorkflowState>) -> Self {
        Self {
            id: w.id.to_string(),
            created_at: crate::output::rfc3339(w.created_at),
            tasks: w.tasks,
            cancelled: w.cancelled,
            state: state.map(|s| s.as_str()),
        }
    }
}

/// One task a server runs.
#[derive(Debug, Serialize)]
pub(crate) struct WorkerView {
    task_id: String,
    task_type: String,
    payload: String,
    payload_encoding: &'static str,
    queue: String,
    started: String,
    deadline: String,
}

impl From<&WorkerInfo> for WorkerView {
    fn from(w: &WorkerInfo) -> Self {
        let (payload, payload_encoding) = encode(&w.task_payload);
        Self {
            task_id: w.task_id.clone(),
            task_type: w.task_type.clone(),
            payload,
            payload_encoding,
            queue: w.queue.clone(),
            started: rfc3339(w.started),
            deadline: rfc3339(w.deadline),
        }
    }
}

/// One server and what it runs.
#[derive(Debug, Serialize)]
pub(crate) struct ServerView {
    id: String,
    host: String,
    pid: u32,
    status: &'static str,
    concurrency: u32,
    active_workers: u32,
    queues: BTreeMap<String, u32>,
    strict_priority: bool,
    started: String,
    workers: Vec<WorkerView>,
}

impl From<&ServerReport> for ServerView {
    fn from(r: &ServerReport) -> Self {
        let s = &r.server;
        Self {
            id: s.server_id.clone(),
            host: s.host.clone(),
            pid: s.pid,
            status: s.status.as_str(),
            concurrency: s.concurrency,
            active_workers: s.active_workers,
            queues: s.queues.clone(),
            strict_priority: s.strict_priority,
            started: rfc3339(s.started),
            workers: r.workers.iter().map(WorkerView::from).collect(),
        }
    }
}

/// One cron entry.
#[derive(Debug, Serialize)]
pub(crate) struct CronEntryView {
    id: String,
    spec: String,
    #[serde(rename = "type")]
    type_name: String,
    payload: String,
    payload_encoding: &'static str,
    options: Vec<String>,
    next: Option<String>,
    prev: Option<String>,
}

impl From<&SchedulerEntry> for CronEntryView {
    fn from(e: &SchedulerEntry) -> Self {
        let (payload, payload_encoding) = encode(&e.task_payload);
        Self {
            id: e.id.clone(),
            spec: e.spec.clone(),
            type_name: e.task_type.clone(),
            payload,
            payload_encoding,
            options: e.options.clone(),
            next: time(e.next),
            prev: time(e.prev),
        }
    }
}

/// One task a cron entry enqueued.
#[derive(Debug, Serialize)]
pub(crate) struct EnqueueEventView {
    task_id: String,
    enqueued_at: String,
}

impl From<&SchedulerEnqueueEvent> for EnqueueEventView {
    fn from(e: &SchedulerEnqueueEvent) -> Self {
        Self { task_id: e.task_id.clone(), enqueued_at: rfc3339(e.enqueued_at) }
    }
}

/// What the backend says about itself.
#[derive(Debug, Serialize)]
pub(crate) struct BackendView {
    kind: String,
    /// The key namespace of the queues shown (`asynq`, Go's, by default).
    namespace: Option<String>,
    fields: BTreeMap<String, String>,
    nodes: Vec<NodeView>,
    /// The eviction policies in force that can drop tasks; empty when the backend keeps them.
    eviction_risks: Vec<EvictionRiskView>,
}

/// An eviction policy under which the backend can drop tasks without an error.
#[derive(Debug, Serialize)]
pub(crate) struct EvictionRiskView {
    /// The policy, e.g. `allkeys-lru`.
    policy: String,
    /// What can happen and what to change.
    warning: String,
}

/// One node of the backend.
#[derive(Debug, Serialize)]
pub(crate) struct NodeView {
    /// Cluster node ID (empty for a single server).
    pub(crate) id: String,
    /// `host:port`.
    pub(crate) addr: String,
}

impl From<&BackendInfo> for BackendView {
    fn from(b: &BackendInfo) -> Self {
        Self {
            kind: b.kind.clone(),
            namespace: b.namespace.clone(),
            fields: b.fields.clone(),
            nodes: b.nodes.iter().map(|n| NodeView { id: n.id.clone(), addr: n.addr.clone() }).collect(),
            eviction_risks: b
                .eviction_risks
                .iter()
                .map(|r| EvictionRiskView { policy: r.policy.clone(), warning: r.warning.clone() })
                .collect(),
        }
    }
}

/// The ID of the workflow task `t` belongs to, or "" for a task of none.
pub(crate) fn workflow_of(t: &asynq_core::TaskInfo) -> String {
    t.headers.get(asynq_core::workflow::WORKFLOW_HEADER).cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_text_or_base64() {
        assert_eq!(encode(b"hello"), ("hello".to_owned(), "utf-8"));
        assert_eq!(encode(&[0xff, 0x00]), ("/wA=".to_owned(), "base64"));
    }
}
