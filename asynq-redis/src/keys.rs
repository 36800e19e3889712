//! Every Redis key name asynq uses, built in one place, exactly as Go asynq v0.26 builds them in
//! the default namespace.
//!
//! Every key starts with the [`Namespace`]: `asynq`, Go's only one, unless the broker is given
//! another. Every per-queue key carries the queue name in braces, `<namespace>:{<queue>}:…`: the
//! Redis Cluster hash tag that puts all of a queue's keys in one slot, so each script touches one
//! slot only.

use crate::error::ConnectError;
use md5::{Digest, Md5};
use std::borrow::Cow;
use std::fmt::{self, Write};
use std::str::FromStr;

/// The prefix of every key and pub/sub channel a broker uses, so that several services (or
/// tenants, or environments) share one Redis or one Cluster without seeing each other's queues,
/// servers, schedulers or signals.
///
/// The default, [`Namespace::DEFAULT`] (`asynq`), is Go asynq's layout exactly: Go's servers,
/// its `asynq` CLI and asynqmon see only that namespace. A name is 1 to 64 ASCII letters,
/// digits, `_`, `-` or `.`: no `:`, so that no namespace's keys can be another's (`a:b`'s would
/// be `a`'s, and `asynq:x`'s Go's), no braces, which would move the Cluster hash tag off the
/// queue name, and no glob characters.
///
/// ```
/// use asynq_redis::Namespace;
///
/// let orders: Namespace = "orders".parse()?;
/// assert_eq!(orders.queue("default").pending(), "orders:{default}:pending");
/// assert_eq!(Namespace::DEFAULT.queue("default").pending(), "asynq:{default}:pending");
/// assert!("team:orders".parse::<Namespace>().is_err());
/// # Ok::<(), asynq_redis::ConnectError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Namespace(Cow<'static, str>);

impl Namespace {
    /// `asynq`: Go asynq's keys, which Go's servers and tools read.
    pub const DEFAULT: Namespace = Namespace(Cow::Borrowed("asynq"));

    /// The longest name, in bytes.
    pub const MAX_LEN: usize = 64;

    /// Checks `name` against the rules above.
    pub fn new(name: impl Into<String>) -> Result<Self, ConnectError> {
        let name = name.into();
        let invalid = |reason: &'static str| ConnectError::InvalidNamespace { namespace: name.clone(), reason };
        if name.is_empty() {
            return Err(invalid("it is empty"));
        }
        if name.len() > Self::MAX_LEN {
            return Err(invalid("it is longer than 64 bytes"));
        }
        if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
            return Err(invalid(
                "only ASCII letters, digits, '_', '-' and '.' are allowed (no ':', which would let one \
                 namespace's keys be another's, and no braces, which would break Cluster hash tags)",
            ));
        }
        if name == Self::DEFAULT.as_str() {
            return Ok(Self::DEFAULT);
        }
        Ok(Self(Cow::Owned(name)))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is Go asynq's namespace, [`Namespace::DEFAULT`].
    pub fn is_default(&self) -> bool {
        *self == Self::DEFAULT
    }

    /// The keys of queue `queue` in this namespace.
    pub fn queue(&self, queue: &str) -> QueueKeys {
        QueueKeys { prefix: format!("{self}:{{{queue}}}:") }
    }

    /// `<ns>:queues` — the set of every queue that ever received a task.
    pub fn all_queues(&self) -> String {
        format!("{self}:queues")
    }

    /// `<ns>:servers` — the sorted set of live servers' keys, scored by expiry.
    pub fn all_servers(&self) -> String {
        format!("{self}:servers")
    }

    /// `<ns>:workers` — the sorted set of live servers' workers keys, scored by expiry.
    pub fn all_workers(&self) -> String {
        format!("{self}:workers")
    }

    /// `<ns>:schedulers` — the sorted set of live schedulers' entry keys, scored by expiry.
    pub fn all_schedulers(&self) -> String {
        format!("{self}:schedulers")
    }

    /// `<ns>:cancel` — the pub/sub channel that carries the IDs of tasks to cancel.
    pub fn cancel_channel(&self) -> String {
        format!("{self}:cancel")
    }

