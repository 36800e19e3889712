//! Recover for [`RedisBroker`]: the active tasks whose lease expired.

use super::dequeue::{Stored, not_found, read_stored, strip, taken_lease_score};
use super::quiet::existing_keys;
use super::*;
use asynq_core::QueueName;

#[async_trait]
impl Recover for RedisBroker {
    async fn list_lease_expired(&self, queues: &[QueueName], cutoff: SystemTime) -> Result<Vec<ExpiredLease>> {
        let mut conn = self.conn();
        let mut expired = Vec::new();
        // Only the queues that hold leases are looked at: one command finds them when none does.
        let leases: Vec<String> = queues.iter().map(|q| self.queue_keys(q).lease()).collect();
        let held = existing_keys(self.conn(), &leases).await.map_err(|e| broker_error("list lease expired", e))?;
        for queue in held.into_iter().map(|i| &queues[i]) {
            let k = self.queue_keys(queue);
            let mut invocation = ScriptCall::new(&SCRIPTS.list_lease_expired);
            // A lease no handler started is scored half a second past its expiry second.
            invocation.key(k.lease()).arg(taken_lease_score(unix_secs(cutoff))).arg(k.task_prefix());
            let (pairs, unstarted, stalls): (Vec<Value>, HashSet<String>, Vec<u32>) =
                invocation.run(&mut conn, "list lease expired").await?;
            for (stored, stalls) in read_stored(queue, pairs).into_iter().zip(stalls) {
                match stored {
                    Stored::Task(message) => {
                        let stage = if unstarted.contains(message.id.as_str()) {
                            LeaseStage::Taken
                        } else {
                            LeaseStage::Started
                        };
                        expired.push(ExpiredLease { message, stage, stalls });
                    }
                    // Settled here, so the recoverer never meets it again; a failure is logged
                    // and retried on the next pass.
                    Stored::Missing { id } => {
                        let problem = "its task hash is missing or has no msg";
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                error = %e,
                                "cannot drop an active task ID without a task message"
                            );
                        }
                    }
                    Stored::Corrupt { id, problem } => {
                        if let Err(e) = self.archive_corrupt(&mut conn, queue, &id, &problem).await {
                            tracing::error!(
                                queue = %queue,
                                task_id = %String::from_utf8_lossy(&id),
                                problem = %problem,
                                error = %e,
                                "cannot archive a corrupt task"
                            );
                        }
                    }
                }
            }
        }
        Ok(expired)
    }

    /// One pipeline per queue: `done_batch.lua` for the successes, `settle_batch.lua` for the
    /// rest, each fenced by the cutoff's lease score (the one [`Recover::list_lease_expired`]
    /// lists by).
    async fn recover(&self, items: Vec<(StoredTask, Outcome)>, cutoff: SystemTime) -> Vec<Result<()>> {
        if items.is_empty() {
            return Vec::new();
        }
        let now = self.now();
        let lease_cutoff = taken_lease_score(unix_secs(cutoff));
        let events = match self.event_caps_now().await {
            Ok(events) => events,
            Err(e) => return items.iter().map(|_| Err(e.duplicate())).collect(),
        };
        let mut results: Vec<Option<Result<()>>> = Vec::new();
        results.resize_with(items.len(), || None);
        let mut by_queue: BTreeMap<String, Vec<(usize, StoredTask, Outcome)>> = BTreeMap::new();
        for (index, (msg, outcome)) in items.into_iter().enumerate() {
            by_queue.entry(msg.queue.to_string()).or_default().push((index, msg, outcome));
        }
        let mut conn = self.conn();
        for (queue, items) in by_queue {
            let requeued = items.iter().any(|(_, _, outcome)| matches!(outcome, Outcome::Requeue | Outcome::Stalled));
            let (done, others): (Vec<_>, Vec<_>) = items.into_iter().partition(|(_, _, o)| *o == Outcome::Done);
            let mut calls = Vec::new();
            if !done.is_empty() {
                let call = self.done_batch_call(&queue, &done, now, Some(&lease_cutoff), &events);
                calls.push(BatchCall { call, context: "done batch", items: strip(done) });
            }
            calls.extend(self.settle_batch_calls(&queue, others, now, Some(&lease_cutoff), &events));
            for (index, msg, code) in run_pipeline(&mut conn, calls).await {
                results[index] = Some(code.and_then(|code| if code == 1 { Ok(()) } else { Err(not_found(&msg)) }));
            }
            if requeued {
                self.pubsub().made_pending(&queue);
            }
        }
        results.into_iter().map(|r| r.expect("every item has a result")).collect()
    }
}
