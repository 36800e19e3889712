//! What a task holds between being taken and its outcome being written: its permits, its
//! lease and cancellation, and the way it waits to run.

use super::*;

/// A task a fetch took, waiting for its start to be recorded: to run at once, held until a
/// worker slot frees up, or waiting for its turn under a concurrency limit.
pub(super) enum Taken {
    Now(Ready),
    Ahead(Dequeued, OwnedSemaphorePermit, AheadCount),
    Waiting(Dequeued, Waiter),
}

impl Taken {
    pub(super) fn task(&self) -> &Dequeued {
        match self {
            Taken::Now(ready) => &ready.task,
            Taken::Ahead(task, _, _) | Taken::Waiting(task, _) => task,
        }
    }
}

/// Counts a task taken ahead in [`Shared::ahead`](super::Shared::ahead) until it has a worker slot or goes back to
/// its queue: dropped, it uncounts it.
pub(super) struct AheadCount(Arc<AtomicUsize>);

impl AheadCount {
    pub(super) fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(count))
    }
}

impl Drop for AheadCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a task waiting for its turn under a concurrency limit holds: its hold, its room in the
/// server's waiting room, and its type's permit once it has it.
pub(super) struct Waiter {
    pub(super) hold: OwnedSemaphorePermit,
    pub(super) room: OwnedSemaphorePermit,
    pub(super) type_permit: Option<OwnedSemaphorePermit>,
}

/// A task with what it needs to run.
pub(super) struct Ready {
    pub(super) task: Dequeued,
    pub(super) permits: TaskPermits,
    pub(super) type_permit: Option<OwnedSemaphorePermit>,
    /// The shared concurrency slot it holds, to give back when its outcome is written.
    pub(super) shared_slot: Option<SlotKey>,
    pub(super) held: Held,
}

/// A task's lease and cancellation, from the moment it is taken.
pub(super) struct Held {
    pub(super) lease: Lease,
    pub(super) cancel: CancellationToken,
}

impl Held {
    pub(super) fn new(task: &Dequeued, clock: &Arc<dyn Clock>) -> Self {
        Self { lease: Lease::new(task.lease_expiry, Arc::clone(clock)), cancel: CancellationToken::new() }
    }
}

/// The permits a task needs to start: a worker slot and a hold.
pub(super) struct TaskPermits {
    pub(super) slot: OwnedSemaphorePermit,
    pub(super) hold: OwnedSemaphorePermit,
}

impl TaskPermits {
    /// Waits for a hold, then for a slot.
    pub(super) async fn acquire(slots: &Arc<Semaphore>, holds: &Arc<Semaphore>) -> Self {
        const OPEN: &str = "the processor's semaphores are never closed";
        let hold = Arc::clone(holds).acquire_owned().await.expect(OPEN);
        let slot = Arc::clone(slots).acquire_owned().await.expect(OPEN);
        Self { slot, hold }
    }

    /// Both permits if both are free now.
    pub(super) fn try_acquire(slots: &Arc<Semaphore>, holds: &Arc<Semaphore>) -> Option<Self> {
        let hold = Arc::clone(holds).try_acquire_owned().ok()?;
        let slot = Arc::clone(slots).try_acquire_owned().ok()?;
        Some(Self { slot, hold })
    }
}