    /// `<ns>:due` — the pub/sub channel on which our enqueue scripts publish the scheduled set
    /// (`<ns>:{q}:scheduled`) of a queue in which a new task became the earliest due, so a
    /// forwarder sleeping until a later due time wakes for it. Ours only.
    pub fn due_channel(&self) -> String {
        format!("{self}:due")
    }

    /// The queue named by `key`, a key of this namespace's `<ns>:{q}:…` layout (as a
    /// [`Namespace::due_channel`] message carries); `None` for any other string.
    pub fn queue_of_key(&self, key: &str) -> Option<asynq_core::QueueName> {
        let rest = key.strip_prefix(self.as_str())?.strip_prefix(":{")?;
        asynq_core::QueueName::new(&rest[..rest.find('}')?]).ok()
    }

    /// `<ns>:cancel_requests` — the kept requests to cancel tasks, a sorted set of task IDs
    /// scored by expiry (Unix milliseconds), itself expiring when its newest request does. No
    /// hash tag: one command or script touches it alone. Ours only; Go asynq neither writes nor
    /// reads it (its servers hear requests on [`Namespace::cancel_channel`] alone).
    pub fn cancel_requests(&self) -> String {
        format!("{self}:cancel_requests")
    }

    /// `<ns>:server_requests:{<server id>}` — the request an operator made of one server (quiet
    /// or stop) and when it expires, read and deleted by that server's next heartbeat; the key
    /// expires by itself should the server be gone. Ours only: Go asynq's servers never read it.
    pub fn server_request(&self, server_id: &str) -> String {
        format!("{self}:server_requests:{{{server_id}}}")
    }

