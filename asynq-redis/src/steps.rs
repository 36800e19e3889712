//! Durable steps for [`RedisBroker`]: each record is a field of the task's own hash (see
//! `step_fields.rs`), so records go when the hash goes and a record costs one script call
//! (`record_step.lua`, which writes only to an active task); `park.lua` parks a task. Each
//! logs its event (`step`, `parked`, `signalled`) when the queue keeps a log.

use crate::RedisBroker;
use crate::scripts::ScriptCall;
use crate::step_fields::{SIGNAL_FIELD_PREFIX, STEP_FIELD_PREFIX, decode_all, encode, encode_parked};
use async_trait::async_trait;
use asynq_core::broker::Steps;
use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord, check_signal_value};
use asynq_core::time::unix_secs;
use asynq_core::{Error, QueueName, Result, StoredTask, TaskId};
use bytes::Bytes;
use redis::Script;
use std::sync::LazyLock;

static RECORD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("scripts/message.lua"),
        include_str!("scripts/events.lua"),
        include_str!("scripts/record_step.lua")
    ))
});
static PARK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("scripts/message.lua"),
        include_str!("scripts/events.lua"),
        include_str!("scripts/common.lua"),
        include_str!("scripts/park.lua")
    ))
});
static SIGNAL: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("scripts/message.lua"),
        include_str!("scripts/events.lua"),
        include_str!("scripts/priority.lua"),
        include_str!("scripts/signal.lua")
    ))
});
static READ: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/step_records.lua")));

#[async_trait]
impl Steps for RedisBroker {
    async fn step_records(&self, queue: &QueueName, id: &TaskId) -> Result<Vec<StepRecord>> {
        let mut call = ScriptCall::new(&READ);
        call.key(self.queue_keys(queue).task(id));
        let flat: Vec<Vec<u8>> = call.run(&mut self.conn(), "read step records").await?;
        Ok(decode_all(flat))
    }

    async fn record_step(&self, queue: &QueueName, id: &TaskId, record: &StepRecord) -> Result<()> {
        let events = self.event_caps_now().await?.arg(queue);
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&RECORD);
        call.key(k.task(id)).key(k.events());
        call.arg(format!("{STEP_FIELD_PREFIX}{}", record.name())).arg(encode(record)).arg(id.as_str()).arg(events);
        match call.run::<i64>(&mut self.conn(), "record a step").await? {
            1 => Ok(()),
            _ => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
        }
    }

    async fn park(&self, message: &StoredTask, parked: &Parked, record: Option<&StepRecord>) -> Result<()> {
        let (queue, id) = (&message.queue, &message.id);
        let events = self.event_caps_now().await?.arg(queue);
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&PARK);
        call.key(k.task(id)).key(k.active()).key(k.lease()).key(k.scheduled()).key(k.events());
        call.arg(id.as_str()).arg(encode_parked(parked)).arg(unix_secs(parked.until)).arg(unix_secs(self.now()));
        match &parked.reason {
            ParkReason::Signal(name) => call.arg(format!("{SIGNAL_FIELD_PREFIX}{name}")),
            _ => call.arg(""),
        };
        match record {
            Some(record) => call.arg(format!("{STEP_FIELD_PREFIX}{}", record.name())).arg(encode(record)),
            None => call.arg("").arg(""),
        };
        call.arg(self.namespace().due_channel()).arg(events);
        match call.run::<i64>(&mut self.conn(), "park a task").await? {
            1 => Ok(()),
            _ => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
        }
    }

    async fn signal(&self, queue: &QueueName, id: &TaskId, name: &StepName, value: Bytes) -> Result<bool> {
        check_signal_value(&value)?;
        let events = self.event_caps_now().await?.arg(queue);
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&SIGNAL);
        call.key(k.task(id)).key(k.pending()).key(k.scheduled()).key(k.idle_workers());
        call.key(k.prioritized()).key(k.priority_sequence()).key(k.events());
        call.arg(id.as_str()).arg(name.as_str()).arg(value.as_ref()).arg(k.ready_channel()).arg(events);
        match call.run::<i64>(&mut self.conn(), "signal a task").await? {
            0 => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
            2 => {
                self.pubsub().made_pending(queue);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn signal_value(&self, queue: &QueueName, id: &TaskId, name: &StepName) -> Result<Option<Bytes>> {
        let mut conn = self.conn();
        let field = format!("{SIGNAL_FIELD_PREFIX}{name}");
        let value: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(self.queue_keys(queue).task(id))
            .arg(field)
            .query_async(&mut conn)
            .await
            .map_err(|e| crate::error::broker_error("read a signal", e))?;
        Ok(value.map(Bytes::from))
    }
}
