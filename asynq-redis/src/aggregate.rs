//! [`Aggregate`] over Redis, on Go asynq's keys: a group is the sorted set
//! `asynq:{<q>}:g:<group>` (task IDs scored by the second they joined), registered in the set
//! `asynq:{<q>}:groups`; an aggregation set is the sorted set `asynq:{<q>}:g:<group>:<set id>`
//! (a UUID, as Go's), indexed by deadline in `asynq:{<q>}:aggregation_sets`. A Go server
//! sharing the queue aggregates, reads and reclaims the same sets.
//!
//! Beside Go's keys, each queue keeps a group index of ours (`scripts/group_index.lua`): every
//! group's size, oldest and newest score, and the sum of the sizes, written in the same step by
//! every script of ours that changes a group. The aggregator asks it for the groups that may be
//! ready ([`Aggregate::ready_groups`], `ready_groups.lua`) instead of checking every group, and
//! each call reconciles a slice of it with Go's set of groups, for the writers that do not keep
//! it (Go's producers, servers and CLI).
//!
//! One script per operation, each on one queue's keys. Completing a set reuses `enqueue.lua`
//! and `delete_aggregation_set.lua` as functions inside `complete_aggregation.lua`, so the
//! aggregated task is stored exactly as an enqueue stores it, in the same atomic step that
//! deletes the members.

use crate::broker::{RedisBroker, decode, enqueue_result};
use crate::error::unexpected;

use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::{AGGREGATION_TIMEOUT, Aggregate, AggregationLimits, AggregationSet, GroupInfo};
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::{
    EnqueueRequest, Error, GroupName, QueueName, Result, validate_aggregation_completion, validate_aggregation_set,
};
use redis::{FromRedisValue, Script, Value};
use std::sync::LazyLock;

/// The script file `scripts/<file>.lua` as the body of `local function <name>(KEYS, ARGV)`, so
/// that another script can run it on keys and arguments of its choosing.
macro_rules! as_function {
    ($name:literal, $file:literal) => {
        concat!("local function ", $name, "(KEYS, ARGV)\n", include_str!(concat!("scripts/", $file, ".lua")), "\nend\n")
    };
}

/// The scripts of this module.
struct AggregationScripts {
    group_stats: Script,
    ready_groups: Script,
    aggregation_check: Script,
    read_aggregation_set: Script,
    delete_aggregation_set: Script,
    complete_aggregation: Script,
    reclaim_stale_aggregation_sets: Script,
}

static AGGREGATION_SCRIPTS: LazyLock<AggregationScripts> = LazyLock::new(|| AggregationScripts {
    group_stats: Script::new(include_str!("scripts/group_stats.lua")),
    ready_groups: Script::new(concat!(
        include_str!("scripts/group_index.lua"),
        include_str!("scripts/ready_groups.lua")
    )),
    aggregation_check: Script::new(concat!(
        include_str!("scripts/group_index.lua"),
        include_str!("scripts/aggregation_check.lua")
    )),
    read_aggregation_set: Script::new(include_str!("scripts/read_aggregation_set.lua")),
    delete_aggregation_set: Script::new(include_str!("scripts/delete_aggregation_set.lua")),
    complete_aggregation: Script::new(concat!(
        include_str!("scripts/message.lua"),
        include_str!("scripts/events.lua"),
        include_str!("scripts/priority.lua"),
        include_str!("scripts/group_index.lua"),
        as_function!("enqueue", "enqueue"),
        as_function!("delete_set", "delete_aggregation_set"),
        include_str!("scripts/complete_aggregation.lua"),
    )),
    reclaim_stale_aggregation_sets: Script::new(concat!(
        include_str!("scripts/group_index.lua"),
        include_str!("scripts/reclaim_stale_aggregation_sets.lua")
    )),
});

fn set_not_found(queue: &QueueName, group: &GroupName, set_id: &str) -> Error {
    Error::AggregationSetNotFound { queue: queue.clone(), group: group.clone(), set_id: set_id.to_owned() }
}