    /// The server ID in `server_key`, a [`Namespace::server_info`] key of this namespace, or
    /// `None` for a key of another shape.
    pub fn server_id_of<'a>(&self, server_key: &'a str) -> Option<&'a str> {
        let inner = server_key.strip_prefix(self.as_str())?.strip_prefix(":servers:{")?.strip_suffix('}')?;
        inner.rsplit_once(':').map(|(_, id)| id)
    }

    /// `<ns>:servers:{<host>:<pid>:<server id>}` — one server's info.
    pub fn server_info(&self, host: &str, pid: u32, server_id: &str) -> String {
        format!("{self}:servers:{{{host}:{pid}:{server_id}}}")
    }

    /// `<ns>:workers:{<host>:<pid>:<server id>}` — one server's running tasks.
    pub fn workers(&self, host: &str, pid: u32, server_id: &str) -> String {
        format!("{self}:workers:{{{host}:{pid}:{server_id}}}")
    }

    /// The [`Namespace::workers`] key of the server whose [`Namespace::server_info`] key is
    /// `server_key`, or `None` if `server_key` is not one of this namespace's.
    pub fn workers_of(&self, server_key: &str) -> Option<String> {
        let server = server_key.strip_prefix(self.as_str())?.strip_prefix(":servers:")?;
        Some(format!("{self}:workers:{server}"))
    }

    /// `<ns>:schedulers:{<scheduler id>}` — one scheduler's entries.
    pub fn scheduler_entries(&self, scheduler_id: &str) -> String {
        format!("{self}:schedulers:{{{scheduler_id}}}")
    }

    /// The scheduler ID inside a [`Namespace::scheduler_entries`] key, or `None` if `key` has
    /// another shape.
    pub fn scheduler_id_of<'a>(&self, key: &'a str) -> Option<&'a str> {
        key.strip_prefix(self.as_str())?.strip_prefix(":schedulers:{")?.strip_suffix('}')
    }

    /// `<ns>:scheduler_history:<entry id>` — one cron entry's enqueue events (no hash tag, as in
    /// Go).
    pub fn scheduler_history(&self, entry_id: &str) -> String {
        format!("{self}:scheduler_history:{entry_id}")
    }

    /// `<ns>:slots:<key>` — the holders of slots of a shared concurrency limit, a sorted set of
    /// task IDs scored by hold expiry (Unix milliseconds). No hash tag: one command or script
    /// touches it alone. Ours only; Go asynq neither writes nor reads it.
    pub fn slots(&self, key: &str) -> String {
        format!("{self}:slots:{key}")
    }

    /// `<ns>:slot_freed` — the pub/sub channel on which giving a shared concurrency slot back
    /// publishes the slot key, waking the servers that wait for a slot of it. Ours only.
    pub fn slot_freed_channel(&self) -> String {
        format!("{self}:slot_freed")
    }

    /// `<ns>:event_caps` — the queues that keep task event logs: a hash of queue name to the
    /// log's cap (how many events it keeps). Ours only; Go asynq neither writes nor reads
    /// it.
    pub fn event_caps(&self) -> String {
        format!("{self}:event_caps")
    }

    /// `<ns>:workflows` — the workflows kept, a sorted set of workflow IDs scored by the Unix
    /// second they were stored. Ours only; Go asynq neither writes nor reads it.
    pub fn workflows(&self) -> String {
        format!("{self}:workflows")
    }

    /// `<ns>:workflow:<id>` — the tasks of workflow `id`, parents first, a list of
    /// `<queue>\n<task ID>\n<parents>` (the parents' positions in the list, comma-separated;
    /// an entry of two lines has none), expiring with the workflow's record. No hash tag: single
    /// commands touch it. Ours only.
    pub fn workflow(&self, id: &str) -> String {
        format!("{self}:workflow:{id}")
    }

    /// `<ns>:workflow_types:<id>` — the task types of workflow `id`'s tasks, in the order of
    /// [`Namespace::workflow`]'s list, expiring with it; a record without it (an earlier version
    /// wrote none) has no types. No hash tag: single commands touch it. Ours only.
    pub fn workflow_types(&self, id: &str) -> String {
        format!("{self}:workflow_types:{id}")
    }

    /// `<ns>:workflow_cancelled:<id>` — the mark that workflow `id` was cancelled: empty while
    /// its cancel is under way, then `<archived>,<stopping>` (what the cancel did), expiring
    /// with the workflow's record. No hash tag: single commands touch it. Ours only.
    pub fn workflow_cancelled(&self, id: &str) -> String {
        format!("{self}:workflow_cancelled:{id}")
    }

    /// `<ns>:sharded_queues` — the declarations of sharded queues: a hash of logical queue name
    /// to `<generation>\n<shard 0>\n<shard 1>…` (the shards' queue names, which hold no line
    /// break), then while a previous generation drains after a reshard an empty line,
    /// `<its generation> <unix ms it drains since>` and its shards, a line each. No hash tag:
    /// single commands and `swap_sharded_queue.lua` touch it. Ours only; Go asynq neither writes
    /// nor reads it, and sees the shards as ordinary queues.
    pub fn sharded_queues(&self) -> String {
        format!("{self}:sharded_queues")
    }

    /// `<ns>:scheduler_fire:<fire id>` — the mark that one scheduled time of one periodic task
    /// was enqueued, so other replicas of the scheduler skip it. Ours only; Go asynq neither
    /// writes nor reads it.
    pub fn scheduler_fire(&self, fire_id: &str) -> String {
        format!("{self}:scheduler_fire:{fire_id}")
    }
}

impl Default for Namespace {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Namespace({:?})", self.as_str())
    }
}

impl FromStr for Namespace {
    type Err = ConnectError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::new(name)
    }
}

/// The key names of one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueKeys {
    prefix: String,
}

