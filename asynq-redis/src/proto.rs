//! The protobuf messages Go asynq stores in Redis (`internal/proto/asynq.proto`), with their
//! exact field numbers, and their conversions to and from the core model.
//!
//! The messages are declared with prost's derive rather than generated from a `.proto` file,
//! so building needs no `protoc`; the golden tests pin every field number.

use asynq_core::MAX_DURATION;
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{
    Error, GroupName, QueueName, ServerInfo as CoreServerInfo, ServerStatus, StoredTask, TaskId,
    WorkerInfo as CoreWorkerInfo,
};
use bytes::Bytes;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `asynq.TaskMessage`, the `msg` field of a task hash.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskMessage {
    /// Task type.
    #[prost(string, tag = "1")]
    pub r#type: String,
    /// Payload.
    #[prost(bytes = "bytes", tag = "2")]
    pub payload: Bytes,
    /// Headers (v0.26+).
    #[prost(map = "string, string", tag = "15")]
    pub headers: HashMap<String, String>,
    /// Task ID.
    #[prost(string, tag = "3")]
    pub id: String,
    /// Queue name.
    #[prost(string, tag = "4")]
    pub queue: String,
    /// Max retry count.
    #[prost(int32, tag = "5")]
    pub retry: i32,
    /// Retries so far.
    #[prost(int32, tag = "6")]
    pub retried: i32,
    /// Last error message.
    #[prost(string, tag = "7")]
    pub error_msg: String,
    /// Last failure, Unix seconds.
    #[prost(int64, tag = "11")]
    pub last_failed_at: i64,
    /// Timeout, seconds.
    #[prost(int64, tag = "8")]
    pub timeout: i64,
    /// Deadline, Unix seconds.
    #[prost(int64, tag = "9")]
    pub deadline: i64,
    /// Uniqueness-lock key.
    #[prost(string, tag = "10")]
    pub unique_key: String,
    /// Group name.
    #[prost(string, tag = "14")]
    pub group_key: String,
    /// Retention, seconds.
    #[prost(int64, tag = "12")]
    pub retention: i64,
    /// Completion time, Unix seconds.
    #[prost(int64, tag = "13")]
    pub completed_at: i64,
}

/// `google.protobuf.Timestamp`.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Timestamp {
    /// Seconds since the Unix epoch.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds within the second.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) as a Timestamp: what Go writes for "never".
pub const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

impl Timestamp {
    /// The timestamp of `t`.
    pub fn from_time(t: SystemTime) -> Self {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => Timestamp { seconds: d.as_secs() as i64, nanos: d.subsec_nanos() as i32 },
            Err(e) => {
                let d = e.duration();
                let (mut seconds, mut nanos) = (-(d.as_secs() as i64), -(d.subsec_nanos() as i32));
                if nanos < 0 {
                    seconds -= 1;
                    nanos += 1_000_000_000;
                }
                Timestamp { seconds, nanos }
            }
        }
    }

    /// Go's zero time, which Go readers display as "never".
    pub fn go_zero() -> Self {
        Timestamp { seconds: GO_ZERO_TIME_SECONDS, nanos: 0 }
    }

    /// The instant, or `None` for Go's zero time.
    pub fn to_time(self) -> Option<SystemTime> {
        if self.seconds == GO_ZERO_TIME_SECONDS && self.nanos == 0 {
            return None;
        }
        Some(from_unix_secs(self.seconds) + Duration::from_nanos(self.nanos.max(0) as u64))
    }
}

/// `asynq.ServerInfo`, the value of `asynq:servers:{host:pid:id}`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerInfo {
    /// Host name.
    #[prost(string, tag = "1")]
    pub host: String,
    /// Process ID.
    #[prost(int32, tag = "2")]
    pub pid: i32,
    /// Server ID.
    #[prost(string, tag = "3")]
    pub server_id: String,
    /// Concurrency.
    #[prost(int32, tag = "4")]
    pub concurrency: i32,
    /// Queue priorities.
    #[prost(map = "string, int32", tag = "5")]
    pub queues: HashMap<String, i32>,
    /// Strict priority.
    #[prost(bool, tag = "6")]
    pub strict_priority: bool,
    /// `new`, `active`, `stopped` or `closed`.
    #[prost(string, tag = "7")]
    pub status: String,
    /// Start time.
    #[prost(message, optional, tag = "8")]
    pub start_time: Option<Timestamp>,
    /// Tasks running.
    #[prost(int32, tag = "9")]
    pub active_worker_count: i32,
}

