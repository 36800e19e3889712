//! The workload every scenario shares: one task type, one payload size, one queue.

use asynq_core::Task;

/// The type of every benchmark task.
pub const TASK_TYPE: &str = "bench:noop";

/// The payload of every benchmark task: 40 bytes, the same as the peer benchmark's.
pub const PAYLOAD: &[u8; 40] = br#"{"user_id":1234567,"action":"noop-bnch"}"#;

/// The queue every scenario but `idle` uses.
pub const QUEUE: &str = "default";

/// The queues of the `idle` scenario with their priorities, as a typical three-queue server has.
pub const IDLE_QUEUES: [(&str, u32); 3] = [("critical", 6), ("default", 3), ("low", 1)];

/// A benchmark task. Enqueueing the same task again gives it a new ID.
pub fn task() -> Task {
    Task::new(TASK_TYPE, &PAYLOAD[..])
}
