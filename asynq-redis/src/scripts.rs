//! The Lua scripts, one documented file each under `scripts/`, loaded once and called by SHA.
//!
//! Every script touches only keys of one queue, all in that queue's `{<queue>}` hash slot, and
//! receives every key it writes either in KEYS or as a same-slot name built from a prefix in
//! ARGV (as Go asynq's do), so none fails with CROSSSLOT on a Redis Cluster.

use redis::Script;
use std::sync::LazyLock;

/// A script file from `scripts/`.
macro_rules! script {
    ($name:literal) => {
        Script::new(include_str!(concat!("scripts/", $name, ".lua")))
    };
    (common + $name:literal) => {
        Script::new(concat!(include_str!("scripts/common.lua"), include_str!(concat!("scripts/", $name, ".lua"))))
    };
}

/// Every script the broker runs.
pub(crate) struct Scripts {
    pub(crate) enqueue: Script,
    pub(crate) dequeue: Script,
    pub(crate) done: Script,
    pub(crate) complete: Script,
    pub(crate) retry: Script,
    pub(crate) archive: Script,
    pub(crate) requeue: Script,
    pub(crate) forward: Script,
    pub(crate) list_lease_expired: Script,
    pub(crate) delete_expired_completed: Script,
    pub(crate) write_result: Script,
    pub(crate) write_server_state: Script,
    pub(crate) queue_stats: Script,
    pub(crate) task_info: Script,
    pub(crate) list_tasks: Script,
}

/// The scripts, built on first use.
pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    enqueue: script!("enqueue"),
    dequeue: script!("dequeue"),
    done: script!(common + "done"),
    complete: script!(common + "complete"),
    retry: script!(common + "retry"),
    archive: script!(common + "archive"),
    requeue: script!(common + "requeue"),
    forward: script!("forward"),
    list_lease_expired: script!("list_lease_expired"),
    delete_expired_completed: script!("delete_expired_completed"),
    write_result: script!("write_result"),
    write_server_state: script!("write_server_state"),
    queue_stats: script!("queue_stats"),
    task_info: script!("task_info"),
    list_tasks: script!("list_tasks"),
});
