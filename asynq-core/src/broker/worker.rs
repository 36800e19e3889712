//! The worker server's traits, one per role that holds it, and [`WorkerBroker`], all of them at once.

#[allow(unused_imports)] // named by the docs
use super::LeaseStage;
use super::{Capabilities, Dequeued, ExpiredLease, Forwarded, Outcome, delete_expired_completed_each};
#[allow(unused_imports)] // named by the docs
use crate::Error;
use crate::StoredTask;
use crate::error::Result;
use crate::info::{ServerInfo, WorkerInfo};
use crate::names::{QueueName, TaskId};
use crate::progress::Progress;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use std::time::{Duration, SystemTime};

/// Hands tasks to workers and records how they ended. Used by the processor.
#[async_trait]
pub trait Dequeue: Send + Sync {
    /// Takes up to `max` pending tasks, trying `queues` in the given order and skipping paused
    /// ones. Each task becomes active with a lease of [`LEASE_DURATION`](crate::LEASE_DURATION)
    /// from now, at [`LeaseStage::Taken`]. Returns an empty vector when none is ready.
    ///
    /// A backend may skip queues it found empty or paused until its wake-up signal (see
    /// [`Dequeue::wait_for_tasks`]) says they may have work, so that a server on many quiet
    /// queues does not ask for each on every fetch. Tasks made pending through the same broker
    /// value are seen at once; those made pending by another process once the wake-up arrives
    /// (or, for a producer that sends none, within the backend's own bound, which it documents).
    async fn dequeue(&self, queues: &[QueueName], max: usize) -> Result<Vec<Dequeued>>;

    /// [`Dequeue::dequeue`] for a worker that runs the first `start` tasks it takes at once: a
    /// backend may record those as started ([`LeaseStage::Started`]) in the same step, which
    /// saves the worker the [`Dequeue::extend_leases`] call that records starts otherwise, and
    /// says so in each task's [`Dequeued::stage`]. The worker still records the start of every
    /// task returned at [`LeaseStage::Taken`] before it runs or holds it.
    ///
    /// A reply that is lost (the connection dropped after the dequeue ran) must not leave those
    /// tasks started with no handler, or their expired leases would be stalls, forgiven once
    /// each ([`FREE_STALLS`](crate::FREE_STALLS)) instead of given back free: a backend that can
    /// lose replies gives them back itself (the Redis broker finds them by a token in their
    /// lease scores), or records nothing started.
    ///
    /// The default takes the tasks as [`Dequeue::dequeue`] does, every one at
    /// [`LeaseStage::Taken`].
    async fn dequeue_starting(&self, queues: &[QueueName], max: usize, start: usize) -> Result<Vec<Dequeued>> {
        let _ = start;
        self.dequeue(queues, max).await
    }

    /// Resolves when a task may have become ready in one of `queues`, so an idle processor can
    /// pick it up at once instead of waiting for its next poll. Spurious wake-ups are allowed;
    /// the default never resolves (the processor then relies on polling alone).
    async fn wait_for_tasks(&self, queues: &[QueueName]) {
        let _ = queues;
        futures::future::pending::<()>().await
    }

    /// Records the outcome of the attempt at `message`, an active task.
    ///
    /// Errors: [`Error::TaskNotFound`] if the task is not active
    /// (someone else finished or recovered it).
    async fn finish(&self, message: &StoredTask, outcome: Outcome) -> Result<()>;

    /// Records many outcomes, each exactly as [`Dequeue::finish`] would, in as few round trips
    /// as the backend allows. Each succeeds or fails on its own; the results are in the order
    /// of `items`.
    ///
    /// The default implementation finishes one task after the other.
    async fn finish_batch(&self, items: Vec<(StoredTask, Outcome)>) -> Vec<Result<()>> {
        let mut results = Vec::with_capacity(items.len());
        for (message, outcome) in items {
            results.push(self.finish(&message, outcome).await);
        }
        results
    }

    /// Moves the lease expiry of each of `ids` (active tasks of `queue`) to now +
    /// [`LEASE_DURATION`](crate::LEASE_DURATION) and returns the new expiry. IDs that are no
    /// longer active are ignored.
    ///
    /// It also records that a handler starts each task ([`LeaseStage::Started`]): a worker calls
    /// it for the tasks of a fetch, and waits for it to succeed, before it runs or holds any of
    /// them, so that an expired lease charges only attempts that ran; later calls (the
    /// heartbeat's) find them started already.
    async fn extend_leases(&self, queue: &QueueName, ids: &[TaskId]) -> Result<SystemTime>;

    /// Stores `result` as the result of task `id` in `queue`.
    async fn write_result(&self, queue: &QueueName, id: &TaskId, result: Bytes) -> Result<()>;