impl QueueKeys {
    fn key(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.prefix)
    }

    /// `<ns>:{q}:` — the prefix of every key of the queue.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `<ns>:{q}:t:` — the prefix of task hashes.
    pub fn task_prefix(&self) -> String {
        self.key("t:")
    }

    /// `<ns>:{q}:t:<id>` — the hash holding one task.
    pub fn task(&self, id: &str) -> String {
        format!("{}t:{id}", self.prefix)
    }

    /// `<ns>:{q}:pending` — list of ready task IDs.
    pub fn pending(&self) -> String {
        self.key("pending")
    }

    /// `<ns>:{q}:prioritized` — sorted set of the pending task IDs of a priority other than the
    /// default, lowest score next to run (`scripts/priority.lua` says how they are scored). Ours
    /// only; Go asynq neither writes nor reads it.
    pub fn prioritized(&self) -> String {
        self.key("prioritized")
    }

    /// `<ns>:{q}:priority_seq` — the counter that orders prioritized tasks of one priority
    /// first in first out. Ours only; Go asynq neither writes nor reads it.
    pub fn priority_sequence(&self) -> String {
        self.key("priority_seq")
    }

    /// `<ns>:{q}:active` — list of leased task IDs.
    pub fn active(&self) -> String {
        self.key("active")
    }

    /// `<ns>:{q}:lease` — sorted set of active task IDs by lease expiry.
    pub fn lease(&self) -> String {
        self.key("lease")
    }

    /// `<ns>:{q}:scheduled` — sorted set by process time.
    pub fn scheduled(&self) -> String {
        self.key("scheduled")
    }

    /// `<ns>:{q}:retry` — sorted set by retry time.
    pub fn retry(&self) -> String {
        self.key("retry")
    }

    /// `<ns>:{q}:archived` — sorted set by archive time.
    pub fn archived(&self) -> String {
        self.key("archived")
    }

    /// `<ns>:{q}:completed` — sorted set by expiry.
    pub fn completed(&self) -> String {
        self.key("completed")
    }

    /// `<ns>:{q}:paused` — exists while the queue is paused.
    pub fn paused(&self) -> String {
        self.key("paused")
    }

    /// `<ns>:{q}:processed` — total processed counter.
    pub fn processed_total(&self) -> String {
        self.key("processed")
    }

    /// `<ns>:{q}:failed` — total failed counter.
    pub fn failed_total(&self) -> String {
        self.key("failed")
    }

    /// `<ns>:{q}:processed:<YYYY-MM-DD>` — processed counter of one UTC day.
    pub fn processed_on(&self, date: &str) -> String {
        format!("{}processed:{date}", self.prefix)
    }

    /// `<ns>:{q}:failed:<YYYY-MM-DD>` — failed counter of one UTC day.
    pub fn failed_on(&self, date: &str) -> String {
        format!("{}failed:{date}", self.prefix)
    }

    /// `<ns>:{q}:groups` — set of groups with aggregating tasks.
    pub fn groups(&self) -> String {
        self.key("groups")
    }

    /// `<ns>:{q}:groups:size` — the group index (ours; Go neither writes nor reads it; see
    /// `scripts/group_index.lua`): sorted set of each registered group by how many tasks it
    /// holds. Its name is [`QueueKeys::groups`]'s with a suffix, which the scripts rely on.
    pub fn group_index_size(&self) -> String {
        self.key("groups:size")
    }

    /// `<ns>:{q}:groups:oldest` — the group index: sorted set of each registered, non-empty
    /// group by its oldest task's score.
    pub fn group_index_oldest(&self) -> String {
        self.key("groups:oldest")
    }

    /// `<ns>:{q}:groups:newest` — the group index: sorted set of each registered, non-empty
    /// group by its newest task's score.
    pub fn group_index_newest(&self) -> String {
        self.key("groups:newest")
    }

    /// `<ns>:{q}:groups:tasks` — the group index: how many tasks its groups hold in all.
    pub fn group_index_tasks(&self) -> String {
        self.key("groups:tasks")
    }

    /// `<ns>:{q}:groups:scan` — the group index: hash of the reconciliation's cursors.
    pub fn group_index_scan(&self) -> String {
        self.key("groups:scan")
    }

    /// `<ns>:{q}:g:` — the prefix of group sorted sets.
    pub fn group_prefix(&self) -> String {
        self.key("g:")
    }

    /// `<ns>:{q}:g:<group>` — sorted set of a group's task IDs by time added.
    pub fn group(&self, group: &str) -> String {
        format!("{}g:{group}", self.prefix)
    }

    /// `<ns>:{q}:g:<group>:<set id>` — one aggregation set.
    pub fn aggregation_set(&self, group: &str, set_id: &str) -> String {
        format!("{}g:{group}:{set_id}", self.prefix)
    }

    /// `<ns>:{q}:aggregation_sets` — sorted set of aggregation set keys by deadline.
    pub fn aggregation_sets(&self) -> String {
        self.key("aggregation_sets")
    }

    /// `<ns>:{q}:idle_workers` — set while some Rust server serving the queue waits for work
    /// (it expires after an hour unless a server renews it, which a waiting server does every
    /// half hour at the latest); a producer that sees it publishes on
    /// [`QueueKeys::ready_channel`] and clears it. Ours only; Go asynq neither writes nor reads
    /// it.
    pub fn idle_workers(&self) -> String {
        self.key("idle_workers")
    }

    /// `<ns>:{q}:waiting` — set (with a short TTL, renewed while the wait lasts) while some Rust
    /// client waits for a task of the queue to finish; the scripts that settle many tasks at
    /// once look for the tasks' `waiters` marks only while it exists. Ours only; Go asynq
    /// neither writes nor reads it.
    pub fn waiting(&self) -> String {
        self.key("waiting")
    }

    /// `<ns>:{q}:rate` — the queue's rate-limit token bucket, a hash of `tokens` (a decimal
    /// number) and `updated_at` (Unix microseconds), expiring once a full bucket would have
    /// refilled. Ours only; Go asynq neither writes nor reads it.
    pub fn rate_limit(&self) -> String {
        self.key("rate")
    }

    /// `<ns>:{q}:debounce:<key>` — the ID of the task last enqueued with debounce key `key`,
    /// expiring some time after that task was due. Ours only; Go asynq neither writes nor reads
    /// it.
    pub fn debounce(&self, key: &str) -> String {
        format!("{}debounce:{key}", self.prefix)
    }

    /// `<ns>:{q}:events` — the queue's task event log, a stream trimmed to its cap (`MAXLEN`),
    /// written only while `<ns>:event_caps` names the queue. Ours only; Go asynq
    /// neither writes nor reads it.
    pub fn events(&self) -> String {
        self.key("events")
    }

    /// `<ns>:{q}:metrics:<resolution>:<start>` — one bucket (`minute` or `hour`, starting at
    /// Unix second `start`) of the queue's per task type metrics: a hash of `<type>:runs`,
    /// `<type>:failed`, `<type>:ms`, `<type>:max` and `types`, expiring some time after its last
    /// write. Ours only; Go asynq neither writes nor reads it.
    pub fn task_metrics(&self, resolution: &str, start: u64) -> String {
        format!("{}metrics:{resolution}:{start}", self.prefix)
    }

    /// `<ns>:{q}:wf:` — the prefix of the queue's workflow keys: `wf:parents:<id>` and
    /// `wf:children:<id>` (lists of queue, ID, queue, ID, ... of the tasks a workflow task waits
    /// for and, when they are many or in other queues, of those waiting for it),
    /// `wf:outcome:<id>` (how it settled for good, expiring) and the keys below. Ours only; Go
    /// asynq neither writes nor reads them.
    pub fn workflow_prefix(&self) -> String {
        self.key("wf:")
    }

    /// `<ns>:{q}:wf:parents:<id>` — see [`QueueKeys::workflow_prefix`].
    pub fn workflow_parents(&self, id: &str) -> String {
        format!("{}wf:parents:{id}", self.prefix)
    }

    /// `<ns>:{q}:wf:children:<id>` — see [`QueueKeys::workflow_prefix`].
    pub fn workflow_children(&self, id: &str) -> String {
        format!("{}wf:children:{id}", self.prefix)
    }

    /// `<ns>:{q}:wf:outcome:<id>` — see [`QueueKeys::workflow_prefix`].
    pub fn workflow_outcome(&self, id: &str) -> String {
        format!("{}wf:outcome:{id}", self.prefix)
    }

    /// `<ns>:{q}:wf:waiting` — a sorted set of the queue's waiting workflow tasks, scored by
    /// the Unix second they were stored, for listings and counts. Ours only.
    pub fn workflow_waiting(&self) -> String {
        self.key("wf:waiting")
    }

    /// `<ns>:{q}:wf:open` — a hash from each workflow task of the queue that others wait for,
    /// until it has passed its outcome on, to those tasks (see `scripts/workflow.lua`); the relay
    /// scans it to notice the tasks a Go server or an operator settled. Ours only.
    pub fn workflow_open(&self) -> String {
        self.key("wf:open")
    }

    /// `<ns>:{q}:wf:outbox` — a list of `<ok>:<id>` for each workflow task of the queue that
    /// settled for good and whose dependents the relay has yet to tell. Ours only.
    pub fn workflow_outbox(&self) -> String {
        self.key("wf:outbox")
    }

    /// `<ns>:{q}:ready` — the pub/sub channel that wakes idle Rust servers when a task becomes
    /// pending. Ours only.
    pub fn ready_channel(&self) -> String {
        self.key("ready")
    }

    /// `<ns>:{q}:finished` — the pub/sub channel on which the scripts that finish a task for
    /// good (done, complete, archive) publish its ID, when a Rust client waits for it (marked by
    /// the task hash's `waiters` field). Ours only.
    pub fn finished_channel(&self) -> String {
        self.key("finished")
    }

    /// `<ns>:{q}:unique:<type>:<md5 hex of payload>` — the uniqueness lock of a task; an
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

    /// `unique_key` if it names one of this queue's uniqueness locks (`<ns>:{q}:unique:…`, the
    /// only keys Go and this broker lock with), `None` otherwise. A corrupt message's
    /// `unique_key` naming any other key (another queue's, which on a Cluster lies in another
    /// slot, or a task hash or list of this queue) is not a lock to release.
    pub fn lock<'a>(&self, unique_key: &'a str) -> Option<&'a str> {
        unique_key.strip_prefix(self.prefix.as_str()).filter(|rest| rest.starts_with("unique:")).map(|_| unique_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_queues_own_uniqueness_locks_are_locks() {
        let k = Namespace::DEFAULT.queue("q");
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
        let k = Namespace::DEFAULT.queue("interop");
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
            (k.group_index_size(), "asynq:{interop}:groups:size"),
            (k.group_index_oldest(), "asynq:{interop}:groups:oldest"),
            (k.group_index_newest(), "asynq:{interop}:groups:newest"),
            (k.group_index_tasks(), "asynq:{interop}:groups:tasks"),
            (k.group_index_scan(), "asynq:{interop}:groups:scan"),
            (k.idle_workers(), "asynq:{interop}:idle_workers"),
            (k.waiting(), "asynq:{interop}:waiting"),
            (k.debounce("user:42"), "asynq:{interop}:debounce:user:42"),
            (k.prioritized(), "asynq:{interop}:prioritized"),
            (k.priority_sequence(), "asynq:{interop}:priority_seq"),
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
        let k = Namespace::DEFAULT.queue("interop");
        // From what Go asynq v0.26 wrote (the tests crate's fixtures/go-asynq/v0.26.0-enqueued.txt).
        assert_eq!(
            k.unique("interop:unique", br#"{"k":"unique"}"#),
            "asynq:{interop}:unique:interop:unique:e34bfc4fa54af4601f41bd50b9214f56"
        );
        let u = Namespace::DEFAULT.queue("u");
        assert_eq!(u.unique("u:nil", b""), "asynq:{u}:unique:u:nil:");
    }

    #[test]
    fn global_keys_match_go_asynq() {
        let ns = Namespace::DEFAULT;
        assert_eq!(ns.server_info("host", 42, "sid"), "asynq:servers:{host:42:sid}");
        assert_eq!(ns.workers("host", 42, "sid"), "asynq:workers:{host:42:sid}");
        assert_eq!(ns.workers_of("asynq:servers:{host:42:sid}").unwrap(), "asynq:workers:{host:42:sid}");
        assert_eq!(ns.server_request("sid"), "asynq:server_requests:{sid}");
        assert_eq!(ns.server_id_of("asynq:servers:{host:a:b:42:sid}"), Some("sid"));
        assert_eq!(ns.server_id_of("asynq:workers:{host:42:sid}"), None);
        assert_eq!(ns.scheduler_entries("h:1:u"), "asynq:schedulers:{h:1:u}");
        assert_eq!(ns.scheduler_id_of("asynq:schedulers:{h:1:u}"), Some("h:1:u"));
        assert_eq!(ns.scheduler_history("e"), "asynq:scheduler_history:e");
        assert_eq!(ns.scheduler_fire("f"), "asynq:scheduler_fire:f");
        assert_eq!(ns.slots("type:resize"), "asynq:slots:type:resize");
        assert_eq!(ns.slot_freed_channel(), "asynq:slot_freed");
        assert_eq!(ns.cancel_requests(), "asynq:cancel_requests");
        assert_eq!(ns.due_channel(), "asynq:due");
        assert_eq!(ns.queue_of_key(&ns.queue("tenant:7").scheduled()).as_ref().map(|q| q.as_str()), Some("tenant:7"));
        assert_eq!(ns.queue_of_key("other:{q}:scheduled"), None);
        assert_eq!(ns.queue_of_key("asynq:{unclosed"), None);
        assert_eq!(
            (ns.all_queues(), ns.all_servers(), ns.all_workers(), ns.all_schedulers(), ns.cancel_channel()),
            (
                "asynq:queues".to_owned(),
                "asynq:servers".to_owned(),
                "asynq:workers".to_owned(),
                "asynq:schedulers".to_owned(),
                "asynq:cancel".to_owned()
            )
        );
    }

    #[test]
    fn another_namespace_prefixes_every_key_and_channel() {
        let ns = Namespace::new("billing-v2.eu_1").unwrap();
        assert!(!ns.is_default());
        let k = ns.queue("q");
        assert_eq!(
            (k.prefix(), k.pending(), k.ready_channel()),
            ("billing-v2.eu_1:{q}:", "billing-v2.eu_1:{q}:pending".to_owned(), "billing-v2.eu_1:{q}:ready".to_owned())
        );
        assert_eq!(ns.all_queues(), "billing-v2.eu_1:queues");
        assert_eq!(ns.cancel_channel(), "billing-v2.eu_1:cancel");
        assert_eq!(ns.server_info("h", 1, "s"), "billing-v2.eu_1:servers:{h:1:s}");
        assert_eq!(ns.workers_of("billing-v2.eu_1:servers:{h:1:s}").unwrap(), "billing-v2.eu_1:workers:{h:1:s}");
        assert_eq!(ns.workers_of("asynq:servers:{h:1:s}"), None);
        assert_eq!(ns.scheduler_id_of("asynq:schedulers:{x}"), None);
        assert_eq!(ns.scheduler_history("e"), "billing-v2.eu_1:scheduler_history:e");
        assert!(k.lock(&ns.queue("q").unique("t", b"p")).is_some());
        assert!(k.lock(&Namespace::DEFAULT.queue("q").unique("t", b"p")).is_none());
    }

    #[test]
    fn namespaces_that_could_meet_other_keys_are_refused() {
        let long = "n".repeat(Namespace::MAX_LEN + 1);
        for bad in ["", "a:b", "asynq:x", "{tag}", "tag}", "a*", "a?", "a[b]", "a b", "a\nb", "é", long.as_str()] {
            let err = Namespace::new(bad).unwrap_err();
            assert!(
                matches!(err, ConnectError::InvalidNamespace { ref namespace, .. } if namespace == bad),
                "{bad:?}: {err}"
            );
        }
        assert_eq!(Namespace::new("asynq").unwrap(), Namespace::DEFAULT);
        assert!(Namespace::new("asynq").unwrap().is_default());
        assert_eq!(Namespace::new("n".repeat(Namespace::MAX_LEN)).unwrap().as_str().len(), Namespace::MAX_LEN);
        assert_eq!("orders".parse::<Namespace>().unwrap().to_string(), "orders");
    }
}
