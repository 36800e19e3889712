//! [`SchedulerState`] over Redis, where Go asynq keeps it: the `asynq:schedulers` sorted set of
//! live schedulers (scored by expiry), one `asynq:schedulers:{<id>}` list of encoded entries per
//! scheduler, and one `asynq:scheduler_history:<entry id>` sorted set of encoded enqueue events
//! per entry, so that Go's `asynq cron ls` and `asynq cron history` show our schedulers.
//!
//! Scripts run where Go runs them (writing entries, recording an event); each touches one key.
//! The fire marks (`asynq:scheduler_fire:<fire id>`) are ours: a string holding the mark's expiry
//! in Unix seconds by the broker's clock, which decides, with a Redis TTL that only collects it.

use crate::broker::RedisBroker;
use crate::error::{broker_error, unexpected};
use crate::proto;
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::Result;
use asynq_core::broker::{MAX_SCHEDULER_HISTORY, Page, SchedulerEnqueueEvent, SchedulerEntry, SchedulerState};
use asynq_core::time::unix_secs;
use prost::Message;
use redis::{AsyncCommands, Script};
use std::sync::LazyLock;
use std::time::Duration;

/// The scripts of this module.
struct SchedulerScripts {
    write_entries: Script,
    record_enqueue: Script,
}

static SCHEDULER_SCRIPTS: LazyLock<SchedulerScripts> = LazyLock::new(|| SchedulerScripts {
    write_entries: Script::new(include_str!("scripts/write_scheduler_entries.lua")),
    record_enqueue: Script::new(include_str!("scripts/record_scheduler_enqueue.lua")),
});

/// A TTL in whole seconds, at least one (Redis refuses `EXPIRE key 0` as a TTL).
fn ttl_secs(ttl: Duration) -> u64 {
    ttl.as_secs().max(1)
}

#[async_trait]
impl SchedulerState for RedisBroker {
    async fn write_scheduler_entries(
        &self,
        scheduler_id: &str,
        entries: &[SchedulerEntry],
        ttl: Duration,
    ) -> Result<()> {
        let key = self.namespace().scheduler_entries(scheduler_id);
        let expiry = unix_secs(self.now() + ttl);
        let mut conn = self.conn();
        let _: i64 = conn
            .zadd(self.namespace().all_schedulers(), &key, expiry)
            .await
            .map_err(|e| broker_error("write scheduler entries", e))?;
        let mut call = ScriptCall::new(&SCHEDULER_SCRIPTS.write_entries);
        call.key(&key).arg(ttl_secs(ttl));
        for entry in entries {
            call.arg(proto::SchedulerEntry::from(entry).encode_to_vec());
        }
        let _: i64 = call.run(&mut conn, "write scheduler entries").await?;
        Ok(())
    }

    async fn clear_scheduler_entries(&self, scheduler_id: &str) -> Result<()> {
        let key = self.namespace().scheduler_entries(scheduler_id);
        let mut conn = self.conn();
        let fail = |e| broker_error("clear scheduler entries", e);
        let _: i64 = conn.zrem(self.namespace().all_schedulers(), &key).await.map_err(fail)?;
        let _: i64 = conn.del(&key).await.map_err(fail)?;
        Ok(())
    }

    async fn scheduler_entries(&self) -> Result<Vec<SchedulerEntry>> {
        let now = unix_secs(self.now());
        let mut conn = self.conn();
        let fail = |e| broker_error("list scheduler entries", e);
        let mut live: Vec<String> =
            conn.zrangebyscore(self.namespace().all_schedulers(), now, "+inf").await.map_err(fail)?;
        let _: i64 = conn.zrembyscore(self.namespace().all_schedulers(), "-inf", now - 1).await.map_err(fail)?;
        // By scheduler ID; a key of another shape sorts by itself.
        let namespace = self.namespace();
        live.sort_by(|a, b| namespace.scheduler_id_of(a).unwrap_or(a).cmp(namespace.scheduler_id_of(b).unwrap_or(b)));
        let mut entries = Vec::new();
        for key in live {
            let values: Vec<Vec<u8>> = conn.lrange(&key, 0, -1).await.map_err(fail)?;
            // The script pushed each entry at the head: the list holds them in reverse.
            for value in values.iter().rev() {
                match proto::SchedulerEntry::decode(value.as_slice()) {
                    Ok(entry) => entries.push(SchedulerEntry::from(entry)),
                    Err(e) => tracing::warn!(key = %key, error = %e, "skipping an undecodable scheduler entry"),
                }
            }
        }
        Ok(entries)
    }

    async fn record_scheduler_enqueue(&self, entry_id: &str, event: &SchedulerEnqueueEvent) -> Result<()> {
        let mut call = ScriptCall::new(&SCHEDULER_SCRIPTS.record_enqueue);
        call.key(self.namespace().scheduler_history(entry_id));
        call.arg(unix_secs(event.enqueued_at));
        call.arg(proto::SchedulerEnqueueEvent::from(event).encode_to_vec());
        call.arg(MAX_SCHEDULER_HISTORY);
        let _: i64 = call.run(&mut self.conn(), "record scheduler enqueue").await?;
        Ok(())
    }

    async fn clear_scheduler_history(&self, entry_id: &str) -> Result<()> {
        let _: i64 = self
            .conn()
            .del(self.namespace().scheduler_history(entry_id))
            .await
            .map_err(|e| broker_error("clear scheduler history", e))?;
        Ok(())
    }

    async fn scheduler_history(&self, entry_id: &str, page: Page) -> Result<Vec<SchedulerEnqueueEvent>> {
        let size = page.size.max(1);
        let start = size.saturating_mul(page.number);
        let stop = start.saturating_add(size - 1);
        let (start, stop) = (isize::try_from(start).unwrap_or(isize::MAX), isize::try_from(stop).unwrap_or(isize::MAX));
        let key = self.namespace().scheduler_history(entry_id);
        let members: Vec<Vec<u8>> =
            self.conn().zrevrange(&key, start, stop).await.map_err(|e| broker_error("list scheduler history", e))?;
        members
            .iter()
            .map(|member| {
                proto::SchedulerEnqueueEvent::decode(member.as_slice())
                    .map(SchedulerEnqueueEvent::from)
                    .map_err(|e| unexpected("cannot decode a scheduler enqueue event", e))
            })
            .collect()
    }

    async fn mark_fire_enqueued(&self, fire_id: &str, ttl: Duration) -> Result<()> {
        let expiry = unix_secs(self.now() + ttl);
        // Redis keeps the key a second longer than the mark lasts, so the broker's clock decides.
        let _: () = self
            .conn()
            .set_ex(self.namespace().scheduler_fire(fire_id), expiry, ttl_secs(ttl) + 1)
            .await
            .map_err(|e| broker_error("mark fire enqueued", e))?;
        Ok(())
    }

    async fn fire_enqueued(&self, fire_id: &str) -> Result<bool> {
        let expiry: Option<i64> = self
            .conn()
            .get(self.namespace().scheduler_fire(fire_id))
            .await
            .map_err(|e| broker_error("check fire", e))?;
        Ok(expiry.is_some_and(|expiry| unix_secs(self.now()) <= expiry))
    }
}