/// `name` as a group name of ours, or `None` with a warning: Go registers any non-blank name,
/// and ours cannot address one our rules refuse.
fn our_group(queue: &QueueName, name: String) -> Option<GroupName> {
    GroupName::new(name.as_str())
        .inspect_err(|e| tracing::warn!(%queue, group = name, error = %e, "skipping a group whose name is not ours"))
        .ok()
}

/// About how many groups one `group_stats.lua` call reads (2 ms on the 2-core VM of
/// `docs/performance.md`).
const GROUP_STATS_SLICE: usize = 500;

/// How many group names one `SSCAN` of [`Aggregate::group_names`] asks for: a name costs Redis
/// far less than the size `group_stats.lua` reads with it.
const GROUP_NAME_SLICE: usize = 2_000;

/// How many groups, and how many entries of the group index, one `ready_groups.lua` call
/// reconciles: about 1.5 ms of Redis on the 2-core VM of `docs/performance.md`, where a command
/// a script runs takes about a microsecond.
const RECONCILE_SLICE: usize = 100;

/// The slice of the calls that follow one finding the index and Go's set of groups apart,
/// until both cursors went round once: about 2.5 ms a call on the same VM.
const DRIFT_SLICE: usize = 200;

/// The most reconciling calls one [`Aggregate::ready_groups`] makes after finding the index
/// apart from Go's set: enough for both cursors to go round 1 000 000 groups.
const MAX_DRIFT_CALLS: usize = 4_000;

/// Whole seconds of an optional limit, `0` for none (Go's encoding of "no limit").
fn secs_or_zero(limit: Option<std::time::Duration>) -> u64 {
    limit.map_or(0, |d| d.as_secs())
}

/// What one `ready_groups.lua` call said of its reconciliation.
struct Reconciled {
    /// The index and Go's set of groups count different groups.
    drift: bool,
    /// The cursor over Go's set came back to its start.
    set_wrapped: bool,
    /// The cursor over the index came back to its start.
    index_wrapped: bool,
}

impl RedisBroker {
    /// One `ready_groups.lua` call: reconciles `slice` groups and entries, then names up to
    /// `limit` groups that may be ready by `limits`.
    async fn ready_groups_call(
        &self,
        queue: &QueueName,
        limits: AggregationLimits,
        limit: usize,
        slice: usize,
    ) -> Result<(Reconciled, Vec<GroupName>)> {
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&AGGREGATION_SCRIPTS.ready_groups);
        call.key(k.groups())
            .key(k.group_index_size())
            .key(k.group_index_oldest())
            .key(k.group_index_newest())
            .key(k.group_index_scan());
        call.arg(limits.max_size.unwrap_or(0)).arg(secs_or_zero(limits.max_delay)).arg(limits.grace_period.as_secs());
        call.arg(unix_secs(self.now())).arg(limit).arg(slice).arg(k.group_prefix());
        let reply: Vec<Value> = call.run(&mut self.conn(), "ready groups").await?;
        let flag = |i: usize| -> Result<bool> {
            let value = reply.get(i).ok_or_else(|| unexpected("ready groups", "a short reply"))?;
            Ok(i64::from_redis_value_ref(value).map_err(|e| unexpected("ready groups", e))? == 1)
        };
        let reconciled = Reconciled { drift: flag(0)?, set_wrapped: flag(1)?, index_wrapped: flag(2)? };
        let mut named = Vec::with_capacity(reply.len().saturating_sub(3));
        for value in &reply[3..] {
            let name = String::from_redis_value_ref(value).map_err(|e| unexpected("ready groups", e))?;
            named.extend(our_group(queue, name));
        }
        Ok((reconciled, named))
    }
}

impl RedisBroker {
    /// Brings `queue`'s group index in step with Go's set of groups, in bounded calls: goes
    /// round both once, as [`Aggregate::ready_groups`] does when it finds them apart.
    pub(crate) async fn reconcile_group_index(&self, queue: &QueueName) -> Result<()> {
        self.reconcile_from(queue, AggregationLimits::default(), (false, false)).await
    }

