//! Passing settled workflow tasks' outcomes on: emptying a queue's outbox (each entry's
//! dependents told in their own queues, then the entry deleted), and the sweep that finds tasks
//! settled without our scripts (by Go's servers and operators) or gone with their queue.

use super::SCRIPTS;
use crate::RedisBroker;
use crate::broker::{decode, encode};
use crate::error::{broker_error, unexpected};
use asynq_core::workflow::{TaskRef, WORKFLOW_RESULT_TTL, parent_vanished_error};
use asynq_core::{QueueName, Result, TaskId};
use redis::AsyncCommands;
use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::time::SystemTime;

/// `workflow_pass.lua` tells at most this many dependents per call.
const PASS_BATCH: usize = 500;
/// A relay takes at most this many outbox entries of a queue per round.
const RELAY_ROUND: isize = 100;
/// `workflow_sweep.lua` looks at this many open tasks per call...
const SWEEP_SLICE: u64 = 1_000;
/// ...and a relay makes at most this many calls per queue.
const SWEEP_CALLS: usize = 5;

/// An outbox entry, `<1|0>:<task ID>`: whether the settled task succeeded, and its ID.
fn read_outbox_entry(entry: &str) -> Option<(bool, &str)> {
    let (ok, id) = entry.split_once(':')?;
    Some((ok == "1", id))
}

impl RedisBroker {
    /// Looks at up to [`SWEEP_CALLS`] slices of the open workflow tasks of `queue` (an `HSCAN`
    /// from where this process's last sweep stopped), for tasks settled without our scripts, and passes their outcomes
    /// on; returns how many it found.
    pub(super) async fn sweep_queue(&self, queue: &QueueName) -> Result<usize> {
        let k = self.queue_keys(queue);
        let (now, events) = (self.now(), self.event_caps_now().await?);
        let mut conn = self.conn();
        // Outside the script: asynq:queues is in no queue's slot.
        let registered: bool = conn
            .sismember(self.namespace().all_queues(), queue.as_str())
            .await
            .map_err(|e| broker_error("look for settled workflow tasks", e))?;
        let cursors = self.sweep_cursors();
        let mut cursor = cursors.lock().unwrap_or_else(PoisonError::into_inner).get(queue.as_str()).cloned();
        let mut found = 0;
        for _ in 0..SWEEP_CALLS {
            let mut call = self.workflow_call(&SCRIPTS.sweep, queue, &k, now, &events);
            call.arg(cursor.as_deref().unwrap_or("0")).arg(SWEEP_SLICE).arg(if registered { "0" } else { "1" });
            let reply: Vec<String> = call.run(&mut conn, "look for settled workflow tasks").await?;
            let [next, settled, vanished @ ..] = reply.as_slice() else {
                return Err(unexpected(
                    "look for settled workflow tasks",
                    format!("workflow_sweep.lua replied {reply:?}"),
                ));
            };
            let next = next.clone();
            found += settled.parse::<usize>().unwrap_or_default() + vanished.len();
            for parent in vanished {
                self.pass_vanished(queue, parent, now).await?;
            }
            let complete = next == "0";
            cursor = Some(next);
            if complete {
                break;
            }
        }
        cursors.lock().unwrap_or_else(PoisonError::into_inner).insert(queue.to_string(), cursor.unwrap_or_default());
        Ok(found)
    }

    /// Settles the task `parent` of `queue`, which others wait for and which vanished with its
    /// removed queue, as failed: archives each task still waiting for it unrun, naming it
    /// ([`parent_vanished_error`]), whatever its policy (their failures flow on through the
    /// relay), then records its outcome and that it passed it on. Each step is idempotent, so a
    /// pass cut short is finished by the next sweep.
    async fn pass_vanished(&self, queue: &QueueName, parent: &str, now: SystemTime) -> Result<()> {
        let fail = |e| broker_error("pass on a vanished workflow task", e);
        let k = self.queue_keys(queue);
        let mut conn = self.conn();
        let id = TaskId::new(parent)?;
        let error = parent_vanished_error(&TaskRef { queue: queue.clone(), id });
        let Some(children): Option<String> = conn.hget(k.workflow_open(), parent).await.map_err(fail)? else {
            return Ok(());
        };
        let pairs: Vec<String> = if children == "*" {
            conn.lrange(k.workflow_children(parent), 0, -1).await.map_err(fail)?
        } else {
            children.split('\n').map(str::to_owned).collect()
        };
        // Each queue's dependents in one step, and relayed only once all are archived, so that
        // each hears of the vanished parent before a sibling's failure reaches it.
        let mut by_queue: Vec<(&str, Vec<&str>)> = Vec::new();
        for pair in pairs.chunks_exact(2) {
            match by_queue.iter_mut().find(|(queue, _)| *queue == pair[0]) {
                Some((_, ids)) => ids.push(&pair[1]),
                None => by_queue.push((&pair[0], vec![&pair[1]])),
            }
        }
        let mut archived_in = Vec::new();
        for (child_queue, ids) in by_queue {
            let Ok(child_queue) = QueueName::new(child_queue) else {
                return Err(unexpected(
                    "pass on a vanished workflow task",
                    format!("a bad dependent queue {child_queue:?}"),
                ));
            };
            if self.archive_waiting(&child_queue, &ids, &error, now).await? > 0 {
                archived_in.push(child_queue);
            }
        }
        for child_queue in archived_in {
            self.want_relay(child_queue);
        }
        let outcome = format!("0{error}");
        let _: () =
            conn.set_ex(k.workflow_outcome(parent), outcome, WORKFLOW_RESULT_TTL.as_secs()).await.map_err(fail)?;
        let _: i64 = conn.del(k.workflow_children(parent)).await.map_err(fail)?;
        let _: i64 = conn.hdel(k.workflow_open(), parent).await.map_err(fail)?;
        Ok(())
    }

