//! The fetch loop: takes as many ready tasks as there are free slots (and some ahead of them),
//! then waits for more to be ready.

use super::*;

impl Processor {
    /// Waits for a free slot, takes as many ready tasks as there are free slots and starts
    /// their handlers; reports how many started (0 when no task was ready) and whether the
    /// queues ran short.
    ///
    /// A rate-limited queue gives at most as many tasks as its bucket grants; a task over a
    /// per-type or shared concurrency limit waits for its turn without a worker, or goes back to
    /// its queue when as many tasks wait as the server has workers; neither is counted.
    ///
    /// Returns `None` when `stop` is cancelled while it waits for a slot. Once it has a slot, it
    /// is not cut short by `stop`: a dequeue whose tasks the broker has leased ends with them
    /// started or given back, never dropped half way (which would leave them to lease recovery).
    async fn fetch(&self, stop: &CancellationToken) -> asynq_core::Result<Option<FetchReport>> {
        let s = &self.shared;
        // While tasks taken ahead keep the workers busy, a fetch waits until a batch's worth of
        // holds is free, so that one broker call takes that many tasks rather than the one or
        // two whose slots just freed (as happens at low concurrency, where a slot frees up before
        // the tasks taken ahead queue for it). It never waits long: with nothing ahead, at least
        // `prefetch` holds are free once the finished tasks' outcomes are written.
        let batch = s.fetch_batch();
        if batch > 1 && s.ahead.load(Ordering::Relaxed) >= batch {
            tokio::select! {
                _ = stop.cancelled() => return Ok(None),
                // Released at once: the fetch below takes them one by one, and nothing else
                // takes holds.
                held = s.holds.acquire_many(u32::try_from(batch).unwrap_or(u32::MAX)) => {
                    drop(held.expect("the processor's semaphores are never closed"));
                }
            }
        }
        let first = tokio::select! {
            _ = stop.cancelled() => return Ok(None),
            permits = TaskPermits::acquire(&s.slots, &s.holds) => permits,
        };
        let mut slots = vec![first];
        while let Some(permits) = TaskPermits::try_acquire(&s.slots, &s.holds) {
            slots.push(permits);
        }
        let mut ahead = Vec::new();
        if s.prefetching() {
            while ahead.len() < s.config.prefetch
                && let Ok(hold) = Arc::clone(&s.holds).try_acquire_owned()
            {
                ahead.push(hold);
            }
        }
        let served = s.config.queues.now();
        let order = s.config.rng.with(|rng| served.priorities.order(rng));
        let now = s.clock.now();
        let wanted = slots.len() + ahead.len();
        // The tasks that take the slots run at once, unless a limit may make them wait: then
        // (see `Config::start_with_fetch`) their starts are recorded by the dequeue itself,
        // saving a call before their handlers start.
        let start_with_fetch =
            s.config.start_with_fetch && s.type_limits.is_empty() && s.config.shared_limits.is_none();
        let start = if start_with_fetch { slots.len() } else { 0 };
        let Fetched { tasks, rate_limited_for } = dequeue_within_rate_limits(
            &*s.broker,
            s.rate_limiter.as_deref(),
            &s.config.rate_limits,
            &order,
            wanted,
            start,
            now,
        )
        .await?;
        let ran_short = tasks.len() < wanted;
        let mut started = 0;
        let mut gave_back = false;
        let mut slots = slots.into_iter();
        let mut taken: BTreeMap<QueueName, Vec<Taken>> = BTreeMap::new();
        for task in tasks {
            let Some(slot) = slots.next() else {
                // Taken ahead: `may_prefetch` rules out limits to admit it by.
                let hold = ahead.pop().expect("no more tasks are dequeued than slots and holds");
                started += 1;
                let counted = AheadCount::new(&s.ahead);
                taken.entry(task.message.queue.clone()).or_default().push(Taken::Ahead(task, hold, counted));
                continue;
            };
            let type_permit = match s.type_limits.admit(&task.message.type_name) {
                Admission::Unlimited => None,
                Admission::Admitted(permit) => Some(permit),
                Admission::Wait => {
                    match s.wait_for_turn(task, slot.hold, None) {
                        Some(waiting) => taken.entry(waiting.task().message.queue.clone()).or_default().push(waiting),
                        None => gave_back = true,
                    }
                    continue;
                }
            };
            let shared_slot = match &s.config.shared_limits {
                None => None,
                Some(limits) => match limits.admit(&task, now).await {
                    SharedAdmission::Unlimited => None,
                    SharedAdmission::Admitted(key) => Some(key),
                    SharedAdmission::Wait => {
                        match s.wait_for_turn(task, slot.hold, type_permit) {
                            Some(waiting) => {
                                taken.entry(waiting.task().message.queue.clone()).or_default().push(waiting)
                            }
                            None => gave_back = true,
                        }
                        continue;
                    }
                },
            };
            started += 1;
            let held = Held::new(&task, &s.clock);
            let queue = taken.entry(task.message.queue.clone()).or_default();
            queue.push(Taken::Now(Ready { task, permits: slot, type_permit, shared_slot, held }));
        }
        for (queue, tasks) in taken {
            let shared = Arc::clone(s);
            s.running.spawn(async move { shared.start_then_run(queue, tasks).await });
        }
        Ok(Some(FetchReport { started, ran_short, rate_limited_for, gave_back }))
    }

