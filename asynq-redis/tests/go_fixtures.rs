//! Our protobuf types against the messages real Go asynq v0.26 wrote into Redis
//! (`tests/fixtures/go-asynq/` in the repository): every `msg` decodes, and re-encoding what we decoded gives
//! a message that decodes to the same fields.

use asynq_core::StoredTask;
use asynq_redis::proto::TaskMessage;
use prost::Message;
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/go-asynq").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is JSON")
}

fn bytes(value: &Value) -> Vec<u8> {
    if let Some(text) = value.get("utf8").and_then(Value::as_str) {
        return text.as_bytes().to_vec();
    }
    let hex = value.get("hex").and_then(Value::as_str).expect("a utf8 or hex byte string");
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

/// Every task hash of a fixture: (key, decoded msg, state field).
fn task_hashes(fixture: &Value) -> Vec<(String, TaskMessage, String)> {
    let mut tasks = Vec::new();
    for (key, entry) in fixture.as_object().unwrap() {
        if entry["type"] != "hash" || !key.contains("}:t:") {
            continue;
        }
        let fields = &entry["fields"];
        let msg = TaskMessage::decode(bytes(&fields["msg"]).as_slice()).unwrap_or_else(|e| panic!("{key}: {e}"));
        let state = String::from_utf8(bytes(&fields["state"])).unwrap();
        tasks.push((key.clone(), msg, state));
    }
    tasks
}

#[test]
fn every_enqueued_message_decodes_with_the_fields_go_wrote() {
    let tasks = task_hashes(&fixture("v0.26.0-enqueued.json"));
    assert_eq!(tasks.len(), 6);
    for (key, msg, state) in &tasks {
        assert_eq!(key, &format!("asynq:{{interop}}:t:{}", msg.id));
        assert_eq!((msg.queue.as_str(), msg.retry, msg.timeout, msg.deadline), ("interop", 25, 1800, 0));
        assert!(msg.r#type.starts_with("interop:"), "{}", msg.r#type);
        match msg.r#type.as_str() {
            "interop:retention" => assert_eq!(msg.retention, 3600),
            "interop:group" => assert_eq!((msg.group_key.as_str(), state.as_str()), ("g1", "aggregating")),
            "interop:unique" => {
                assert_eq!(msg.unique_key, "asynq:{interop}:unique:interop:unique:e34bfc4fa54af4601f41bd50b9214f56")
            }
            "interop:scheduled" => assert_eq!(state, "scheduled"),
            _ => assert_eq!(state, "pending"),
        }
    }
}

#[test]
fn processed_messages_carry_errors_retries_and_completion() {
    let tasks = task_hashes(&fixture("v0.26.0-processed.json"));
    let by_id = |id: &str| tasks.iter().find(|(_, m, _)| m.id == id).unwrap_or_else(|| panic!("no task {id}"));
    let (_, retained, state) = by_id("ok-retained");
    assert_eq!(state, "completed");
    assert!(retained.completed_at > 0);
    let (_, retry, state) = by_id("fail-retry");
    assert_eq!((state.as_str(), retry.retried, retry.retry), ("retry", 1, 3));
    assert!(!retry.error_msg.is_empty() && retry.last_failed_at > 0);
    let (_, archived, state) = by_id("fail-archive");
    assert_eq!((state.as_str(), archived.retried, archived.retry), ("archived", 0, 0));
    let (_, skipped, state) = by_id("fail-skipretry");
    assert_eq!(state, "archived");
    assert!(skipped.error_msg.contains("skip retry for the task"), "{}", skipped.error_msg);
}

#[test]
fn our_encoding_of_a_go_message_decodes_to_the_same_fields() {
    for name in ["v0.26.0-enqueued.json", "v0.26.0-processed.json"] {
        for (key, go, _) in task_hashes(&fixture(name)) {
            let core = StoredTask::try_from(go.clone()).expect("Go's names follow our rules");
            let ours = TaskMessage::from(&core).encode_to_vec();
            assert_eq!(TaskMessage::decode(ours.as_slice()).unwrap(), go, "{key}");
        }
    }
}