/// `asynq.WorkerInfo`, one value of `asynq:workers:{host:pid:id}`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WorkerInfo {
    /// Host name.
    #[prost(string, tag = "1")]
    pub host: String,
    /// Process ID.
    #[prost(int32, tag = "2")]
    pub pid: i32,
    /// Server ID.
    #[prost(string, tag = "3")]
    pub server_id: String,
    /// Task ID.
    #[prost(string, tag = "4")]
    pub task_id: String,
    /// Task type.
    #[prost(string, tag = "5")]
    pub task_type: String,
    /// Task payload.
    #[prost(bytes = "bytes", tag = "6")]
    pub task_payload: Bytes,
    /// Queue.
    #[prost(string, tag = "7")]
    pub queue: String,
    /// Handler start time.
    #[prost(message, optional, tag = "8")]
    pub start_time: Option<Timestamp>,
    /// Handler deadline.
    #[prost(message, optional, tag = "9")]
    pub deadline: Option<Timestamp>,
}

/// `asynq.SchedulerEntry`, an element of `asynq:schedulers:{id}`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedulerEntry {
    /// Entry ID.
    #[prost(string, tag = "1")]
    pub id: String,
    /// Cron spec.
    #[prost(string, tag = "2")]
    pub spec: String,
    /// Task type.
    #[prost(string, tag = "3")]
    pub task_type: String,
    /// Task payload.
    #[prost(bytes = "bytes", tag = "4")]
    pub task_payload: Bytes,
    /// Enqueue options in Go's `String()` form.
    #[prost(string, repeated, tag = "5")]
    pub enqueue_options: Vec<String>,
    /// Next enqueue time.
    #[prost(message, optional, tag = "6")]
    pub next_enqueue_time: Option<Timestamp>,
    /// Previous enqueue time (Go's zero time if never).
    #[prost(message, optional, tag = "7")]
    pub prev_enqueue_time: Option<Timestamp>,
}

/// `asynq.SchedulerEnqueueEvent`, a member of `asynq:scheduler_history:<entry id>`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedulerEnqueueEvent {
    /// The enqueued task's ID.
    #[prost(string, tag = "1")]
    pub task_id: String,
    /// When it was enqueued.
    #[prost(message, optional, tag = "2")]
    pub enqueue_time: Option<Timestamp>,
}

/// Whole seconds of `d` as Go stores a duration (`int64(d.Seconds())`), saturating.
fn go_secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// A stored duration in seconds: `None` unless positive, and no longer than Go's longest
/// duration ([`MAX_DURATION`]), which Go servers sharing the queue turn it back into.
fn duration_from_go(secs: i64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs.min(MAX_DURATION.as_secs() as i64) as u64))
}

/// A stored instant in Unix seconds: `None` for Go's `0`, clamped to the years 1 to 9999
/// otherwise (one before 1970 is a real instant, in the past).
fn instant_from_go(secs: i64) -> Option<SystemTime> {
    (secs != 0).then(|| from_unix_secs(secs))
}

