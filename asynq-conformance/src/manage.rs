//! Operator actions (`Manage`) and the inspector reads that come with them: running, archiving
//! and deleting one task from each state or every task of a state or group, replacing a
//! scheduled task's payload, removing a queue, listing a group, the daily history and the
//! memory estimate.
//!
//! The refusals carry Go asynq's texts (wire-format spec 6.9–6.13). Beyond Go, every delete
//! releases the uniqueness lock its task holds, pending and grouped tasks included.

mod bulk;
mod effects;
mod queue;
mod task;

pub use bulk::*;
pub use effects::*;
pub use queue::*;
pub use task::*;

use super::BrokerFactory;
use super::fixture::{
    DAY, Fixture, archive, assert_duplicate, assert_queue_not_found, assert_task_not_found, at, millis, names, retry,
    secs,
};
use asynq_core::broker::{Dequeue, GroupInfo, Inspect, Manage, OperatorBroker, Outcome, Page};
use asynq_core::{
    Broker, BulkAction, BulkProgress, DailyStats, Error, GroupName, QueueInfo, QueueName, Result, StoredTask, Task,
    TaskId, TaskOptions, TaskSet, TaskState,
};
use bytes::Bytes;
use std::fmt::Debug;
use std::sync::PoisonError;
use std::time::Duration;

/// Long enough for a broker to deliver a wake-up over loopback many times over.
const DELIVERY: Duration = Duration::from_secs(5);

/// Checks that `result` is [`Error::FailedPrecondition`] with a message containing `text`.
#[track_caller]
fn assert_refused<T: Debug>(result: Result<T>, text: &str) {
    match result {
        Err(Error::FailedPrecondition(message)) if message.contains(text) => {}
        other => panic!("expected FailedPrecondition containing {text:?}, got {other:?}"),
    }
}

/// Checks that `result` is [`Error::InvalidArgument`].
#[track_caller]
fn assert_invalid<T: Debug>(result: Result<T>, what: &str) {
    assert!(matches!(result, Err(Error::InvalidArgument { .. })), "{what}: expected InvalidArgument, got {result:?}");
}

/// The sizes of `info` in the order pending, active, scheduled, retry, archived, completed,
/// aggregating, groups.
fn sizes(info: &QueueInfo) -> [usize; 8] {
    [
        info.pending,
        info.active,
        info.scheduled,
        info.retry,
        info.archived,
        info.completed,
        info.aggregating,
        info.groups,
    ]
}

/// `(group, size)` of each group of `queue`.
async fn groups<B: Broker>(broker: &B, queue: &QueueName) -> Vec<(String, usize)> {
    let groups: Vec<GroupInfo> = broker.groups(queue).await.expect("groups");
    groups.into_iter().map(|g| (g.group.into_string(), g.size)).collect()
}

/// Puts one task in each state into queue `"q"`, each named after its state: `"active"`,
/// `"retry"` (due at 600 s, error `"boom"`), `"archived"` (error `"x"`), `"completed"`,
/// `"scheduled"` (due at 120 s), `"aggregating"` (in group `"g"`), `"pending"`. The clock does
/// not move. Returns the active task's message.
async fn one_task_per_state<B: Broker + Clone>(t: &Fixture<B>) -> StoredTask {
    let active = t.activate("q", "active").await;
    t.run("q", "retry", retry(at(600), "boom", true)).await;
    t.run("q", "archived", archive("x")).await;
    t.complete("q", "completed", secs(3_600)).await;
    let later = TaskOptions::new().queue("q").process_in(secs(120));
    t.enqueue("scheduled", &Task::new("t", "scheduled"), later).await.expect("enqueue scheduled");
    let grouped = TaskOptions::new().queue("q").group("g");
    t.enqueue("aggregating", &Task::new("t", "aggregating"), grouped).await.expect("enqueue grouped");
    t.plain("q", "pending").await;
    active
}

/// Unique for an hour in queue `"q"`.
fn unique() -> TaskOptions {
    TaskOptions::new().queue("q").unique(secs(3_600))
}
