//! Durable steps for [`RedisBroker`]: each record is a field `step:<name>` of the task's own
//! hash (ours; Go asynq neither reads nor writes it), holding
//! `<recorded at, Unix milliseconds>:<result bytes>`, so records go when the hash goes and a
//! record costs one script call (`record_step.lua`, which writes only to an active task).

use crate::RedisBroker;
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::Steps;
use asynq_core::steps::{StepName, StepRecord, sort_step_records};
use asynq_core::{Error, QueueName, Result, TaskId};
use redis::Script;
use std::sync::LazyLock;
use std::time::{Duration, UNIX_EPOCH};

static RECORD: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/record_step.lua")));
static READ: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/step_records.lua")));

/// The prefix of a step record's field in the task hash.
pub(crate) const STEP_FIELD_PREFIX: &str = "step:";

#[async_trait]
impl Steps for RedisBroker {
    async fn step_records(&self, queue: &QueueName, id: &TaskId) -> Result<Vec<StepRecord>> {
        let mut call = ScriptCall::new(&READ);
        call.key(self.queue_keys(queue).task(id));
        let flat: Vec<Vec<u8>> = call.run(&mut self.conn(), "read step records").await?;
        Ok(decode_all(flat))
    }

    async fn record_step(&self, queue: &QueueName, id: &TaskId, record: &StepRecord) -> Result<()> {
        let mut call = ScriptCall::new(&RECORD);
        call.key(self.queue_keys(queue).task(id));
        call.arg(format!("{STEP_FIELD_PREFIX}{}", record.name())).arg(encode(record));
        match call.run::<i64>(&mut self.conn(), "record a step").await? {
            1 => Ok(()),
            _ => Err(Error::TaskNotFound { queue: queue.to_owned(), id: id.to_owned() }),
        }
    }
}

/// The field's value for `record`.
pub(crate) fn encode(record: &StepRecord) -> Vec<u8> {
    let mut value = format!("{}:", record.recorded_at_millis()).into_bytes();
    value.extend_from_slice(record.result());
    value
}

/// The record in field `field` with value `value`; `None` for what this module did not write.
pub(crate) fn decode(field: &[u8], value: &[u8]) -> Option<StepRecord> {
    let name = std::str::from_utf8(field).ok()?.strip_prefix(STEP_FIELD_PREFIX)?;
    let colon = value.iter().position(|b| *b == b':')?;
    let millis: u64 = std::str::from_utf8(&value[..colon]).ok()?.parse().ok()?;
    let at = UNIX_EPOCH.checked_add(Duration::from_millis(millis))?;
    StepRecord::new(StepName::new(name).ok()?, value[colon + 1..].to_vec(), at).ok()
}

/// The records of a flat field, value list, in listing order; fields that do not decode are
/// passed over.
pub(crate) fn decode_all(flat: Vec<Vec<u8>>) -> Vec<StepRecord> {
    let mut records: Vec<StepRecord> = flat.chunks_exact(2).filter_map(|pair| decode(&pair[0], &pair[1])).collect();
    sort_step_records(&mut records);
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_garbage_reads_as_none() {
        let at = UNIX_EPOCH + Duration::from_millis(1_764_000_000_123);
        let record = StepRecord::new(StepName::new("charge:1").unwrap(), &b"{\"a\":\"b:c\"}"[..], at).unwrap();
        assert_eq!(encode(&record), b"1764000000123:{\"a\":\"b:c\"}");
        assert_eq!(decode(b"step:charge:1", &encode(&record)), Some(record));
        for (field, value) in
            [(&b"step:x"[..], &b"nocolon"[..]), (b"step:x", b"x:1"), (b"other", b"1:v"), (b"step:", b"1:v")]
        {
            assert_eq!(decode(field, value), None, "{field:?} {value:?}");
        }
    }
}