/// Go writes `""` for a string that is not set.
fn string_from_go(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Go's message in Go's units: whole seconds, Unix seconds, `0` and `""` for "not set"; counts
/// past `i32` saturate.
impl From<&StoredTask> for TaskMessage {
    fn from(m: &StoredTask) -> Self {
        TaskMessage {
            r#type: m.type_name.clone(),
            payload: m.payload.clone(),
            headers: m.headers.clone(),
            id: m.id.to_string(),
            queue: m.queue.to_string(),
            retry: i32::try_from(m.max_retry).unwrap_or(i32::MAX),
            retried: i32::try_from(m.retried).unwrap_or(i32::MAX),
            error_msg: m.last_error.clone().unwrap_or_default(),
            last_failed_at: m.last_failed_at.map_or(0, unix_secs),
            timeout: m.timeout.map_or(0, go_secs),
            deadline: m.deadline.map_or(0, unix_secs),
            unique_key: m.unique_key.clone().unwrap_or_default(),
            group_key: m.group.as_ref().map_or_else(String::new, ToString::to_string),
            retention: m.retention.map_or(0, go_secs),
            completed_at: m.completed_at.map_or(0, unix_secs),
        }
    }
}

/// Go's message read in Rust units. Corrupt but decodable numbers are read into range: a negative
/// count as 0, a duration that is not positive as none and one past Go's longest as it, an
/// instant outside the years 1 to 9999 as the nearer end.
///
/// Errors: [`Error::InvalidArgument`] for a task ID, queue or group name that breaks its rules
/// (see [`QueueName`]), which Go does not check as strictly: such a message is corrupt to us.
impl TryFrom<TaskMessage> for StoredTask {
    type Error = Error;

    fn try_from(m: TaskMessage) -> Result<Self, Error> {
        Ok(StoredTask {
            type_name: m.r#type,
            payload: m.payload,
            headers: m.headers,
            id: TaskId::new(m.id)?,
            queue: QueueName::new(m.queue)?,
            max_retry: m.retry.max(0) as u32,
            retried: m.retried.max(0) as u32,
            last_error: string_from_go(m.error_msg),
            last_failed_at: instant_from_go(m.last_failed_at),
            timeout: duration_from_go(m.timeout),
            deadline: instant_from_go(m.deadline),
            unique_key: string_from_go(m.unique_key),
            group: string_from_go(m.group_key).map(GroupName::new).transpose()?,
            retention: duration_from_go(m.retention),
            completed_at: instant_from_go(m.completed_at),
        })
    }
}

impl From<&CoreServerInfo> for ServerInfo {
    fn from(s: &CoreServerInfo) -> Self {
        ServerInfo {
            host: s.host.clone(),
            pid: s.pid as i32,
            server_id: s.server_id.clone(),
            concurrency: s.concurrency as i32,
            queues: s.queues.iter().map(|(q, p)| (q.clone(), *p as i32)).collect(),
            strict_priority: s.strict_priority,
            status: s.status.as_str().to_owned(),
            start_time: Some(Timestamp::from_time(s.started)),
            active_worker_count: s.active_workers as i32,
        }
    }
}

impl From<ServerInfo> for CoreServerInfo {
    fn from(s: ServerInfo) -> Self {
        let status = match s.status.as_str() {
            "new" => ServerStatus::New,
            "stopped" => ServerStatus::Stopped,
            "closed" => ServerStatus::Closed,
            _ => ServerStatus::Active,
        };
        CoreServerInfo {
            host: s.host,
            pid: s.pid.max(0) as u32,
            server_id: s.server_id,
            concurrency: s.concurrency.max(0) as u32,
            queues: s.queues.into_iter().map(|(q, p)| (q, p.max(0) as u32)).collect(),
            strict_priority: s.strict_priority,
            status,
            started: s.start_time.and_then(Timestamp::to_time).unwrap_or(UNIX_EPOCH),
            active_workers: s.active_worker_count.max(0) as u32,
        }
    }
}

impl From<&CoreWorkerInfo> for WorkerInfo {
    fn from(w: &CoreWorkerInfo) -> Self {
        WorkerInfo {
            host: w.host.clone(),
            pid: w.pid as i32,
            server_id: w.server_id.clone(),
            task_id: w.task_id.clone(),
            task_type: w.task_type.clone(),
            task_payload: w.task_payload.clone(),
            queue: w.queue.clone(),
            start_time: Some(Timestamp::from_time(w.started)),
            deadline: Some(Timestamp::from_time(w.deadline)),
        }
    }
}

impl From<WorkerInfo> for CoreWorkerInfo {
    fn from(w: WorkerInfo) -> Self {
        CoreWorkerInfo {
            host: w.host,
            pid: w.pid.max(0) as u32,
            server_id: w.server_id,
            task_id: w.task_id,
            task_type: w.task_type,
            task_payload: w.task_payload,
            queue: w.queue,
            started: w.start_time.and_then(Timestamp::to_time).unwrap_or(UNIX_EPOCH),
            deadline: w.deadline.and_then(Timestamp::to_time).unwrap_or(UNIX_EPOCH),
        }
    }
}

/// `t` as a Timestamp, `None` as Go's zero time (which Go's CLI shows as "never").
fn timestamp_or_go_zero(t: Option<SystemTime>) -> Option<Timestamp> {
    Some(t.map_or_else(Timestamp::go_zero, Timestamp::from_time))
}

impl From<&asynq_core::broker::SchedulerEntry> for SchedulerEntry {
    fn from(e: &asynq_core::broker::SchedulerEntry) -> Self {
        SchedulerEntry {
            id: e.id.clone(),
            spec: e.spec.clone(),
            task_type: e.task_type.clone(),
            task_payload: e.task_payload.clone(),
            enqueue_options: e.options.clone(),
            next_enqueue_time: timestamp_or_go_zero(e.next),
            prev_enqueue_time: timestamp_or_go_zero(e.prev),
        }
    }
}

impl From<SchedulerEntry> for asynq_core::broker::SchedulerEntry {
    fn from(e: SchedulerEntry) -> Self {
        asynq_core::broker::SchedulerEntry {
            id: e.id,
            spec: e.spec,
            task_type: e.task_type,
            task_payload: e.task_payload,
            options: e.enqueue_options,
            next: e.next_enqueue_time.and_then(Timestamp::to_time),
            prev: e.prev_enqueue_time.and_then(Timestamp::to_time),
        }
    }
}

impl From<&asynq_core::broker::SchedulerEnqueueEvent> for SchedulerEnqueueEvent {
    fn from(e: &asynq_core::broker::SchedulerEnqueueEvent) -> Self {
        SchedulerEnqueueEvent { task_id: e.task_id.clone(), enqueue_time: Some(Timestamp::from_time(e.enqueued_at)) }
    }
}

impl From<SchedulerEnqueueEvent> for asynq_core::broker::SchedulerEnqueueEvent {
    fn from(e: SchedulerEnqueueEvent) -> Self {
        asynq_core::broker::SchedulerEnqueueEvent {
            task_id: e.task_id,
            enqueued_at: e.enqueue_time.and_then(Timestamp::to_time).unwrap_or(UNIX_EPOCH),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// Decodes `bytes` as a sequence of (field number, wire type) keys, so tests can pin the
    /// numbers prost writes.
    fn field_numbers(mut bytes: &[u8]) -> Vec<u32> {
        let mut numbers = Vec::new();
        while !bytes.is_empty() {
            let key = prost::encoding::decode_varint(&mut bytes).unwrap();
            let (number, wire_type) = ((key >> 3) as u32, key & 7);
            numbers.push(number);
            match wire_type {
                0 => {
                    prost::encoding::decode_varint(&mut bytes).unwrap();
                }
                2 => {
                    let len = prost::encoding::decode_varint(&mut bytes).unwrap() as usize;
                    bytes = &bytes[len..];
                }
                other => panic!("unexpected wire type {other}"),
            }
        }
        numbers.sort_unstable();
        numbers
    }

    #[test]
    fn task_message_field_numbers_match_go() {
        let msg = TaskMessage {
            r#type: "t".into(),
            payload: Bytes::from_static(b"p"),
            headers: [("k".to_owned(), "v".to_owned())].into(),
            id: "i".into(),
            queue: "q".into(),
            retry: 1,
            retried: 1,
            error_msg: "e".into(),
            last_failed_at: 1,
            timeout: 1,
            deadline: 1,
            unique_key: "u".into(),
            group_key: "g".into(),
            retention: 1,
            completed_at: 1,
        };
        assert_eq!(field_numbers(&msg.encode_to_vec()), (1..=15).collect::<Vec<_>>());
    }

    #[test]
    fn other_messages_field_numbers_match_go() {
        let ts = Some(Timestamp { seconds: 1, nanos: 1 });
        let server = ServerInfo {
            host: "h".into(),
            pid: 1,
            server_id: "s".into(),
            concurrency: 1,
            queues: [("q".to_owned(), 1)].into(),
            strict_priority: true,
            status: "active".into(),
            start_time: ts,
            active_worker_count: 1,
        };
        assert_eq!(field_numbers(&server.encode_to_vec()), (1..=9).collect::<Vec<_>>());
        let worker = WorkerInfo {
            host: "h".into(),
            pid: 1,
            server_id: "s".into(),
            task_id: "t".into(),
            task_type: "y".into(),
            task_payload: Bytes::from_static(b"p"),
            queue: "q".into(),
            start_time: ts,
            deadline: ts,
        };
        assert_eq!(field_numbers(&worker.encode_to_vec()), (1..=9).collect::<Vec<_>>());
        let entry = SchedulerEntry {
            id: "i".into(),
            spec: "@every 1s".into(),
            task_type: "t".into(),
            task_payload: Bytes::from_static(b"p"),
            enqueue_options: vec!["Queue(\"q\")".into()],
            next_enqueue_time: ts,
            prev_enqueue_time: ts,
        };
        assert_eq!(field_numbers(&entry.encode_to_vec()), (1..=7).collect::<Vec<_>>());
        let event = SchedulerEnqueueEvent { task_id: "t".into(), enqueue_time: ts };
        assert_eq!(field_numbers(&event.encode_to_vec()), [1, 2]);
        assert_eq!(field_numbers(&Timestamp { seconds: 1, nanos: 1 }.encode_to_vec()), [1, 2]);
    }

    fn blank() -> StoredTask {
        StoredTask::new(TaskId::from_static("i"), QueueName::from_static("q"), "t")
    }

    fn go_blank() -> TaskMessage {
        TaskMessage { id: "i".into(), queue: "q".into(), r#type: "t".into(), ..Default::default() }
    }

    #[test]
    fn a_stored_task_round_trips_through_gos_units() {
        let at = |secs| from_unix_secs(secs);
        let task = StoredTask {
            payload: Bytes::from_static(b"p"),
            max_retry: 3,
            retried: 1,
            last_error: Some("boom".into()),
            last_failed_at: Some(at(1_700_000_000)),
            timeout: Some(Duration::from_secs(90)),
            deadline: Some(at(-5)),
            unique_key: Some("asynq:{q}:unique:x".into()),
            group: Some(GroupName::from_static("g")),
            retention: Some(Duration::from_secs(3_600)),
            completed_at: Some(at(1_700_000_100)),
            ..blank()
        };
        let go = TaskMessage::from(&task);
        assert_eq!((go.retry, go.timeout, go.deadline, go.retention), (3, 90, -5, 3_600));
        assert_eq!(StoredTask::try_from(go).unwrap(), task);
        // "Not set" is Go's zero value both ways.
        let go = TaskMessage::from(&blank());
        assert_eq!(go, go_blank());
        assert_eq!(StoredTask::try_from(go).unwrap(), blank());
    }

    #[test]
    fn corrupt_numbers_are_read_into_range() {
        let longest = Some(Duration::from_secs(MAX_DURATION.as_secs()));
        let read = |retry, timeout, instant| {
            StoredTask::try_from(TaskMessage {
                retry,
                retried: retry,
                timeout,
                retention: timeout,
                deadline: instant,
                last_failed_at: instant,
                completed_at: instant,
                ..go_blank()
            })
            .unwrap()
        };
        let task = read(i32::MIN, i64::MAX, i64::MAX);
        assert_eq!((task.max_retry, task.retried, task.timeout, task.retention), (0, 0, longest, longest));
        let latest = Some(from_unix_secs(asynq_core::time::MAX_UNIX_SECS));
        assert_eq!((task.deadline, task.last_failed_at, task.completed_at), (latest, latest, latest));
        let task = read(-1, i64::MIN, i64::MIN);
        assert_eq!((task.timeout, task.retention), (None, None));
        assert_eq!(task.deadline, Some(from_unix_secs(asynq_core::time::MIN_UNIX_SECS)));
        // Written back, a count past Go's int32 saturates.
        let many = TaskMessage::from(&StoredTask { max_retry: u32::MAX, retried: u32::MAX, ..blank() });
        assert_eq!((many.retry, many.retried), (i32::MAX, i32::MAX));
    }

    #[test]
    fn names_our_rules_refuse_make_a_message_unreadable() {
        for go in [
            TaskMessage { id: " ".into(), ..go_blank() },
            TaskMessage { id: "a\nb".into(), ..go_blank() },
            TaskMessage { queue: "a{b}".into(), ..go_blank() },
            TaskMessage { group_key: "g\0".into(), ..go_blank() },
        ] {
            assert!(matches!(StoredTask::try_from(go.clone()), Err(Error::InvalidArgument { .. })), "{go:?}");
        }
    }

    #[test]
    fn go_zero_time_means_never() {
        assert_eq!(Timestamp::go_zero().to_time(), None);
        let t = UNIX_EPOCH + Duration::from_millis(1_500);
        assert_eq!(Timestamp::from_time(t), Timestamp { seconds: 1, nanos: 500_000_000 });
        assert_eq!(Timestamp::from_time(t).to_time(), Some(t));
        let before = UNIX_EPOCH - Duration::from_millis(1_500);
        assert_eq!(Timestamp::from_time(before), Timestamp { seconds: -2, nanos: 500_000_000 });
    }
}
