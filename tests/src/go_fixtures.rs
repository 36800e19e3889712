//! The Redis contents real Go asynq v0.26 wrote (`tests/fixtures/go-asynq/*.json`, kept in the
//! repository with a note of their origin), read and loaded into a test redis-server, so our
//! server can be run on Go's data and what our client writes compared with what Go's wrote.

use crate::RedisServer;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One key of a fixture: its Redis type, TTL and contents.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureKey {
    /// `hash`, `list`, `zset`, `set` or `string`.
    pub kind: String,
    /// Milliseconds left to live when captured, if the key expires.
    pub pttl_ms: Option<i64>,
    /// Hash fields, in name order.
    pub fields: BTreeMap<String, Vec<u8>>,
    /// List items head first, set members, or zset members with their scores.
    pub items: Vec<(Vec<u8>, Option<f64>)>,
    /// A string's value.
    pub value: Option<Vec<u8>>,
}

/// Reads fixture `name` (e.g. `v0.26.0-enqueued.json`): every key, by name.
pub fn read_fixture(name: &str) -> BTreeMap<String, FixtureKey> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/go-asynq").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let json: Value = serde_json::from_str(&text).expect("fixture is JSON");
    json.as_object()
        .expect("a fixture is an object keyed by Redis key")
        .iter()
        .map(|(key, entry)| {
            let fields = entry["fields"]
                .as_object()
                .map(|o| o.iter().map(|(f, v)| (f.clone(), bytes(v))).collect())
                .unwrap_or_default();
            let items = entry
                .get("items")
                .or_else(|| entry.get("members"))
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|item| match item.as_array() {
                            Some(pair) => (bytes(&pair[0]), pair[1].as_f64()),
                            None => (bytes(item), None),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let fixture = FixtureKey {
                kind: entry["type"].as_str().expect("type").to_owned(),
                pttl_ms: entry["pttl_ms"].as_i64(),
                fields,
                items,
                value: entry.get("value").map(bytes),
            };
            (key.clone(), fixture)
        })
        .collect()
}

/// A fixture byte string: `{"utf8": …}` or `{"hex": …}`.
fn bytes(value: &Value) -> Vec<u8> {
    if let Some(text) = value.get("utf8").and_then(Value::as_str) {
        return text.as_bytes().to_vec();
    }
    let hex = value.get("hex").and_then(Value::as_str).unwrap_or_else(|| panic!("not a byte string: {value}"));
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
}

/// Writes every key of `fixture` into `server`, with its TTL.
pub fn load_fixture(server: &RedisServer, fixture: &BTreeMap<String, FixtureKey>) {
    let run = |args: Vec<Vec<u8>>| {
        server.command(&args).unwrap_or_else(|e| panic!("loading fixture: {e}"));
    };
    for (key, k) in fixture {
        let key = key.as_bytes().to_vec();
        match k.kind.as_str() {
            "hash" => {
                let mut args = vec![b"HSET".to_vec(), key.clone()];
                for (field, value) in &k.fields {
                    args.push(field.as_bytes().to_vec());
                    args.push(value.clone());
                }
                run(args);
            }
            "list" => {
                let mut args = vec![b"RPUSH".to_vec(), key.clone()];
                args.extend(k.items.iter().map(|(item, _)| item.clone()));
                run(args);
            }
            "set" => {
                let mut args = vec![b"SADD".to_vec(), key.clone()];
                args.extend(k.items.iter().map(|(item, _)| item.clone()));
                run(args);
            }
            "zset" => {
                let mut args = vec![b"ZADD".to_vec(), key.clone()];
                for (member, score) in &k.items {
                    args.push(format!("{}", score.expect("zset member has a score")).into_bytes());
                    args.push(member.clone());
                }
                run(args);
            }
            "string" => run(vec![b"SET".to_vec(), key.clone(), k.value.clone().expect("string value")]),
            other => panic!("unknown fixture type {other}"),
        }
        if let Some(ttl) = k.pttl_ms {
            run(vec![b"PEXPIRE".to_vec(), key, ttl.to_string().into_bytes()]);
        }
    }
}
