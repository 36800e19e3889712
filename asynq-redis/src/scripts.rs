//! The Lua scripts, one documented file each under `scripts/`, loaded once and called by SHA.
//!
//! Every script touches only keys of one queue, all in that queue's `{<queue>}` hash slot (but
//! `swap_sharded_queue`, whose one key is the global hash of sharded queues' declarations), and
//! receives every key it writes either in KEYS, as a same-slot name built from a prefix in ARGV
//! (as Go asynq's do), or as a uniqueness lock's name in ARGV that `keys.rs` built in the
//! queue's slot, so none fails with CROSSSLOT on a Redis Cluster.

use crate::error::broker_error;
use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, FromRedisValue, Script, ServerErrorKind, ToRedisArgs};
use std::sync::LazyLock;

/// A script of `scripts/`, after the preludes named before the `;` (files of `scripts/` too),
/// in order.
macro_rules! script {
    ($name:literal) => {
        Script::new(include_str!(concat!("scripts/", $name, ".lua")))
    };
    ($($prelude:literal),+ ; $name:literal) => {
        Script::new(concat!($(include_str!(concat!("scripts/", $prelude, ".lua")),)* include_str!(concat!("scripts/", $name, ".lua"))))
    };
}

pub(crate) struct Scripts {
    pub(crate) enqueue: Script,
    pub(crate) enqueue_plain: Script,
    pub(crate) enqueue_batch: Script,
    pub(crate) enqueue_replacing: Script,
    pub(crate) dequeue: Script,
    pub(crate) done: Script,
    pub(crate) done_batch: Script,
    pub(crate) settle_batch: Script,
    pub(crate) complete: Script,
    pub(crate) retry: Script,
    pub(crate) archive: Script,
    pub(crate) requeue: Script,
    pub(crate) give_back_fetch: Script,
    pub(crate) forward: Script,
    pub(crate) list_lease_expired: Script,
    pub(crate) archive_corrupt: Script,
    pub(crate) delete_expired_completed: Script,
    pub(crate) write_result: Script,
    pub(crate) write_progress: Script,
    pub(crate) write_server_state: Script,
    pub(crate) queue_stats: Script,
    pub(crate) task_info: Script,
    pub(crate) list_tasks: Script,
    pub(crate) mark_idle: Script,
    pub(crate) memory_usage: Script,
    pub(crate) run_task: Script,
    pub(crate) archive_task: Script,
    pub(crate) delete_task: Script,
    pub(crate) run_all: Script,
    pub(crate) archive_all: Script,
    pub(crate) delete_all: Script,
    pub(crate) update_task_payload: Script,
    pub(crate) delete_queue: Script,
    pub(crate) swap_sharded_queue: Script,
}

impl Scripts {
    fn all(&self) -> [&Script; 34] {
        [
            &self.enqueue,
            &self.enqueue_plain,
            &self.enqueue_batch,
            &self.enqueue_replacing,
            &self.dequeue,
            &self.done,
            &self.done_batch,
            &self.settle_batch,
            &self.complete,
            &self.retry,
            &self.archive,
            &self.requeue,
            &self.give_back_fetch,
            &self.forward,
            &self.list_lease_expired,
            &self.archive_corrupt,
            &self.delete_expired_completed,
            &self.write_result,
            &self.write_progress,
            &self.write_server_state,
            &self.queue_stats,
            &self.task_info,
            &self.list_tasks,
            &self.mark_idle,
            &self.memory_usage,
            &self.run_task,
            &self.archive_task,
            &self.delete_task,
            &self.run_all,
            &self.archive_all,
            &self.delete_all,
            &self.update_task_payload,
            &self.delete_queue,
            &self.swap_sharded_queue,
        ]
    }

    /// Loads every script into Redis (every master of a Cluster).
    pub(crate) async fn load_all(&self, conn: &mut (impl ConnectionLike + Send)) -> redis::RedisResult<()> {
        for script in self.all() {
            script.load_async(conn).await?;
        }
        Ok(())
    }
}

