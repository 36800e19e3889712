//! Every Redis key name asynq uses, built in one place, exactly as Go asynq v0.26 builds them.
//!
//! Every per-queue key carries the queue name in braces, `asynq:{<queue>}:…`: the Redis Cluster
//! hash tag that puts all of a queue's keys in one slot, so each script touches one slot only.

use md5::{Digest, Md5};
use std::fmt::Write;

/// The set of every queue that ever received a task.
pub const ALL_QUEUES: &str = "asynq:queues";
/// The sorted set of live servers' keys, scored by expiry.
pub const ALL_SERVERS: &str = "asynq:servers";
/// The sorted set of live servers' workers keys, scored by expiry.
pub const ALL_WORKERS: &str = "asynq:workers";
/// The sorted set of live schedulers' entry keys, scored by expiry.
pub const ALL_SCHEDULERS: &str = "asynq:schedulers";
/// The pub/sub channel that carries the IDs of tasks to cancel.
pub const CANCEL_CHANNEL: &str = "asynq:cancel";

/// The key names of one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueKeys {
    prefix: String,
}

impl QueueKeys {
    /// The keys of queue `queue`.
    pub fn new(queue: &str) -> Self {
        Self { prefix: format!("asynq:{{{queue}}}:") }
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.prefix)
    }

    /// `asynq:{q}:` — the prefix of every key of the queue.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `asynq:{q}:t:` — the prefix of task hashes.
    pub fn task_prefix(&self) -> String {
        self.key("t:")
    }

    /// `asynq:{q}:t:<id>` — the hash holding one task.
    pub fn task(&self, id: &str) -> String {
        format!("{}t:{id}", self.prefix)
    }

    /// `asynq:{q}:pending` — list of ready task IDs.
    pub fn pending(&self) -> String {
        self.key("pending")
    }

    /// `asynq:{q}:active` — list of leased task IDs.
    pub fn active(&self) -> String {
        self.key("active")
    }

    /// `asynq:{q}:lease` — sorted set of active task IDs by lease expiry.
    pub fn lease(&self) -> String {
        self.key("lease")
    }

    /// `asynq:{q}:scheduled` — sorted set by process time.
    pub fn scheduled(&self) -> String {
        self.key("scheduled")
    }

    /// `asynq:{q}:retry` — sorted set by retry time.
    pub fn retry(&self) -> String {
        self.key("retry")
    }

    /// `asynq:{q}:archived` — sorted set by archive time.
    pub fn archived(&self) -> String {
        self.key("archived")
    }

    /// `asynq:{q}:completed` — sorted set by expiry.
    pub fn completed(&self) -> String {
        self.key("completed")
    }

    /// `asynq:{q}:paused` — exists while the queue is paused.
    pub fn paused(&self) -> String {
        self.key("paused")
    }

    /// `asynq:{q}:processed` — total processed counter.
    pub fn processed_total(&self) -> String {
        self.key("processed")
    }

    /// `asynq:{q}:failed` — total failed counter.
    pub fn failed_total(&self) -> String {
        self.key("failed")
    }

    /// `asynq:{q}:processed:<YYYY-MM-DD>` — processed counter of one UTC day.
    pub fn processed_on(&self, date: &str) -> String {
        format!("{}processed:{date}", self.prefix)
    }

    /// `asynq:{q}:failed:<YYYY-MM-DD>` — failed counter of one UTC day.
    pub fn failed_on(&self, date: &str) -> String {
        format!("{}failed:{date}", self.prefix)
    }

    /// `asynq:{q}:groups` — set of groups with aggregating tasks.
    pub fn groups(&self) -> String {
        self.key("groups")
    }

    /// `asynq:{q}:g:` — the prefix of group sorted sets.
    pub fn group_prefix(&self) -> String {
        self.key("g:")
    }

    /// `asynq:{q}:g:<group>` — sorted set of a group's task IDs by time added.
    pub fn group(&self, group: &str) -> String {
        format!("{}g:{group}", self.prefix)
    }

    /// `asynq:{q}:g:<group>:<set id>` — one aggregation set.
    pub fn aggregation_set(&self, group: &str, set_id: &str) -> String {
        format!("{}g:{group}:{set_id}", self.prefix)
    }

    /// `asynq:{q}:aggregation_sets` — sorted set of aggregation set keys by deadline.
    pub fn aggregation_sets(&self) -> String {
        self.key("aggregation_sets")
    }

    /// `asynq:{q}:idle_workers` — set (with a short TTL) while some Rust server serving the queue
    /// waits for work; a producer that sees it publishes on [`QueueKeys::ready_channel`] and
    /// clears it. Ours only; Go asynq neither writes nor reads it.
    pub fn idle_workers(&self) -> String {
        self.key("idle_workers")
    }

    /// `asynq:{q}:waiting` — set (with a short TTL, renewed while the wait lasts) while some Rust
    /// client waits for a task of the queue to finish; the scripts that settle many tasks at
    /// once look for the tasks' `waiters` marks only while it exists. Ours only; Go asynq
    /// neither writes nor reads it.
    pub fn waiting(&self) -> String {
        self.key("waiting")
    }

    /// `asynq:{q}:rate` — the queue's rate-limit token bucket, a hash of `tokens` (a decimal
    /// number) and `updated_at` (Unix microseconds), expiring once a full bucket would have
    /// refilled. Ours only; Go asynq neither writes nor reads it.
    pub fn rate_limit(&self) -> String {
        self.key("rate")
    }

    /// `asynq:{q}:ready` — the pub/sub channel that wakes idle Rust servers when a task becomes
    /// pending. Ours only.
    pub fn ready_channel(&self) -> String {
        self.key("ready")
    }

    /// `asynq:{q}:finished` — the pub/sub channel on which the scripts that finish a task for
    /// good (done, complete, archive) publish its ID, when a Rust client waits for it (marked by
    /// the task hash's `waiters` field). Ours only.
    pub fn finished_channel(&self) -> String {
        self.key("finished")
    }

    /// `asynq:{q}:unique:<type>:<md5 hex of payload>` — the uniqueness lock of a task; an
    /// empty payload gives the trailing-colon form Go writes for a `nil` payload.
    pub fn unique(&self, type_name: &str, payload: &[u8]) -> String {
        let mut key = format!("{}unique:{type_name}:", self.prefix);
        if !payload.is_empty() {
            for byte in Md5::digest(payload) {
                write!(key, "{byte:02x}").expect("writing to a String cannot fail");
            }
        }
        key
    }

    /// `unique_key` if it names one of this queue's uniqueness locks (`asynq:{q}:unique:…`, the
    /// only keys Go and this broker lock with), `None` otherwise. A corrupt message's
    /// `unique_key` naming any other key (another queue's, which on a Cluster lies in another
    /// slot, or a task hash or list of this queue) is not a lock to release.
    pub fn lock<'a>(&self, unique_key: &'a str) -> Option<&'a str> {
        unique_key.strip_prefix(self.prefix.as_str()).filter(|rest| rest.starts_with("unique:")).map(|_| unique_key)
    }
}

