//! Cancellation requests and waits for a task's outcome, over the broker's pub/sub connection.
//!
//! Cancelling is Go asynq's, `PUBLISH asynq:cancel <id>`, heard by every server subscribed to
//! `asynq:cancel`, Go's included; before it, the request is kept in `asynq:cancel_requests`
//! (`keep_cancel.lua`; ours only), for servers that were not subscribed then.
//!
//! A wait listens on the queue's `asynq:{<q>}:finished` channel, marks the task hash and the
//! queue (`mark_waiter.lua`), then looks at the task; the scripts that finish a marked task
//! publish its ID, so the wait looks again only when told. Nothing is published for a task nobody
//! waits for. Go servers never publish, and a task may be deleted by other means, so a wait also
//! looks every [`WAIT_POLL_INTERVAL`], and renews its marks each time.

use crate::RedisBroker;
use crate::error::broker_error;
use crate::keys::QueueKeys;

use crate::proto;
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::{Cancel, Inspect, Wait};
use asynq_core::time::{from_unix_nanos, unix_nanos, unix_secs};
use asynq_core::{
    CANCEL_KEEP, CancelOutcome, Error, MAX_KEPT_CANCELS, Progress, QueueName, Result, TaskId, TaskOutcome,
    cancel_outcome_given, progress_from_lookup, validate_wait,
};
use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use futures::stream::BoxStream;
use prost::Message;
use redis::{AsyncCommands, Script};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

/// How often a wait looks at its task when no notification came: the delay after which it
/// sees a task that a Go server finished, or that was deleted by other means.
pub const WAIT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// How long the queue's `waiting` mark lasts unless a wait renews it, which each does every
/// [`WAIT_POLL_INTERVAL`]. Should a wait be held up longer (its process stopped, say), a batch
/// settling its task may not publish, and the wait sees the outcome when it looks again.
const WAITING_MARK_SECS: u64 = 10;

/// The scripts of this module.
struct SignalScripts {
    mark_waiter: Script,
    keep_cancel: Script,
    settle_cancel: Script,
}

static SCRIPTS: LazyLock<SignalScripts> = LazyLock::new(|| SignalScripts {
    mark_waiter: Script::new(include_str!("scripts/mark_waiter.lua")),
    keep_cancel: Script::new(include_str!("scripts/keep_cancel.lua")),
    settle_cancel: Script::new(include_str!("scripts/settle_cancel.lua")),
});

/// `t` in Unix milliseconds.
fn millis(t: SystemTime) -> i64 {
    unix_nanos(t).div_euclid(1_000_000)
}

#[async_trait]
impl Cancel for RedisBroker {
    async fn cancel(&self, id: &TaskId) -> Result<CancelOutcome> {
        let now = self.now();
        let mut call = ScriptCall::new(&SCRIPTS.keep_cancel);
        call.key(self.namespace().cancel_requests())
            .arg(id.as_str())
            .arg(millis(now))
            .arg(millis(now + CANCEL_KEEP))
            .arg(MAX_KEPT_CANCELS)
            .arg(CANCEL_KEEP.as_millis() as u64);
        let _kept: i64 = call.run(&mut self.conn(), "keep a cancellation").await?;
        let _receivers: i64 = self
            .conn()
            .publish(self.namespace().cancel_channel(), id.as_str())
            .await
            .map_err(|e| broker_error("publish a cancellation", e))?;
        let servers = self.servers_running(id).await?;
        cancel_outcome_given(self, id, servers).await
    }

    /// Ends when the pub/sub connection drops (a Redis restart or a network failure).
    async fn cancellations(&self) -> Result<BoxStream<'static, String>> {
        let listener = self.pubsub().listen(&self.namespace().cancel_channel()).await;
        Ok(listener.map_err(|e| broker_error("subscribe to cancellations", e))?.boxed())
    }

    async fn kept_cancellations(&self) -> Result<Vec<(TaskId, SystemTime)>> {
        let kept: Vec<(String, i64)> = self
            .conn()
            .zrangebyscore_limit_withscores(
                self.namespace().cancel_requests(),
                format!("({}", millis(self.now())),
                "+inf",
                0,
                MAX_KEPT_CANCELS as isize,
            )
            .await
            .map_err(|e| broker_error("read the kept cancellations", e))?;
        // Only ours writes the key, from checked IDs; anything else is skipped.
        Ok(kept
            .into_iter()
            .filter_map(|(id, expiry)| Some((TaskId::new(id).ok()?, from_unix_nanos(expiry.saturating_mul(1_000_000)))))
            .collect())
    }

    async fn settle_cancellation(&self, id: &TaskId) -> Result<bool> {
        let mut call = ScriptCall::new(&SCRIPTS.settle_cancel);
        call.key(self.namespace().cancel_requests()).arg(id.as_str()).arg(millis(self.now()));
        let settled: i64 = call.run(&mut self.conn(), "settle a cancellation").await?;
        Ok(settled == 1)
    }
}

