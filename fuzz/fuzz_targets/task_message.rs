//! Fuzzes the decoding of a stored task message (the `msg` field of a task hash), the bytes a
//! corrupt or hostile Redis hands the broker: through the public prost types, exactly the path
//! the broker's dequeue and recoverer take (`proto::TaskMessage::decode`, then the conversion to
//! the core message). It must never panic; a message that decodes must survive a round trip.
#![no_main]

use asynq_redis::proto;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Ok(decoded) = proto::TaskMessage::decode(data) else { return };
    let core: asynq_core::StoredTask = decoded.clone().into();
    let again = proto::TaskMessage::from(&core).encode_to_vec();
    let redecoded = proto::TaskMessage::decode(again.as_slice()).expect("a re-encoded message decodes");
    assert_eq!(redecoded, decoded);
    // What an operator's listing builds from it.
    let _ = asynq_core::TaskInfo::new(&core, asynq_core::TaskState::Archived, None, None);
});
