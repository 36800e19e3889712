//! Shared concurrency slots for [`RedisBroker`]: one sorted set per slot key,
//! `<ns>:slots:<key>`, of holders scored by hold expiry in Unix milliseconds. Taking a slot is
//! one script (`take_slot.lua`), giving one back another (`release_slot.lua`), which publishes
//! the slot key on `<ns>:slot_freed`; renewing and listing are single commands. Each touches one
//! key, so any Cluster slot does (a publish reaches every node's subscribers). A wait for a slot
//! listens on `<ns>:slot_freed` over the broker's shared pub/sub connection, then counts the live
//! holders, so that a release after the count is heard. Ours only: Go asynq neither writes nor
//! reads any of it.

use crate::RedisBroker;
use crate::error::broker_error;
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::ConcurrencySlots;
use asynq_core::slots::{SharedLimit, SlotKey};
use asynq_core::time::unix_nanos;
use asynq_core::{Result, TaskId};
use futures::StreamExt;
use redis::{AsyncCommands, Script};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The scripts of this module.
static TAKE_SLOT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/take_slot.lua")));
static RELEASE_SLOT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/release_slot.lua")));

fn unix_millis(t: SystemTime) -> i64 {
    unix_nanos(t) / 1_000_000
}

#[async_trait]
impl ConcurrencySlots for RedisBroker {
    async fn take_slot(
        &self,
        limit: &SharedLimit,
        holder: &TaskId,
        now: SystemTime,
        expiry: SystemTime,
    ) -> Result<bool> {
        let mut call = ScriptCall::new(&TAKE_SLOT);
        call.key(self.namespace().slots(limit.key().as_str()));
        call.arg(holder.as_str()).arg(limit.limit()).arg(unix_millis(now)).arg(unix_millis(expiry));
        let granted: i64 = call.run(&mut self.conn(), "take a concurrency slot").await?;
        Ok(granted == 1)
    }

    async fn extend_slots(&self, key: &SlotKey, holders: &[TaskId], expiry: SystemTime) -> Result<()> {
        if holders.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("ZADD");
        cmd.arg(self.namespace().slots(key.as_str())).arg("XX");
        for holder in holders {
            cmd.arg(unix_millis(expiry)).arg(holder.as_str());
        }
        let _: i64 =
            cmd.query_async(&mut self.conn()).await.map_err(|e| broker_error("extend concurrency slots", e))?;
        Ok(())
    }

    async fn release_slot(&self, key: &SlotKey, holder: &TaskId) -> Result<()> {
        let mut call = ScriptCall::new(&RELEASE_SLOT);
        call.key(self.namespace().slots(key.as_str()));
        call.arg(holder.as_str()).arg(self.namespace().slot_freed_channel()).arg(key.as_str());
        let _released: i64 = call.run(&mut self.conn(), "release a slot").await?;
        Ok(())
    }

    async fn slot_holders(&self, key: &SlotKey, now: SystemTime) -> Result<Vec<(TaskId, SystemTime)>> {
        let key = self.namespace().slots(key.as_str());
        let held: Vec<(String, i64)> = self
            .conn()
            .zrangebyscore_withscores(key, format!("({}", unix_millis(now)), "+inf")
            .await
            .map_err(|e| broker_error("list slot holders", e))?;
        let mut holders = Vec::with_capacity(held.len());
        for (id, until) in held {
            // An ID written by hand that is no task ID holds nothing we could name.
            if let Ok(id) = TaskId::new(id) {
                holders.push((id, UNIX_EPOCH + Duration::from_millis(until.max(0) as u64)));
            }
        }
        Ok(holders)
    }

    async fn wait_for_slot(&self, limit: &SharedLimit, now: SystemTime) -> Result<()> {
        // Listening first, so that a release after the count is heard.
        let mut freed = self
            .pubsub()
            .listen(&self.namespace().slot_freed_channel())
            .await
            .map_err(|e| broker_error("listen for freed slots", e))?;
        let live: u64 = self
            .conn()
            .zcount(self.namespace().slots(limit.key().as_str()), format!("({}", unix_millis(now)), "+inf")
            .await
            .map_err(|e| broker_error("count slot holders", e))?;
        if live < u64::from(limit.limit()) {
            return Ok(());
        }
        // Other keys' releases are slept through; the stream ends when the connection drops,
        // and the caller then looks again.
        while let Some(key) = freed.next().await {
            if key == limit.key().as_str() {
                break;
            }
        }
        Ok(())
    }
}