/// `asynq:servers:{<host>:<pid>:<server id>}` — one server's info.
pub fn server_info(host: &str, pid: u32, server_id: &str) -> String {
    format!("asynq:servers:{{{host}:{pid}:{server_id}}}")
}

/// `asynq:workers:{<host>:<pid>:<server id>}` — one server's running tasks.
pub fn workers(host: &str, pid: u32, server_id: &str) -> String {
    format!("asynq:workers:{{{host}:{pid}:{server_id}}}")
}

/// `asynq:schedulers:{<scheduler id>}` — one scheduler's entries.
pub fn scheduler_entries(scheduler_id: &str) -> String {
    format!("asynq:schedulers:{{{scheduler_id}}}")
}

/// `asynq:scheduler_history:<entry id>` — one cron entry's enqueue events (no hash tag, as in Go).
pub fn scheduler_history(entry_id: &str) -> String {
    format!("asynq:scheduler_history:{entry_id}")
}

/// `asynq:scheduler_fire:<fire id>` — the mark that one scheduled time of one periodic task was
/// enqueued, so other replicas of the scheduler skip it. Ours only; Go asynq neither writes nor
/// reads it.
pub fn scheduler_fire(fire_id: &str) -> String {
    format!("asynq:scheduler_fire:{fire_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_queues_own_uniqueness_locks_are_locks() {
        let k = QueueKeys::new("q");
        let own = k.unique("email", b"x");
        assert_eq!(k.lock(&own), Some(own.as_str()));
        for other in
            ["", "asynq:{q}:pending", "asynq:{q}:t:1", "asynq:{other}:unique:email:", "unique:x", "asynq:{q}unique:"]
        {
            assert_eq!(k.lock(other), None, "{other}");
        }
    }

    #[test]
    fn queue_keys_match_go_asynq() {
        let k = QueueKeys::new("interop");
        let pairs = [
            (k.task("fixed-id"), "asynq:{interop}:t:fixed-id"),
            (k.task_prefix(), "asynq:{interop}:t:"),
            (k.pending(), "asynq:{interop}:pending"),
            (k.active(), "asynq:{interop}:active"),
            (k.lease(), "asynq:{interop}:lease"),
            (k.scheduled(), "asynq:{interop}:scheduled"),
            (k.retry(), "asynq:{interop}:retry"),
            (k.archived(), "asynq:{interop}:archived"),
            (k.completed(), "asynq:{interop}:completed"),
            (k.paused(), "asynq:{interop}:paused"),
            (k.processed_total(), "asynq:{interop}:processed"),
            (k.failed_total(), "asynq:{interop}:failed"),
            (k.processed_on("2026-11-22"), "asynq:{interop}:processed:2026-11-22"),
            (k.failed_on("2026-11-22"), "asynq:{interop}:failed:2026-11-22"),
            (k.groups(), "asynq:{interop}:groups"),
            (k.group_prefix(), "asynq:{interop}:g:"),
            (k.group("g1"), "asynq:{interop}:g:g1"),
            (k.aggregation_set("g1", "abc"), "asynq:{interop}:g:g1:abc"),
            (k.aggregation_sets(), "asynq:{interop}:aggregation_sets"),
            (k.idle_workers(), "asynq:{interop}:idle_workers"),
            (k.waiting(), "asynq:{interop}:waiting"),
            (k.ready_channel(), "asynq:{interop}:ready"),
            (k.finished_channel(), "asynq:{interop}:finished"),
        ];
        for (built, expected) in pairs {
            assert_eq!(built, expected);
        }
        assert_eq!(k.prefix(), "asynq:{interop}:");
    }

    #[test]
    fn unique_keys_match_the_fixtures() {
        let k = QueueKeys::new("interop");
        // From ../shared/fixtures/go-asynq/v0.26.0-enqueued.txt.
        assert_eq!(
            k.unique("interop:unique", br#"{"k":"unique"}"#),
            "asynq:{interop}:unique:interop:unique:e34bfc4fa54af4601f41bd50b9214f56"
        );
        let u = QueueKeys::new("u");
        assert_eq!(u.unique("u:nil", b""), "asynq:{u}:unique:u:nil:");
    }

    #[test]
    fn global_keys_match_go_asynq() {
        assert_eq!(server_info("host", 42, "sid"), "asynq:servers:{host:42:sid}");
        assert_eq!(workers("host", 42, "sid"), "asynq:workers:{host:42:sid}");
        assert_eq!(scheduler_entries("h:1:u"), "asynq:schedulers:{h:1:u}");
        assert_eq!(scheduler_history("e"), "asynq:scheduler_history:e");
        assert_eq!(scheduler_fire("f"), "asynq:scheduler_fire:f");
        assert_eq!(
            (ALL_QUEUES, ALL_SERVERS, ALL_WORKERS, ALL_SCHEDULERS, CANCEL_CHANNEL),
            ("asynq:queues", "asynq:servers", "asynq:workers", "asynq:schedulers", "asynq:cancel")
        );
    }
}