    /// Records `progress` for the active task `id` of `queue`, replacing its last report; the
    /// inspector shows it in [`TaskInfo::progress`](crate::TaskInfo). A dequeue clears it, so
    /// that each attempt starts with none; it stays with a task that completes.
    ///
    /// Errors: [`Error::TaskNotFound`] when the task does not exist
    /// or is not active (nothing is written); [`Error::Unsupported`]
    /// from a backend that keeps no progress, which is the default.
    async fn write_progress(&self, queue: &QueueName, id: &TaskId, progress: &Progress) -> Result<()> {
        let _ = (queue, id, progress);
        Err(crate::Error::Unsupported { capability: "task progress" })
    }
}

/// Moves due tasks to where workers find them. Used by the forwarder.
#[async_trait]
pub trait Forward: Send + Sync {
    /// Moves every scheduled and retry task of `queues` whose time has come to pending (or to
    /// its group, if it was stored with one). Returns how many moved, and when the earliest task
    /// left scheduled or waiting to retry in `queues` falls due, so the forwarder can come back
    /// then rather than poll.
    async fn forward_ready(&self, queues: &[QueueName]) -> Result<Forwarded>;

    /// The names of queues in which a task was just scheduled or set to retry, from the moment
    /// this returns, so a forwarder that sleeps until the earliest due time it knows of hears of
    /// an earlier one (spurious names are allowed; a backend may name only tasks that became the
    /// earliest of their set). The stream ends when the subscription is lost; call again.
    ///
    /// The default never yields: the forwarder then relies on its interval.
    ///
    /// Errors: [`Error::Broker`] when the backend cannot subscribe now.
    async fn due_notices(&self) -> Result<BoxStream<'static, String>> {
        Ok(futures::stream::pending().boxed())
    }
}

/// Finds tasks whose worker vanished. Used by the recoverer.
#[async_trait]
pub trait Recover: Send + Sync {
    /// The active tasks of `queues` whose lease expired at or before `cutoff`, each with the
    /// [`LeaseStage`] it reached.
    async fn list_lease_expired(&self, queues: &[QueueName], cutoff: SystemTime) -> Result<Vec<ExpiredLease>>;

    /// Records the outcome of each task of `items`, as [`Dequeue::finish_batch`] would, but only
    /// while its lease is still one that expires at or before `cutoff`: for the recoverer, the
    /// cutoff it listed the task with; for a worker writing an outcome again, its own lease's
    /// expiry. A task whose lease moved on since (another server recovered it and a worker took
    /// it again) is left alone with [`Error::TaskNotFound`], as one
    /// no longer active is: without the check, a late write would take a task back from the
    /// worker now running it, and two workers would run it at once. The results are in the
    /// order of `items`.
    async fn recover(&self, items: Vec<(StoredTask, Outcome)>, cutoff: SystemTime) -> Vec<Result<()>>;
}

/// Deletes completed tasks whose retention ran out. Used by the janitor.
#[async_trait]
pub trait Janitor: Send + Sync {
    /// Deletes up to `batch_size` expired completed tasks of `queue`; returns how many.
    async fn delete_expired_completed(&self, queue: &QueueName, batch_size: usize) -> Result<usize>;

    /// Deletes every expired completed task of `queues`, at most `batch_size` per call of
    /// [`Janitor::delete_expired_completed`]; returns how many. The janitor calls this on every
    /// pass. The default tries each queue; a backend that can tell cheaply which queues hold
    /// completed tasks at all skips the others, so that a pass over many idle queues costs
    /// little.
    async fn delete_all_expired_completed(&self, queues: &[QueueName], batch_size: usize) -> Result<usize> {
        delete_expired_completed_each(self, queues, batch_size).await
    }
}

/// Publishes which servers are alive and what they run. Used by the heartbeater.
#[async_trait]
pub trait ServerState: Send + Sync {
    /// Records `server` and its running `workers`, both expiring after `ttl` unless rewritten.
    async fn write_server_state(&self, server: &ServerInfo, workers: &[WorkerInfo], ttl: Duration) -> Result<()>;

    /// Removes the records of `server` (graceful shutdown).
    async fn clear_server_state(&self, server: &ServerInfo) -> Result<()>;
}

/// Tells whether the backend is reachable. Used by the health checker.
#[async_trait]
pub trait Health: Send + Sync {
    /// Succeeds when the backend answers.
    async fn ping(&self) -> Result<()>;
}

/// What a worker server needs of its broker: the roles it always runs, plus the
/// [`Capabilities`] its configuration asks for. Implemented for every type that implements
/// them.
pub trait WorkerBroker: Dequeue + Forward + Recover + Janitor + ServerState + Health + Capabilities {}

impl<T> WorkerBroker for T where T: Dequeue + Forward + Recover + Janitor + ServerState + Health + Capabilities {}
