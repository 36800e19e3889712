//! Running one task: the attempt of its handler, then its outcome, reported to the observers
//! and written to the broker.

use super::*;

/// How one attempt ended, before it is written.
enum Attempt {
    Finished(Result<(), HandlerError>),
    LeaseLost,
    Abandoned,
}

impl Shared {
    /// Folds one attempt's duration into the average, weighing it 1/8.
    fn record_attempt(&self, duration: Duration) {
        let sample = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let average = self.average_attempt_nanos.load(Ordering::Relaxed);
        let updated = average - average / 8 + sample / 8;
        self.average_attempt_nanos.store(updated, Ordering::Relaxed);
    }

    /// Runs one task whose start is recorded, holding its worker slot and, for a type with a
    /// concurrency limit, its type permit until the handler returns, and its hold until the
    /// outcome is written. The attempt runs in a [`TASK_SPAN_NAME`] span.
    pub(super) async fn run(self: Arc<Self>, ready: Ready) {
        let Ready { task, permits, type_permit, shared_slot, held } = ready;
        let id = task.message.id.clone();
        let span = tracing::info_span!(
            TASK_SPAN_NAME,
            task_type = %task.message.type_name,
            queue = %task.message.queue,
            task_id = %task.message.id,
            retry_count = task.message.retried,
            outcome = tracing::field::Empty,
            otel.name = %format_args!("process {}", task.message.queue),
            otel.kind = "consumer",
            messaging.system = "asynq",
            messaging.operation.type = "process",
            messaging.operation.name = "process",
            messaging.destination.name = %task.message.queue,
            messaging.message.id = %task.message.id,
        );
        #[cfg(feature = "opentelemetry")]
        asynq_core::trace_context::continue_trace(&task.message.headers, &span);
        if !self.config.observers.is_empty() {
            self.config.observers.task_started(&task.message, &span);
        }
        let TaskPermits { slot, hold } = permits;
        self.attempt(task.message, (slot, type_permit), held).instrument(span).await;
        if let (Some(key), Some(limits)) = (shared_slot, &self.config.shared_limits) {
            limits.release(&key, &id).await;
        }
        drop(hold);
    }

    /// One attempt of a task: runs the handler, gives back `running_permits`, then reports and
    /// writes the outcome.
    async fn attempt(
        &self,
        message: StoredTask,
        running_permits: (OwnedSemaphorePermit, Option<OwnedSemaphorePermit>),
        held: Held,
    ) {
        let Held { lease, cancel } = held;
        let started = self.clock.now();
        let timer = tokio::time::Instant::now();
        let deadline = message.handler_deadline(started);
        let active = ActiveTask {
            message: message.clone(),
            started,
            deadline,
            lease: lease.clone(),
            cancel: cancel.clone(),
            phase: Phase::Running,
        };
        self.active.insert(active);
        let mut ctx = TaskContext::with_clock(
            &message,
            deadline,
            Arc::clone(&self.broker),
            cancel.clone(),
            Arc::clone(&self.clock),
        );
        if let Some(workflows) = &self.config.workflows {
            ctx = ctx.with_workflows(Arc::clone(workflows));
        }
        if let Some(steps) = &self.config.steps {
            ctx = ctx.with_steps(Arc::clone(steps));
        }
        let progress = ctx.progress().clone();
        let task = Task::from_message(&message);
        let time_left = deadline.duration_since(self.clock.now()).unwrap_or_default();
        // A task of a cancelled workflow is archived rather than run.
        let cancelled_before = self.workflow_cancelled(&message).await;
        let attempt = if cancelled_before {
            Attempt::Finished(Err(HandlerError::cancelled()))
        } else {
            let handler = AssertUnwindSafe(self.handler.process_task(ctx, task.clone())).catch_unwind();
            tokio::select! {
                r = handler => Attempt::Finished(r.unwrap_or_else(|panic| Err(HandlerError::panic(panic_message(&*panic))))),
                _ = tokio::time::sleep(time_left) => Attempt::Finished(Err(HandlerError::deadline_exceeded())),
                _ = cancel.cancelled() => Attempt::Finished(Err(HandlerError::cancelled())),
                _ = lease.expired() => Attempt::LeaseLost,
                _ = self.abandon.cancelled() => Attempt::Abandoned,
            }
        };
        let duration = timer.elapsed();
        self.active.settling(&message.id, matches!(attempt, Attempt::Finished(_)));
        drop(running_permits);
        self.record_attempt(duration);
        cancel.cancel();
        // A handler that parked its task is charged nothing; should parking fail, the task
        // retries uncharged, after the retry delay or at the park's end if sooner.
        let suspension = match &attempt {
            Attempt::Finished(Err(err)) => err.suspension().cloned(),
            _ => None,
        };
        let outcome = match &attempt {
            Attempt::Finished(Err(err)) if suspension.is_some() => {
                let until = suspension.as_ref().map_or(started, |s| s.parked().until);
                let retry_at = self.config.failure_policy.park_fallback(&message, err, self.clock.now(), until);
                Some(Outcome::Retry { retry_at, error: err.to_string(), is_failure: false })
            }
            Attempt::Finished(Ok(())) if message.retention.is_some() => Some(Outcome::Complete),
            Attempt::Finished(Ok(())) => Some(Outcome::Done),
            Attempt::Finished(Err(_)) if cancelled_before => {
                tracing::debug!(task_id = %message.id, queue = %message.queue, "its workflow was cancelled; archiving it unrun");
                Some(Outcome::Archive { error: WORKFLOW_CANCELLED_ERROR.to_owned() })
            }
            Attempt::Finished(Err(err)) => {
                if let Some(on_error) = &self.config.error_handler {
                    on_error(&task, err);
                }
                tracing::debug!(task_id = %message.id, queue = %message.queue, error = %err, "task failed");
                match self.config.failure_policy.outcome(&message, err, self.clock.now()) {
                    // A task of a workflow cancelled meanwhile is not retried.
                    Outcome::Retry { .. } if self.workflow_cancelled(&message).await => {
                        Some(Outcome::Archive { error: format!("{WORKFLOW_STOPPED_ERROR}: {err}") })
                    }
                    outcome => Some(outcome),
                }
            }
            Attempt::Abandoned => Some(Outcome::Requeue),
            Attempt::LeaseLost => None,
        };
        let report = attempt_report(&attempt, outcome.as_ref(), duration);
        tracing::Span::current().record("outcome", report.outcome.as_str());
        if !self.config.observers.is_empty() {
            self.config.observers.task_finished(&message, &report);
        }
        if matches!(attempt, Attempt::Finished(_)) {
            progress.flush().await;
        }
        match outcome {
            Some(outcome) if lease.is_valid() => match suspension {
                Some(suspension) => self.park(&message, suspension, outcome, &lease).await,
                None => self.write(&message, outcome, &lease).await,
            },
            _ => {
                tracing::warn!(task_id = %message.id, queue = %message.queue, "lease expired; leaving the task to the recoverer")
            }
        }
        self.active.remove(&message.id);
    }