    /// Reconciling calls until both cursors went round once from `wrapped` (the set's, the
    /// index's), or a call finds the index in step.
    async fn reconcile_from(&self, queue: &QueueName, limits: AggregationLimits, wrapped: (bool, bool)) -> Result<()> {
        let (mut set_wrapped, mut index_wrapped) = wrapped;
        for _ in 0..MAX_DRIFT_CALLS {
            if set_wrapped && index_wrapped {
                break;
            }
            let (round, _) = self.ready_groups_call(queue, limits, 0, DRIFT_SLICE).await?;
            (set_wrapped, index_wrapped) = (set_wrapped || round.set_wrapped, index_wrapped || round.index_wrapped);
            if !round.drift {
                break;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Aggregate for RedisBroker {
    async fn groups(&self, queue: &QueueName) -> Result<Vec<GroupInfo>> {
        let k = self.queue_keys(queue);
        let mut sizes = std::collections::BTreeMap::new();
        let mut cursor = "0".to_owned();
        loop {
            let mut call = ScriptCall::new(&AGGREGATION_SCRIPTS.group_stats);
            call.key(k.groups()).arg(k.group_prefix()).arg(&cursor).arg(GROUP_STATS_SLICE);
            let reply: Vec<Value> = call.run(&mut self.conn(), "group stats").await?;
            let (next, flat) = reply.split_first().ok_or_else(|| unexpected("group stats", "an empty reply"))?;
            cursor = String::from_redis_value_ref(next).map_err(|e| unexpected("group stats", e))?;
            for pair in flat.chunks_exact(2) {
                let name = String::from_redis_value_ref(&pair[0]).map_err(|e| unexpected("group stats", e))?;
                let size = usize::from_redis_value_ref(&pair[1]).map_err(|e| unexpected("group stats", e))?;
                if let Some(group) = our_group(queue, name) {
                    sizes.insert(group, size);
                }
            }
            if cursor == "0" {
                break;
            }
        }
        Ok(sizes.into_iter().map(|(group, size)| GroupInfo::new(group, size)).collect())
    }

    /// The names by `SSCAN`, 2 000 a call, without a `ZCARD` each.
    async fn group_names(&self, queue: &QueueName) -> Result<Vec<GroupName>> {
        let k = self.queue_keys(queue);
        let mut names = std::collections::BTreeSet::new();
        let mut cursor = 0_u64;
        loop {
            let (next, slice): (u64, Vec<String>) = redis::cmd("SSCAN")
                .arg(k.groups())
                .arg(cursor)
                .arg("COUNT")
                .arg(GROUP_NAME_SLICE)
                .query_async(&mut self.conn())
                .await
                .map_err(|e| crate::error::broker_error("group names", e))?;
            names.extend(slice.into_iter().filter_map(|name| our_group(queue, name)));
            if next == 0 {
                return Ok(names.into_iter().collect());
            }
            cursor = next;
        }
    }

    async fn group_size(&self, queue: &QueueName, group: &GroupName) -> Result<usize> {
        let key = self.queue_keys(queue).group(group);
        let size: usize = redis::AsyncCommands::zcard(&mut self.conn(), &key)
            .await
            .map_err(|e| crate::error::broker_error("group size", e))?;
        Ok(size)
    }

    async fn ready_groups(&self, queue: &QueueName, limits: AggregationLimits, limit: usize) -> Result<Vec<GroupName>> {
        limits.validate()?;
        let (first, mut named) = self.ready_groups_call(queue, limits, limit, RECONCILE_SLICE).await?;
        if !first.drift {
            return Ok(named);
        }
        // Writers that do not keep the index changed the groups: go round them (each call
        // bounded), then ask again on the reconciled index.
        self.reconcile_from(queue, limits, (first.set_wrapped, first.index_wrapped)).await?;
        (_, named) = self.ready_groups_call(queue, limits, limit, RECONCILE_SLICE).await?;
        Ok(named)
    }

    async fn aggregation_check(
        &self,
        queue: &QueueName,
        group: &GroupName,
        limits: AggregationLimits,
    ) -> Result<Option<String>> {
        limits.validate()?;
        let set_id = uuid::Uuid::new_v4().to_string();
        let now = self.now();
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&AGGREGATION_SCRIPTS.aggregation_check);
        call.key(k.group(group)).key(k.aggregation_set(group, &set_id)).key(k.aggregation_sets()).key(k.groups());
        call.arg(limits.max_size.unwrap_or(0)).arg(secs_or_zero(limits.max_delay)).arg(limits.grace_period.as_secs());
        call.arg(unix_secs(now + AGGREGATION_TIMEOUT)).arg(unix_secs(now)).arg(group.as_str());
        match call.run::<i64>(&mut self.conn(), "aggregation check").await? {
            1 => Ok(Some(set_id)),
            0 => Ok(None),
            other => Err(unexpected("aggregation check", format!("unexpected reply {other}"))),
        }
    }

    async fn read_aggregation_set(&self, queue: &QueueName, group: &GroupName, set_id: &str) -> Result<AggregationSet> {
        validate_aggregation_set(set_id)?;
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&AGGREGATION_SCRIPTS.read_aggregation_set);
        call.key(k.aggregation_set(group, set_id)).key(k.aggregation_sets()).arg(k.task_prefix());
        let reply: Value = call.run(&mut self.conn(), "read aggregation set").await?;
        let (deadline, encoded) = match reply {
            Value::Nil => return Err(set_not_found(queue, group, set_id)),
            Value::Array(values) if values.len() == 2 => {
                let deadline =
                    i64::from_redis_value_ref(&values[0]).map_err(|e| unexpected("read aggregation set", e))?;
                let encoded = Vec::<Vec<u8>>::from_redis_value_ref(&values[1])
                    .map_err(|e| unexpected("read aggregation set", e))?;
                (deadline, encoded)
            }
            other => return Err(unexpected("read aggregation set", format!("unexpected reply {other:?}"))),
        };
        let mut messages = Vec::with_capacity(encoded.len());
        for bytes in encoded {
            match decode(&bytes) {
                Ok(message) => messages.push(message),
                // Left out of the aggregation and deleted with the set. Go fails the whole read
                // instead, so the set is reclaimed and fails again every two minutes.
                Err(e) => tracing::error!(%queue, %group, set_id, error = %e, "skipping an undecodable task"),
            }
        }
        Ok(AggregationSet { messages, deadline: from_unix_secs(deadline) })
    }

    async fn complete_aggregation(
        &self,
        queue: &QueueName,
        group: &GroupName,
        set_id: &str,
        request: EnqueueRequest,
    ) -> Result<()> {
        validate_aggregation_completion(queue, set_id, &request)?;
        let k = self.queue_keys(queue);
        let events = self.event_caps_now().await?;
        let (mut call, msg) = self.enqueue_call_with(&AGGREGATION_SCRIPTS.complete_aggregation, request, &events)?;
        call.key(k.aggregation_set(group, set_id)).key(k.aggregation_sets()).arg(k.task_prefix());
        self.register_queue(queue).await?;
        match call.run::<i64>(&mut self.conn(), "complete aggregation").await? {
            -2 => Err(set_not_found(queue, group, set_id)),
            reply => {
                self.registered_again_if_fresh(queue, reply);
                enqueue_result(msg, reply)
            }
        }
    }

    async fn delete_aggregation_set(&self, queue: &QueueName, group: &GroupName, set_id: &str) -> Result<()> {
        validate_aggregation_set(set_id)?;
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&AGGREGATION_SCRIPTS.delete_aggregation_set);
        call.key(k.aggregation_set(group, set_id)).key(k.aggregation_sets()).arg(k.task_prefix());
        call.run::<()>(&mut self.conn(), "delete aggregation set").await
    }

    async fn reclaim_stale_aggregation_sets(&self, queue: &QueueName) -> Result<usize> {
        let k = self.queue_keys(queue);
        let mut call = ScriptCall::new(&AGGREGATION_SCRIPTS.reclaim_stale_aggregation_sets);
        call.key(k.aggregation_sets()).key(k.groups()).arg(unix_secs(self.now())).arg(k.group_prefix());
        let reclaimed: i64 = call.run(&mut self.conn(), "reclaim stale aggregation sets").await?;
        usize::try_from(reclaimed).map_err(|e| unexpected("reclaim stale aggregation sets", e))
    }
}
