//! Redis settings that decide how much memory a task takes, and the check made at connect time.
//!
//! A task is a hash (`msg`, `state`, `pending_since`, and later a result). Redis keeps a small
//! hash as one compact listpack only while every field is at most `hash-max-listpack-value`
//! bytes (`hash-max-ziplist-value` before Redis 7, an alias since); past it the hash becomes a
//! hash table. The default, 64 bytes, is smaller than almost any task's `msg` (106 bytes for a
//! 40-byte payload), so by default every task is stored the large way: 456 bytes of
//! `MEMORY USAGE` against 296 compact, 6.8 MB against 5.1 MB for 10 000 pending tasks
//! (redis-server 7.0; the guide's chapter on Redis, "The settings Redis needs").

use crate::connection::Connection;

/// The setting, by the name every supported Redis (6.2 and later) answers to.
const SETTING: &str = "hash-max-ziplist-value";

/// The value we recommend: tasks whose `msg` (about 66 bytes plus the payload, type name, ID
/// and queue name) fits in it are stored compactly.
pub(crate) const RECOMMENDED_HASH_VALUE_BYTES: u64 = 512;

/// The note for a server whose smallest limit, over every master, is `limit` bytes; none when
/// tasks of payloads up to a few hundred bytes are stored compactly already.
pub(crate) fn note(limit: u64) -> Option<String> {
    (limit < RECOMMENDED_HASH_VALUE_BYTES).then(|| {
        format!(
            "Redis stores a task compactly only while its message is at most hash-max-listpack-value bytes \
             (now {limit}); a message is about 66 bytes plus its payload, so most tasks take half again as much \
             memory; set hash-max-listpack-value {RECOMMENDED_HASH_VALUE_BYTES} to store tasks with payloads up to \
             about 400 bytes compactly"
        )
    })
}

/// Reads the limit on every master and describes what it costs, if anything. A server that
/// refuses `CONFIG` (some managed services) cannot be checked and yields no note.
pub(crate) async fn notes(conn: &mut Connection) -> Vec<String> {
    let Ok(limits) = conn.config_get(SETTING).await else {
        return Vec::new();
    };
    limits.iter().filter_map(|limit| limit.trim().parse().ok()).min().and_then(note).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_below_the_recommendation_is_noted_with_the_setting_to_change() {
        let note = note(64).expect("the default is noted");
        assert!(note.contains("(now 64)") && note.contains("set hash-max-listpack-value 512"), "{note}");
        assert_eq!(super::note(RECOMMENDED_HASH_VALUE_BYTES), None);
        assert_eq!(super::note(4096), None);
    }
}