    /// Whether `message` is a task of a workflow that was cancelled. A failure to read says no,
    /// as a server that cannot read the mark runs the task as it would without workflows.
    async fn workflow_cancelled(&self, message: &StoredTask) -> bool {
        let (Some(workflows), Some(workflow)) = (&self.config.workflows, message.headers.get(WORKFLOW_HEADER)) else {
            return false;
        };
        let Ok(workflow) = WorkflowId::new(workflow.as_str()) else { return false };
        match workflows.is_cancelled(&workflow).await {
            Ok(cancelled) => cancelled,
            Err(e) => {
                tracing::warn!(task_id = %message.id, %workflow, error = %e, "could not read whether the task's workflow was cancelled; running it");
                false
            }
        }
    }

    /// Parks `message` as its handler asked; writes `fallback` (an uncharged retry, soon) when
    /// the broker keeps no steps or parking fails.
    async fn park(&self, message: &StoredTask, suspension: Suspension, fallback: Outcome, lease: &Lease) {
        if let Some(steps) = &self.config.steps {
            match steps.park(message, suspension.parked(), suspension.record.as_ref()).await {
                Ok(()) => return,
                Err(Error::TaskNotFound { .. }) => {
                    tracing::warn!(task_id = %message.id, queue = %message.queue, "task was no longer active when it was parked");
                    return;
                }
                Err(e) => {
                    tracing::warn!(task_id = %message.id, queue = %message.queue, error = %e, "parking failed; retrying the task after the retry delay instead")
                }
            }
        }
        self.write(message, fallback, lease).await
    }

    pub(super) async fn write(&self, message: &StoredTask, outcome: Outcome, lease: &Lease) {
        match self.settler.settle(message.clone(), outcome.clone()).await {
            Ok(()) => {}
            Err(Error::TaskNotFound { .. }) => {
                tracing::warn!(task_id = %message.id, queue = %message.queue, "task was no longer active when its outcome was written");
            }
            Err(e) => {
                tracing::warn!(task_id = %message.id, queue = %message.queue, error = %e, "writing the outcome failed; the syncer will retry");
                self.syncer.push(message.clone(), outcome, lease.expiry());
            }
        }
    }
}

/// What observers are told about an attempt that ended as `attempt`, to be written as `outcome`.
fn attempt_report<'a>(attempt: &'a Attempt, outcome: Option<&Outcome>, duration: Duration) -> AttemptReport<'a> {
    let error = match attempt {
        Attempt::Finished(Err(err)) if err.suspension().is_none() => Some(err),
        _ => None,
    };
    let (outcome, is_failure) = match (attempt, outcome) {
        (Attempt::LeaseLost, _) | (_, None) => (AttemptOutcome::LeaseLost, false),
        (Attempt::Abandoned, _) => (AttemptOutcome::Requeued, false),
        (Attempt::Finished(Err(err)), _) if err.suspension().is_some() => (AttemptOutcome::Parked, false),
        (Attempt::Finished(Ok(())), _) => (AttemptOutcome::Succeeded, false),
        (Attempt::Finished(Err(_)), Some(Outcome::Retry { is_failure, .. })) => (AttemptOutcome::Retried, *is_failure),
        (Attempt::Finished(Err(_)), Some(Outcome::Archive { .. })) => (AttemptOutcome::Archived, true),
        (Attempt::Finished(Err(_)), Some(_)) => (AttemptOutcome::Revoked, false),
    };
    AttemptReport { outcome, duration, error, is_failure }
}