    pub(super) async fn fetch_loop(&self, stop: CancellationToken) {
        let s = &self.shared;
        let mut last_error_log: Option<tokio::time::Instant> = None;
        let mut queues = s.config.queues.clone();
        loop {
            let served = queues.now();
            if stop.is_cancelled() {
                return;
            }
            let Some(result) = self.fetch(&stop).await.transpose() else { return };
            match result {
                // Tasks over a limit found the waiting room full and went back to their queue:
                // fetching again would take them again. Wait until a waiter starts.
                Ok(FetchReport { gave_back: true, .. }) => {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = Arc::clone(&s.waiting).acquire_owned() => {}
                        _ = tokio::time::sleep(s.config.rng.jitter(s.config.task_check_interval)) => {}
                        _ = queues.changed() => {}
                    }
                    continue;
                }
                Ok(FetchReport { started: 0, rate_limited_for: Some(token_due), .. }) => {
                    // A rate-limited queue is out of tokens and nothing started: sleep until
                    // a token is due, waking early only for the unlimited queues.
                    let unlimited: Vec<QueueName> = served
                        .names
                        .iter()
                        .filter(|q| s.config.rate_limits.get(q.as_str()).is_none())
                        .cloned()
                        .collect();
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = s.broker.wait_for_tasks(&unlimited), if !unlimited.is_empty() => {}
                        _ = tokio::time::sleep(token_due) => {}
                        _ = queues.changed() => {}
                    }
                    continue;
                }
                // The queues gave fewer tasks than asked for: they are empty (for now), so
                // another fetch would find nothing. Wait; the wait returns at once if a task
                // became pending meanwhile.
                Ok(FetchReport { ran_short: true, rate_limited_for: None, .. }) => {}
                Ok(_) => continue,
                Err(e) => {
                    if last_error_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(3)) {
                        tracing::error!(error = %e, "dequeue failed");
                        last_error_log = Some(tokio::time::Instant::now());
                    }
                    // Back off without listening for wake-ups: the broker is failing.
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(s.config.task_check_interval) => continue,
                    }
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = s.broker.wait_for_tasks(&served.names), if !served.names.is_empty() => {}
                _ = tokio::time::sleep(s.config.rng.jitter(s.config.task_check_interval)) => {}
                _ = queues.changed() => {}
            }
        }
    }
}

impl Shared {
    /// How many free holds a fetch waits for while tasks taken ahead keep the workers busy: half
    /// the prefetch when taking tasks ahead, else 1 (no wait).
    fn fetch_batch(&self) -> usize {
        if self.prefetching() { (self.config.prefetch / 2).max(1) } else { 1 }
    }

    /// Whether a fetch should take tasks ahead now.
    fn prefetching(&self) -> bool {
        self.may_prefetch && self.average_attempt_nanos.load(Ordering::Relaxed) < PREFETCH_MAX_AVERAGE.as_nanos() as u64
    }
}

/// What one fetch did.
struct FetchReport {
    /// How many tasks it started or took ahead (not those waiting for a limit).
    started: usize,
    /// Whether the queues gave fewer tasks than it asked for.
    ran_short: bool,
    /// How long a rate-limited queue asks to be left alone.
    rate_limited_for: Option<Duration>,
    /// Whether tasks over a limit went back to their queue for want of room to wait.
    gave_back: bool,
}