/// The scripts, built on first use.
pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    enqueue: script!("message", "events", "priority", "group_index"; "enqueue"),
    enqueue_plain: script!("enqueue_plain"),
    enqueue_batch: script!("common", "message", "events", "priority", "group_index"; "enqueue_batch"),
    enqueue_replacing: script!(
        "common", "message", "manage_common", "started", "events", "priority"; "enqueue_replacing"
    ),
    dequeue: script!("common", "message", "events", "priority"; "dequeue"),
    done: script!("common", "message", "events"; "done"),
    done_batch: script!("common", "message", "events"; "done_batch"),
    settle_batch: script!("common", "message", "events", "priority"; "settle_batch"),
    complete: script!("common", "message", "events"; "complete"),
    retry: script!("common", "message", "events"; "retry"),
    archive: script!("common", "message", "events"; "archive"),
    requeue: script!("common", "message", "events", "priority", "give_back"; "requeue"),
    give_back_fetch: script!("common", "message", "events", "priority", "give_back"; "give_back_fetch"),
    forward: script!("priority", "group_index"; "forward"),
    list_lease_expired: script!("list_lease_expired"),
    archive_corrupt: script!("common"; "archive_corrupt"),
    delete_expired_completed: script!("delete_expired_completed"),
    write_result: script!("write_result"),
    write_progress: script!("message", "events"; "write_progress"),
    write_server_state: script!("write_server_state"),
    queue_stats: script!("priority", "group_index"; "queue_stats"),
    task_info: script!("task_info"),
    list_tasks: script!("priority"; "list_tasks"),
    mark_idle: script!("mark_idle"),
    memory_usage: script!("group_index"; "memory_usage"),
    run_task: script!("common", "message", "manage_common", "priority", "group_index"; "run_task"),
    archive_task: script!("common", "message", "manage_common", "events", "group_index"; "archive_task"),
    delete_task: script!("common", "message", "manage_common", "events", "group_index"; "delete_task"),
    run_all: script!("priority", "bulk_slice", "group_index"; "run_all"),
    archive_all: script!("common", "message", "manage_common", "events", "bulk_slice", "group_index"; "archive_all"),
    delete_all: script!("common", "message", "manage_common", "events", "bulk_slice", "group_index"; "delete_all"),
    update_task_payload: script!("started"; "update_task_payload"),
    delete_queue: script!("common", "message", "manage_common"; "delete_queue"),
    swap_sharded_queue: script!("swap_sharded_queue"),
});

/// One call of a script: its KEYS and ARGV, run with `EVALSHA` (loading the script when Redis
/// does not have it) or added to a pipeline.
#[derive(Clone)]
pub(crate) struct ScriptCall {
    script: &'static Script,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    pub(crate) fn new(script: &'static Script) -> Self {
        Self { script, keys: Vec::new(), args: Vec::new() }
    }

    /// Appends a KEYS entry.
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    /// Appends an ARGV entry.
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// The `EVALSHA` command, for a pipeline whose connection already has the script.
    pub(crate) fn cmd(&self) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.get_hash()).arg(self.keys.len()).arg(&self.keys).arg(&self.args);
        cmd
    }

    /// Its KEYS and ARGV.
    pub(crate) fn into_parts(self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        (self.keys, self.args)
    }

    /// A call of `script`, which runs the script of `inner` as a function given `inner`'s KEYS
    /// and ARGV: `own_keys` come before `inner`'s KEYS, and ARGV is the number of `own_args`,
    /// then `own_args`, then `inner`'s ARGV.
    pub(crate) fn wrapping(
        script: &'static Script,
        own_keys: Vec<Vec<u8>>,
        own_args: Vec<Vec<u8>>,
        inner: ScriptCall,
    ) -> Self {
        let mut keys = own_keys;
        keys.extend(inner.keys);
        let mut args = Vec::with_capacity(1 + own_args.len() + inner.args.len());
        args.push(own_args.len().to_string().into_bytes());
        args.extend(own_args);
        args.extend(inner.args);
        Self { script, keys, args }
    }

    /// Runs the call, loading the script first if Redis lost it (a restart or a failover).
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        conn: &mut (impl ConnectionLike + Send),
        context: &str,
    ) -> asynq_core::Result<T> {
        run_evalsha(self.script, &self.cmd(), conn, context).await
    }
}

/// One call of a script built in place as its `EVALSHA` command: its KEYS, then its ARGV, each
/// appended once. For the calls made once per task, where [`ScriptCall`]'s separate KEYS and
/// ARGV, copied into the command when it is sent, cost allocations and copies.
pub(crate) struct DirectCall {
    script: &'static Script,
    cmd: Cmd,
}

impl DirectCall {
    /// A call of `script` taking `keys` KEYS: the first `keys` values appended.
    pub(crate) fn new(script: &'static Script, keys: usize) -> Self {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(script.get_hash()).arg(keys);
        Self { script, cmd }
    }

    /// Appends a KEYS entry (while fewer than the call's KEYS are in), else an ARGV entry.
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.cmd.arg(arg);
        self
    }

    /// Runs the call, loading the script first if Redis lost it (a restart or a failover).
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        conn: &mut (impl ConnectionLike + Send),
        context: &str,
    ) -> asynq_core::Result<T> {
        run_evalsha(self.script, &self.cmd, conn, context).await
    }
}

/// Runs `cmd`, an `EVALSHA` of `script`, loading the script first if Redis lost it.
async fn run_evalsha<T: FromRedisValue>(
    script: &Script,
    cmd: &Cmd,
    conn: &mut (impl ConnectionLike + Send),
    context: &str,
) -> asynq_core::Result<T> {
    match cmd.query_async(conn).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            script.load_async(conn).await.map_err(|e| broker_error(context, e))?;
            cmd.query_async(conn).await.map_err(|e| broker_error(context, e))
        }
        result => result.map_err(|e| broker_error(context, e)),
    }
}
