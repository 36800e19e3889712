//! How durable steps are stored in a task's hash (fields of ours; Go asynq neither reads nor
//! writes them, and they go when the hash goes): a record in `step:<name>`, holding
//! `<recorded at, Unix milliseconds>:<result bytes>`; why a handler parked its task in
//! `parked`; a kept signal in `signal:<name>`.

use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord, sort_step_records};
use asynq_core::{TaskInfo, TaskState};
use redis::{FromRedisValue, Value};
use std::time::{Duration, UNIX_EPOCH};

/// The prefix of a step record's field in the task hash.
pub(crate) const STEP_FIELD_PREFIX: &str = "step:";

/// The prefix of a kept signal's field in the task hash.
pub(crate) const SIGNAL_FIELD_PREFIX: &str = "signal:";

/// The `parked` field's value: `sleep:<until, Unix ms>` or `signal:<until, Unix ms>:<name>`.
pub(crate) fn encode_parked(parked: &Parked) -> String {
    match &parked.reason {
        ParkReason::Sleep => format!("sleep:{}", parked.until_millis()),
        ParkReason::Signal(name) => format!("signal:{}:{name}", parked.until_millis()),
        // A reason this version does not know is not written by it.
        _ => format!("other:{}", parked.until_millis()),
    }
}

/// The parked state in a `parked` field's value; `None` for what this module did not write.
pub(crate) fn decode_parked(value: &str) -> Option<Parked> {
    let (kind, rest) = value.split_once(':')?;
    let (millis, name) = match rest.split_once(':') {
        Some((millis, name)) => (millis, Some(name)),
        None => (rest, None),
    };
    let until = UNIX_EPOCH.checked_add(Duration::from_millis(millis.parse().ok()?))?;
    let reason = match (kind, name) {
        ("sleep", None) => ParkReason::Sleep,
        ("signal", Some(name)) => ParkReason::Signal(StepName::new(name).ok()?),
        _ => return None,
    };
    Some(Parked::new(reason, until))
}

/// Sets `info`'s step records and, while it is scheduled, why it is parked, from
/// `task_info.lua`'s last two values.
pub(crate) fn read_into(info: &mut TaskInfo, parked: &Value, steps: &Value) {
    let flat = Vec::<Vec<u8>>::from_redis_value_ref(steps).unwrap_or_default();
    info.steps = decode_all(flat);
    if info.state == TaskState::Scheduled {
        let parked = Option::<String>::from_redis_value_ref(parked).ok().flatten();
        info.parked = parked.as_deref().and_then(decode_parked);
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
