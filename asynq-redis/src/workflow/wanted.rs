//! The queues whose outboxes settles through this broker filled, waiting for a server's
//! relayer ([`Workflows::relay_wanted`], [`Workflows::relay_settled`]): the broker spawns
//! nothing, so that what relays stops with the server that owns it.
//!
//! [`Workflows::relay_wanted`]: asynq_core::broker::Workflows::relay_wanted
//! [`Workflows::relay_settled`]: asynq_core::broker::Workflows::relay_settled

use crate::RedisBroker;
use asynq_core::{QueueName, Result};
use std::collections::BTreeSet;
use std::sync::Mutex;
use tokio::sync::Notify;

/// The queues to relay now, and the signal that wakes the relayer waiting for them.
#[derive(Debug, Default)]
pub(crate) struct RelayWanted {
    queues: Mutex<BTreeSet<QueueName>>,
    wake: Notify,
}

impl RelayWanted {
    /// Marks `queue` as having outcomes to relay and wakes a waiting relayer.
    pub(crate) fn want(&self, queue: QueueName) {
        self.queues.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(queue);
        self.wake.notify_one();
    }

    /// Whether a queue is marked.
    fn any(&self) -> bool {
        !self.queues.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_empty()
    }

    /// Takes the marked queues, so that each is relayed by one caller.
    fn take(&self) -> BTreeSet<QueueName> {
        std::mem::take(&mut *self.queues.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Resolves once a queue is marked; cancel-safe (the marks stay until taken).
    pub(crate) async fn wanted(&self) {
        loop {
            // A mark made after the look leaves a permit (`notify_one`) that ends the wait.
            let woken = self.wake.notified();
            if self.any() {
                return;
            }
            woken.await;
        }
    }
}

impl RedisBroker {
    /// Marks `queue`, where workflow tasks settled through this broker left outbox entries (or
    /// dependents it archived did), for the relayer of a server on this broker.
    pub(crate) fn want_relay(&self, queue: QueueName) {
        self.relay_wanted_queues().want(queue);
    }

    /// What `Workflows::relay_settled` does: empties the outbox of each marked queue, taking the
    /// marks; a queue that fails is logged and left to the servers' periodic relay.
    pub(crate) async fn relay_marked(&self) -> Result<usize> {
        let mut told = 0;
        let mut failure = None;
        for queue in self.relay_wanted_queues().take() {
            match self.relay_queue(&queue).await {
                Ok(n) => told += n,
                Err(e) => {
                    tracing::warn!(%queue, error = %e, "could not relay workflow outcomes; the periodic relay will");
                    failure.get_or_insert(e);
                }
            }
        }
        failure.map_or(Ok(told), Err)
    }
}
