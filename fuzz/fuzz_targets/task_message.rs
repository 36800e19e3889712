//! Fuzzes the decoding of a stored task message (the `msg` field of a task hash), the bytes a
//! corrupt or hostile Redis hands the broker: through the public prost types, exactly the path
//! the broker's dequeue and recoverer take (`proto::TaskMessage::decode`, then the conversion to
//! the core's stored task). It must never panic; the task a message is read as (its corrupt
//! numbers read into range) must be written back as a message that reads as the same task.
#![no_main]

use asynq_redis::proto;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Ok(decoded) = proto::TaskMessage::decode(data) else { return };
    // A message naming a task, queue or group our rules refuse is corrupt: nothing to round-trip.
    let Ok(core) = asynq_core::StoredTask::try_from(decoded) else { return };
    let again = proto::TaskMessage::from(&core).encode_to_vec();
    let redecoded = proto::TaskMessage::decode(again.as_slice()).expect("a re-encoded message decodes");
    assert_eq!(asynq_core::StoredTask::try_from(redecoded).expect("a re-encoded task reads"), core);
    // What an operator's listing builds from it.
    let _ = asynq_core::TaskInfo::new(&core, asynq_core::TaskState::Archived, None, None);
});