    /// Archives the waiting tasks `ids` of `queue` without running them, with `error`, counted
    /// nowhere, in one step (their failures left in the queue's outbox for the relay); returns
    /// how many were waiting.
    pub(super) async fn archive_waiting(
        &self,
        queue: &QueueName,
        ids: &[&str],
        error: &str,
        now: SystemTime,
    ) -> Result<usize> {
        let k = self.queue_keys(queue);
        let mut conn = self.conn();
        let events = self.event_caps_now().await?;
        let mut call = self.workflow_call(&SCRIPTS.cancel, queue, &k, now, &events);
        let mut any = false;
        for id in ids {
            let stored: Option<Vec<u8>> =
                conn.hget(k.task(id), "msg").await.map_err(|e| broker_error("archive a workflow task", e))?;
            if let Some(stored) = stored {
                call.arg(*id).arg(encode(&decode(&stored)?.archived(error, now)));
                any = true;
            }
        }
        if !any {
            return Ok(0);
        }
        call.run(&mut conn, "archive a workflow task").await
    }

    /// Empties the outbox of `queue`; returns how many dependents it told.
    pub(super) async fn relay_queue(&self, queue: &QueueName) -> Result<usize> {
        let k = self.queue_keys(queue);
        let outbox = k.workflow_outbox();
        let mut conn = self.conn();
        let mut told = 0;
        loop {
            let entries: Vec<String> = conn
                .lrange(&outbox, 0, RELAY_ROUND - 1)
                .await
                .map_err(|e| broker_error("read a workflow outbox", e))?;
            if entries.is_empty() {
                return Ok(told);
            }
            for entry in &entries {
                let Some((ok, parent)) = read_outbox_entry(entry) else {
                    tracing::error!(%queue, entry, "dropping a malformed workflow outbox entry");
                    let _: i64 = conn.lrem(&outbox, 1, entry).await.map_err(|e| broker_error("relay", e))?;
                    continue;
                };
                told += self.pass_on(queue, parent, ok).await?;
                let children = k.workflow_children(parent);
                let _: i64 = conn.del(&children).await.map_err(|e| broker_error("relay", e))?;
                let _: i64 = conn.lrem(&outbox, 1, entry).await.map_err(|e| broker_error("relay", e))?;
            }
        }
    }

    /// Test seam, not part of the broker's contract: the first step of relaying the oldest entry
    /// of `queue`'s outbox, which tells the tasks waiting for its settled task (in each one's
    /// queue), leaving the entry and the task's children list in place, as a process killed
    /// right after that step would. Returns how many dependents it told: 0 for an empty outbox.
    #[cfg(feature = "testing")]
    pub async fn pass_on_oldest_outbox_entry(&self, queue: &QueueName) -> Result<usize> {
        let oldest: Option<String> = self
            .conn()
            .lindex(self.queue_keys(queue).workflow_outbox(), 0)
            .await
            .map_err(|e| broker_error("read a workflow outbox", e))?;
        let Some(entry) = oldest else { return Ok(0) };
        match read_outbox_entry(&entry) {
            Some((ok, parent)) => self.pass_on(queue, parent, ok).await,
            None => Err(unexpected("relay", format!("a malformed workflow outbox entry {entry:?}"))),
        }
    }

    /// Tells every task waiting for `parent` (of `queue`) that it settled (`ok`); returns how
    /// many it told.
    async fn pass_on(&self, queue: &QueueName, parent: &str, ok: bool) -> Result<usize> {
        let children_key = self.queue_keys(queue).workflow_children(parent);
        let mut conn = self.conn();
        let mut told = 0;
        let now = self.now();
        let events = self.event_caps_now().await?;
        const PAGE: isize = 2 * PASS_BATCH as isize;
        let mut start = 0;
        loop {
            let page: Vec<String> = conn
                .lrange(&children_key, start, start + PAGE - 1)
                .await
                .map_err(|e| broker_error("read a workflow task's dependents", e))?;
            let mut by_queue: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for pair in page.chunks_exact(2) {
                by_queue.entry(pair[0].as_str()).or_default().push(pair[1].as_str());
            }
            for (child_queue, children) in by_queue {
                let k = self.queue_keys(child_queue);
                let mut call = self.workflow_call(&SCRIPTS.pass, child_queue, &k, now, &events);
                call.arg(queue.as_str()).arg(parent).arg(if ok { "1" } else { "0" });
                for child in &children {
                    call.arg(*child);
                }
                let changed: i64 = call.run(&mut conn, "pass a workflow outcome on").await?;
                told += children.len();
                // A dependent archived there passes its failure on through that queue's outbox.
                if changed > 0
                    && child_queue != queue.as_str()
                    && let Ok(child_queue) = QueueName::new(child_queue)
                {
                    self.want_relay(child_queue);
                }
            }
            if page.len() < PAGE as usize {
                return Ok(told);
            }
            start += PAGE;
        }
    }
}
