//! From taken to running: records that the tasks of a fetch start, then runs them, holds those
//! taken ahead until a worker frees up, and lets those over a limit wait for their turn.

use super::*;

impl Shared {
    /// Shows `task`, whose start is recorded and whose lease is renewed to `expiry`, as one that
    /// waits here for its turn: leased, renewed by the heartbeat and cancellable, holding no
    /// worker.
    fn hold_waiting(&self, task: &Dequeued, expiry: SystemTime) -> Held {
        let held = Held::new(task, &self.clock);
        held.lease.extend(expiry);
        let now = self.clock.now();
        self.active.insert(ActiveTask {
            message: task.message.clone(),
            started: now,
            deadline: task.message.handler_deadline(now),
            lease: held.lease.clone(),
            cancel: held.cancel.clone(),
            phase: Phase::Waiting,
        });
        held
    }

    /// Holds a task taken ahead (its start recorded, its lease renewed to `expiry`) until a
    /// worker slot frees up, then runs it; gives it back to its queue if shutdown begins first.
    /// Meanwhile it is leased and cancellable like a running task.
    async fn wait_for_slot(
        self: Arc<Self>,
        task: Dequeued,
        hold: OwnedSemaphorePermit,
        counted: AheadCount,
        expiry: SystemTime,
    ) {
        let held = self.hold_waiting(&task, expiry);
        let slot = tokio::select! {
            biased;
            _ = self.draining.cancelled() => None,
            slot = Arc::clone(&self.slots).acquire_owned() => Some(slot.expect("the processor's semaphores are never closed")),
        };
        drop(counted);
        match slot {
            // Its lease lapsed while it waited (the broker was out of reach): like a running task
            // whose lease lapses, it writes nothing and is left to lease recovery.
            Some(_) if !held.lease.is_valid() => {
                tracing::warn!(task_id = %task.message.id, queue = %task.message.queue, "the lease of a task taken ahead expired before it could run; leaving the task to the recoverer");
                self.active.remove(&task.message.id);
            }
            Some(slot) => {
                let permits = TaskPermits { slot, hold };
                self.run(Ready { task, permits, type_permit: None, shared_slot: None, held }).await;
            }
            None => {
                tracing::debug!(task_id = %task.message.id, queue = %task.message.queue, "shutting down; giving back a task taken ahead");
                self.write(&task.message, Outcome::Requeue, &held.lease).await;
                self.active.remove(&task.message.id);
            }
        }
    }

    /// A task over a per-type or shared limit, to wait here for its turn once its start is
    /// recorded ([`Shared::wait_to_start`]), holding `hold` and, when it has one, its type's
    /// permit; or, when as many tasks wait as the server has workers, `None`: the task goes
    /// back to the front of its queue, charged nothing.
    pub(super) fn wait_for_turn(
        self: &Arc<Self>,
        task: Dequeued,
        hold: OwnedSemaphorePermit,
        type_permit: Option<OwnedSemaphorePermit>,
    ) -> Option<Taken> {
        match Arc::clone(&self.waiting).try_acquire_owned() {
            Ok(room) => Some(Taken::Waiting(task, Waiter { hold, room, type_permit })),
            Err(_) => {
                tracing::debug!(task_id = %task.message.id, task_type = %task.message.type_name, "over a concurrency limit with no room to wait; giving the task back to its queue");
                let shared = Arc::clone(self);
                self.running.spawn(async move {
                    let lease = Lease::new(task.lease_expiry, Arc::clone(&shared.clock));
                    shared.write(&task.message, Outcome::Requeue, &lease).await;
                    drop(hold);
                });
                None
            }
        }
    }