#[async_trait]
impl Wait for RedisBroker {
    async fn wait_for_outcome(&self, queue: &QueueName, id: &TaskId, timeout: Duration) -> Result<TaskOutcome> {
        validate_wait(timeout)?;
        tokio::time::timeout(timeout, self.outcome(queue, id))
            .await
            .unwrap_or_else(|_| Err(Error::WaitTimeout { queue: queue.to_owned(), id: id.to_owned(), timeout }))
    }

    async fn task_progress(&self, queue: &QueueName, id: &TaskId) -> Result<Option<Progress>> {
        progress_from_lookup(self.task_info(queue, id).await)
    }
}

impl RedisBroker {
    /// The IDs of the live servers whose workers record task `id`, sorted, as
    /// [`Inspect::servers`] judges them: one `HEXISTS` per live server, and the record of those
    /// that run it, rather than every worker of every server.
    async fn servers_running(&self, id: &TaskId) -> Result<Vec<String>> {
        let fail = |e| broker_error("look for the servers running a task", e);
        let ns = self.namespace();
        let live: Vec<String> =
            self.conn().zrangebyscore(ns.all_servers(), unix_secs(self.now()), "+inf").await.map_err(fail)?;
        let looks = live.into_iter().filter_map(|server_key| {
            let workers_key = ns.workers_of(&server_key)?;
            let mut conn = self.conn();
            Some(async move {
                if !conn.hexists::<_, _, bool>(&workers_key, id.as_str()).await.map_err(fail)? {
                    return Ok(None);
                }
                let info: Option<Vec<u8>> = conn.get(&server_key).await.map_err(fail)?;
                Ok::<_, Error>(
                    info.and_then(|info| proto::ServerInfo::decode(info.as_slice()).ok()).map(|info| info.server_id),
                )
            })
        });
        let found: Vec<Option<String>> = futures::future::try_join_all(looks).await?;
        let mut servers: Vec<String> = found.into_iter().flatten().collect();
        servers.sort();
        Ok(servers)
    }

    /// Waits without a time limit for task `id` of `queue` to finish.
    async fn outcome(&self, queue: &QueueName, id: &TaskId) -> Result<TaskOutcome> {
        let k = self.queue_keys(queue);
        let mut notifications: Option<UnboundedReceiver<String>> = None;
        let mut seen = false;
        loop {
            if notifications.is_none() {
                notifications = self.listen_for_finish(&k).await;
            }
            // After listening, so that a finish after the mark is heard.
            if notifications.is_some() {
                self.mark_waiter(&k, id).await?;
            }
            if let Some(outcome) = TaskOutcome::from_lookup(self.task_info(queue, id).await, seen)? {
                return Ok(outcome);
            }
            seen = true;
            tokio::select! {
                heard = next_finish_of(notifications.as_mut(), id) => {
                    if !heard {
                        // The connection dropped; listen again on the next round.
                        notifications = None;
                    }
                }
                _ = tokio::time::sleep(WAIT_POLL_INTERVAL) => {}
            }
        }
    }

    /// Listens for the queue's finish notifications; `None` when the pub/sub connection cannot
    /// be had now: the wait then polls.
    async fn listen_for_finish(&self, k: &QueueKeys) -> Option<UnboundedReceiver<String>> {
        self.pubsub()
            .listen(&k.finished_channel())
            .await
            .inspect_err(|e| tracing::debug!(error = %e, "cannot listen for finish notifications; polling only"))
            .ok()
    }

    /// Marks task `id` and its queue as waited for (`mark_waiter.lua`), or renews the marks.
    async fn mark_waiter(&self, k: &QueueKeys, id: &str) -> Result<()> {
        let mut call = ScriptCall::new(&SCRIPTS.mark_waiter);
        call.key(k.task(id)).key(k.waiting()).arg(WAITING_MARK_SECS);
        // A missing task needs no mark: the lookup that follows reports it gone.
        let _exists: i64 = call.run(&mut self.conn(), "mark waiter").await?;
        Ok(())
    }
}

/// Resolves with true when `notifications` carries `id`, with false when it ends; never when
/// there are none.
async fn next_finish_of(notifications: Option<&mut UnboundedReceiver<String>>, id: &str) -> bool {
    let Some(notifications) = notifications else { return std::future::pending().await };
    while let Some(finished) = notifications.next().await {
        if finished == id {
            return true;
        }
    }
    false
}