    /// Waits for the turn of a task whose start is recorded (its lease renewed to `expiry`):
    /// its type's permit (unless it holds it already), a slot of its shared limit, then a
    /// worker; then runs it. Meanwhile it is active, leased and renewed (shown as waiting, not
    /// as a worker), as a task taken ahead is: shutdown gives it back to its queue, charged
    /// nothing, and a cancellation is seen when it starts.
    async fn wait_to_start(self: Arc<Self>, task: Dequeued, waiter: Waiter, expiry: SystemTime) {
        let Waiter { hold, room, type_permit } = waiter;
        let held = self.hold_waiting(&task, expiry);
        tracing::debug!(task_id = %task.message.id, task_type = %task.message.type_name, "over a concurrency limit; waiting for a turn");
        let limit = self.config.shared_limits.as_ref().and_then(|limits| Some((limits, limits.limit_for(&task)?)));
        let turn = async {
            let type_permit = match type_permit {
                Some(permit) => Some(permit),
                None => self.type_limits.acquire(&task.message.type_name).await,
            };
            let shared_slot = match &limit {
                Some((limits, limit)) => {
                    let poll = self.config.task_check_interval;
                    Some(limits.wait_for_slot(limit, &task.message.id, &*self.clock, &held.lease, poll).await)
                }
                None => None,
            };
            let slot =
                Arc::clone(&self.slots).acquire_owned().await.expect("the processor's semaphores are never closed");
            (type_permit, shared_slot, slot)
        };
        let turn = tokio::select! {
            biased;
            _ = self.draining.cancelled() => None,
            _ = held.lease.expired() => None,
            turn = turn => Some(turn),
        };
        drop(room);
        match turn {
            Some((type_permit, shared_slot, slot)) if held.lease.is_valid() => {
                self.run(Ready { task, permits: TaskPermits { slot, hold }, type_permit, shared_slot, held }).await;
            }
            turn => {
                if self.draining.is_cancelled() && held.lease.is_valid() {
                    tracing::debug!(task_id = %task.message.id, queue = %task.message.queue, "shutting down; giving back a task waiting for its turn");
                    self.write(&task.message, Outcome::Requeue, &held.lease).await;
                } else {
                    tracing::warn!(task_id = %task.message.id, queue = %task.message.queue, "the lease of a task waiting for its turn expired; leaving the task to the recoverer");
                }
                // A slot taken as the wait was cut short would otherwise be held until the lease ran out.
                if let Some((limits, limit)) = &limit {
                    let key = turn.and_then(|(_, key, _)| key).unwrap_or_else(|| limit.key().clone());
                    limits.release(&key, &task.message.id).await;
                }
                self.active.remove(&task.message.id);
            }
        }
    }

    /// Records that this server starts `tasks` (of one fetch, of `queue`), then runs those with
    /// a slot, holds the ones taken ahead until a slot frees up and lets those over a limit wait
    /// for their turn; gives them back to the queue, uncharged, if the record cannot be written.
    /// Those the dequeue itself recorded started ([`Dequeue::dequeue_starting`]) need no record:
    /// they run at once, before the record of the others is written. Tasks taken ahead or
    /// waiting count as started: the worker committed to them, and if it dies holding them, their
    /// first stall is forgiven (see [`asynq_core::FREE_STALLS`]).
    pub(super) async fn start_then_run(self: Arc<Self>, queue: QueueName, tasks: Vec<Taken>) {
        let (started, unstarted): (Vec<Taken>, Vec<Taken>) =
            tasks.into_iter().partition(|taken| taken.task().stage == LeaseStage::Started);
        for taken in started {
            let expiry = taken.task().lease_expiry;
            self.go_on(taken, expiry);
        }
        if unstarted.is_empty() {
            return;
        }
        let ids: Vec<TaskId> = unstarted.iter().map(|taken| taken.task().message.id.clone()).collect();
        match self.starter.start(&queue, ids).await {
            Ok(expiry) => {
                for taken in unstarted {
                    self.go_on(taken, expiry);
                }
            }
            Err(e) => {
                tracing::warn!(queue = %queue, tasks = unstarted.len(), error = %e, "could not record that handlers start; giving the tasks back to their queue");
                let this = &self;
                let give_back = unstarted.iter().map(|taken| {
                    let task = taken.task();
                    let lease = Lease::new(task.lease_expiry, Arc::clone(&this.clock));
                    async move {
                        this.write(&task.message, Outcome::Requeue, &lease).await;
                        if let (Taken::Now(Ready { shared_slot: Some(key), .. }), Some(limits)) =
                            (taken, &this.config.shared_limits)
                        {
                            limits.release(key, &task.message.id).await;
                        }
                    }
                });
                futures::future::join_all(give_back).await;
            }
        }
    }

    /// Goes on with `taken`, whose start is recorded and whose lease runs until `expiry`: runs it
    /// if it has a slot, else holds it until one frees up or lets it wait for its turn.
    fn go_on(self: &Arc<Self>, taken: Taken, expiry: SystemTime) {
        let shared = Arc::clone(self);
        match taken {
            Taken::Now(ready) => {
                ready.held.lease.extend(expiry);
                self.running.spawn(async move { shared.run(ready).await });
            }
            Taken::Ahead(task, hold, counted) => {
                self.running.spawn(async move { shared.wait_for_slot(task, hold, counted, expiry).await });
            }
            Taken::Waiting(task, waiter) => {
                self.running.spawn(async move { shared.wait_to_start(task, waiter, expiry).await });
            }
        }
    }
}
