//! Durable steps in a handler ([`TaskContext::step`](crate::TaskContext::step)): the parts of a
//! task that succeeded are recorded with it, and a later attempt gets their results back
//! without running them again.
//!
//! A step's result is recorded after its body succeeds, through the broker's
//! [`Steps`] capability; the records of a task are read once per attempt, at its first step. A
//! crash (or a lost broker) between a step's effect and its record runs the step again on the
//! next attempt: each step runs at least once, so its effect should be idempotent or keyed
//! (e.g. pass the task ID and step name to a payment API as its idempotency key).

use crate::handler::HandlerError;
use crate::journal::{StepJournal, Suspension};
use asynq_core::broker::Steps;
use asynq_core::steps::{MAX_STEP_RESULT_LEN, StepName, StepRecord};
use bytes::Bytes;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// Why a step did not give a result.
///
/// Like [`HandlerError`], which it converts into (`?` in a handler), it does not implement
/// `std::error::Error`.
#[derive(Debug)]
#[non_exhaustive]
pub enum StepError {
    /// The step's body failed; it is not recorded, so the next attempt runs it again. Returned
    /// from the handler (with `?`), the body's error is the attempt's, whatever its kind
    /// (a [`HandlerError::skip_retry`] archives the task).
    Failed {
        /// The step.
        name: String,
        /// What its body returned.
        error: HandlerError,
    },
    /// A step of this name already ran in this attempt: names are unique per attempt, so a step
    /// in a loop puts its index in its name (`format!("ship:{i}")`).
    DuplicateName {
        /// The name given twice.
        name: String,
    },
    /// The name is empty, too long, or holds a control character (see
    /// [`StepName::new`]).
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The step's encoded result is over [`MAX_STEP_RESULT_LEN`] bytes; it ran, and is not
    /// recorded (so a later attempt runs it again): record a reference to large data instead.
    ResultTooLarge {
        /// The step.
        name: String,
        /// The encoded result's size.
        size: usize,
        /// The limit, [`MAX_STEP_RESULT_LEN`].
        limit: usize,
    },
    /// The step's result did not encode; it ran, and is not recorded.
    Encode {
        /// The step.
        name: String,
        /// What the encoder said.
        reason: String,
    },
    /// The recorded result of the step did not decode as the type asked for (the handler's
    /// code changed the step's type since it was recorded).
    Decode {
        /// The step.
        name: String,
        /// What the decoder said.
        reason: String,
    },
    /// The server's broker keeps no step records (it lacks the
    /// [`Steps`] capability), or the context was built without one
    /// ([`TaskContext::with_steps`](crate::TaskContext::with_steps)); nothing ran.
    Unsupported {
        /// The step.
        name: String,
    },
    /// Not a failure: the handler parked its task ([`TaskContext::sleep`](crate::TaskContext::sleep)
    /// or a wait for a signal). Return it from the handler with `?`: the attempt ends, its
    /// worker is freed, and the task is scheduled to go on (charged nothing), its finished
    /// steps skipped then.
    Suspended(Suspension),
    /// The broker failed reading the task's records (nothing ran) or writing the step's (it
    /// ran, and the next attempt runs it again).
    Broker {
        /// The step.
        name: String,
        /// The broker's error.
        source: asynq_core::Error,
    },
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepError::Failed { name, error } => write!(f, "step {name:?} failed: {error}"),
            StepError::DuplicateName { name } => write!(
                f,
                "step {name:?} already ran in this attempt; give each step its own name (a step in a loop puts its index in it)"
            ),
            StepError::InvalidName { name, reason } => write!(f, "invalid step name {name:?}: {reason}"),
            StepError::ResultTooLarge { name, size, limit } => {
                write!(
                    f,
                    "the result of step {name:?} is {size} bytes, over the limit of {limit} bytes; it was not recorded"
                )
            }
            StepError::Encode { name, reason } => write!(f, "the result of step {name:?} did not encode: {reason}"),
            StepError::Decode { name, reason } => {
                write!(f, "the recorded result of step {name:?} did not decode: {reason}")
            }
            StepError::Unsupported { name } => {
                write!(f, "the broker does not keep step records, so step {name:?} cannot run durably; nothing ran")
            }
            StepError::Broker { name, source } => write!(f, "step {name:?}: {source}"),
            StepError::Suspended(suspension) => write!(f, "{suspension}"),
        }
    }
}

/// The attempt's error when a handler returns a step's (`?`): a failed body's own error; a
/// suspension parks the task; a
/// repeated or invalid name, or a record that no longer decodes, archives the task at once (no
/// retry fixes the handler's code); anything else is a failure, retried.
impl From<StepError> for HandlerError {
    fn from(error: StepError) -> Self {
        match error {
            StepError::Failed { error, .. } => error,
            StepError::Suspended(suspension) => HandlerError::suspended(suspension),
            StepError::Decode { .. } | StepError::InvalidName { .. } | StepError::DuplicateName { .. } => {
                HandlerError::skip_retry(error.to_string())
            }
            other => HandlerError::new(other.to_string()),
        }
    }
}

/// What a wait for a signal gave (`TaskContext::wait_for_signal`, or
/// [`TaskContext::wait_for_signal_bytes`](crate::TaskContext::wait_for_signal_bytes)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalWait<T> {
    /// The signal came, with this value.
    Received(T),
    /// The timeout passed first.
    TimedOut,
}

/// The recorded outcome of a wait: `r<value>` or `t`.
fn decode_wait(outcome: &Bytes) -> SignalWait<Bytes> {
    match outcome.first() {
        Some(b'r') => SignalWait::Received(outcome.slice(1..)),
        _ => SignalWait::TimedOut,
    }
}

/// The first whole second at or after `t`, so that a parked task falls due (the scheduled set
/// counts whole seconds) no earlier than `t`.
fn whole_second_after(t: std::time::SystemTime) -> std::time::SystemTime {
    let whole = asynq_core::time::whole_secs(t);
    if whole < t { whole + std::time::Duration::from_secs(1) } else { whole }
}

/// What [`StepJournal::begin`] found.
pub(crate) enum Begun {
    /// The step's result, recorded by an earlier attempt.
    Recorded(Bytes),
    /// No record: run the body, then record its result.
    Run(ToRecord),
}

/// A step to record once its body succeeded.
pub(crate) struct ToRecord {
    pub(crate) step: StepName,
    pub(crate) broker: Arc<dyn Steps>,
}

impl StepJournal {
    /// Starts the step `name`: its recorded result, or what [`StepJournal::record`] needs once
    /// its body succeeded.
    pub(crate) async fn begin(&self, name: &str) -> Result<Begun, StepError> {
        let (step, broker) = self.claim(name).await?;
        match self.recorded(&step, &broker).await? {
            Some(recorded) => Ok(Begun::Recorded(recorded.result().clone())),
            None => Ok(Begun::Run(ToRecord { step, broker })),
        }
    }

    /// Records `result` as the result of a step [`StepJournal::begin`] found unrecorded.
    pub(crate) async fn record(&self, to_record: ToRecord, result: Bytes) -> Result<(), StepError> {
        let ToRecord { step, broker } = to_record;
        let name = step.to_string();
        let size = result.len();
        let record = StepRecord::new(step.clone(), result, self.0.clock.now())
            .map_err(|_| StepError::ResultTooLarge { name: name.clone(), size, limit: MAX_STEP_RESULT_LEN })?;
        broker
            .record_step(&self.0.queue, &self.0.id, &record)
            .await
            .map_err(|source| StepError::Broker { name, source })?;
        if let Some(records) = &mut self.0.state.lock().await.records {
            records.insert(step, record);
        }
        Ok(())
    }

    /// The record of step `name` as this attempt knows it, reading the task's records if it has
    /// not yet; the name is not marked used.
    async fn peek(&self, name: &str, broker: &Arc<dyn Steps>) -> Result<Option<StepRecord>, StepError> {
        let step =
            StepName::new(name).map_err(|e| StepError::InvalidName { name: name.to_owned(), reason: e.to_string() })?;
        self.recorded(&step, broker).await
    }

    /// Checks `name` and marks it used in this attempt.
    async fn claim(&self, name: &str) -> Result<(StepName, Arc<dyn Steps>), StepError> {
        let step = StepName::new(name).map_err(|e| StepError::InvalidName {
            name: name.to_owned(),
            reason: match e {
                asynq_core::Error::InvalidArgument { reason, .. } => reason,
                other => other.to_string(),
            },
        })?;
        let Some(broker) = self.0.broker.clone() else {
            return Err(StepError::Unsupported { name: name.to_owned() });
        };
        if self.0.state.lock().await.seen.insert(step.clone()) {
            Ok((step, broker))
        } else {
            Err(StepError::DuplicateName { name: name.to_owned() })
        }
    }

    /// The record of `step`, reading the task's records if this attempt has not yet.
    async fn recorded(&self, step: &StepName, broker: &Arc<dyn Steps>) -> Result<Option<StepRecord>, StepError> {
        let mut state = self.0.state.lock().await;
        if state.records.is_none() {
            let read = broker
                .step_records(&self.0.queue, &self.0.id)
                .await
                .map_err(|source| StepError::Broker { name: step.to_string(), source })?;
            state.records = Some(read.into_iter().map(|r| (r.name().clone(), r)).collect());
        }
        Ok(state.records.as_ref().and_then(|records| records.get(step)).cloned())
    }
}

impl crate::TaskContext {
    /// This context, keeping its steps' records through `steps` (the server sets it when its
    /// broker has the [`Steps`] capability; set it yourself to call a handler directly in a
    /// test).
    pub fn with_steps(mut self, steps: Arc<dyn Steps>) -> Self {
        self.steps = self.steps.with_broker(steps);
        self
    }

    /// A durable sleep: the first attempt that reaches it ends (return its
    /// [`StepError::Suspended`] with `?`), freeing its worker, and the task is scheduled to go on
    /// after `duration`, charged nothing; the attempt that goes on returns `Ok` here at once,
    /// its finished steps skipped. Each sleep is a step named `sleep#<n>`, `n` counting the
    /// sleeps of an attempt from 1, so a handler must reach its sleeps in the same order on
    /// every attempt. An operator's "run" ends a sleep early.
    ///
    /// ```
    /// use asynq_server::{HandlerError, TaskContext, handler_fn};
    /// use std::time::Duration;
    ///
    /// let handler = handler_fn(|ctx: TaskContext, _task| async move {
    ///     ctx.step_bytes("remind", || async { Ok::<_, HandlerError>(bytes::Bytes::new()) }).await?;
    ///     ctx.sleep(Duration::from_secs(24 * 3600)).await?; // no worker held meanwhile
    ///     ctx.step_bytes("remind again", || async { Ok::<_, HandlerError>(bytes::Bytes::new()) }).await?;
    ///     Ok(())
    /// });
    /// # let _ = handler;
    /// ```
    ///
    /// Errors: [`StepError::Suspended`] when the task parks; [`StepError::Unsupported`] without
    /// the broker's [`Steps`]; [`StepError::Broker`].
    pub async fn sleep(&self, duration: std::time::Duration) -> Result<(), StepError> {
        let until = asynq_core::time::add_clamped(self.steps.0.clock.now(), duration);
        self.sleep_until(until).await
    }

    /// A durable sleep until `until`; see [`TaskContext::sleep`](Self::sleep). A time already past returns
    /// `Ok` at once (recorded as reached).
    ///
    /// Errors: as [`TaskContext::sleep`](Self::sleep).
    pub async fn sleep_until(&self, until: std::time::SystemTime) -> Result<(), StepError> {
        let n = {
            let mut state = self.steps.0.state.lock().await;
            state.sleeps += 1;
            state.sleeps
        };
        let name = format!("sleep#{n}");
        let to_record = match self.steps.begin(&name).await? {
            Begun::Recorded(_) => return Ok(()),
            Begun::Run(to_record) => to_record,
        };
        let now = self.steps.0.clock.now();
        let until_millis = until.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        let result = Bytes::from(until_millis.to_string());
        if until <= now {
            return self.steps.record(to_record, result).await;
        }
        let record = StepRecord::new(to_record.step, result, now)
            .map_err(|source| StepError::Broker { name: name.clone(), source })?;
        let parked = asynq_core::steps::Parked::new(asynq_core::steps::ParkReason::Sleep, until);
        Err(StepError::Suspended(Suspension { parked, record: Some(record) }))
    }

    /// Waits for the signal `signal` sent to this task ([`Steps::signal`], e.g. through
    /// `Client::signal`), at most `timeout`, without holding a worker: a signal sent already
    /// (before the wait, or while the task ran) returns at once; otherwise the first attempt
    /// that reaches the wait ends (return its [`StepError::Suspended`] with `?`) and the task is
    /// parked, scheduled until the timeout (rounded up to a whole second), until the signal
    /// makes it pending. The attempt that goes on gets [`SignalWait::Received`] or, once the
    /// timeout passed, [`SignalWait::TimedOut`]. The outcome is recorded as the step
    /// `signal:<name>`, so a later attempt gets the same one; a task waits for each signal
    /// once. See `TaskContext::wait_for_signal` (feature `json`) for typed values.
    ///
    /// Errors: [`StepError::Suspended`] when the task parks; [`StepError::InvalidName`] for a
    /// bad signal name; [`StepError::DuplicateName`] for a second wait for one signal in an
    /// attempt; [`StepError::Unsupported`]; [`StepError::Broker`].
    pub async fn wait_for_signal_bytes(
        &self,
        signal: &str,
        timeout: std::time::Duration,
    ) -> Result<SignalWait<Bytes>, StepError> {
        let signal_name = StepName::new(signal)
            .map_err(|e| StepError::InvalidName { name: signal.to_owned(), reason: e.to_string() })?;
        let step = format!("signal:{signal}");
        let to_record = match self.steps.begin(&step).await? {
            Begun::Recorded(outcome) => return Ok(decode_wait(&outcome)),
            Begun::Run(to_record) => to_record,
        };
        let journal = &self.steps.0;
        let broker = Arc::clone(&to_record.broker);
        let broker_error = |source| StepError::Broker { name: step.clone(), source };
        if let Some(value) =
            broker.signal_value(&journal.queue, &journal.id, &signal_name).await.map_err(broker_error)?
        {
            let mut outcome = Vec::with_capacity(value.len() + 1);
            outcome.push(b'r');
            outcome.extend_from_slice(&value);
            self.steps.record(to_record, Bytes::from(outcome)).await?;
            return Ok(SignalWait::Received(value));
        }
        let now = journal.clock.now();
        let wait_step = format!("wait:{signal}");
        let started = self.steps.peek(&wait_step, &broker).await?;
        let deadline = match &started {
            Some(record) => std::str::from_utf8(record.result())
                .ok()
                .and_then(|millis| millis.parse::<u64>().ok())
                .map(|millis| std::time::UNIX_EPOCH + std::time::Duration::from_millis(millis)),
            None => None,
        };
        if deadline.is_some_and(|deadline| deadline <= now) {
            self.steps.record(to_record, Bytes::from_static(b"t")).await?;
            return Ok(SignalWait::TimedOut);
        }
        let deadline = deadline.unwrap_or_else(|| whole_second_after(asynq_core::time::add_clamped(now, timeout)));
        let record = match started {
            Some(_) => None,
            None => {
                let millis = deadline.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
                let name = StepName::new(wait_step.clone())
                    .map_err(|e| StepError::InvalidName { name: wait_step.clone(), reason: e.to_string() })?;
                Some(StepRecord::new(name, millis.to_string(), now).map_err(broker_error)?)
            }
        };
        let parked = asynq_core::steps::Parked::new(asynq_core::steps::ParkReason::Signal(signal_name), deadline);
        Err(StepError::Suspended(Suspension { parked, record }))
    }

    /// Runs the durable step `name` with a result in bytes: on the task's first attempt that
    /// reaches it, runs `body` and records its result with the task; on a later attempt whose
    /// task has the record, returns the recorded result without running `body`. See
    /// `TaskContext::step` (feature `json`) for typed results.
    ///
    /// Errors: see [`StepError`]; return it from the handler with `?`.
    pub async fn step_bytes<F, Fut, E>(&self, name: &str, body: F) -> Result<Bytes, StepError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Bytes, E>>,
        E: Into<HandlerError>,
    {
        match self.steps.begin(name).await? {
            Begun::Recorded(result) => Ok(result),
            Begun::Run(to_record) => {
                let result = body().await.map_err(|e| StepError::Failed { name: name.to_owned(), error: e.into() })?;
                self.steps.record(to_record, result.clone()).await?;
                Ok(result)
            }
        }
    }
}

#[cfg(feature = "json")]
impl crate::TaskContext {
    /// Runs the durable step `name`: on the task's first attempt that reaches it, runs `body`
    /// and records its result (as JSON) with the task; on a later attempt (a retry, or a run
    /// after a crash) whose task has the record, returns the recorded result without running
    /// `body`.
    ///
    /// Names are unique within one attempt (a step in a loop puts its index in its name). A
    /// step runs at least once: a crash between its effect and its record runs it again, so
    /// make its effect idempotent or keyed. Its result is at most
    /// [`MAX_STEP_RESULT_LEN`] bytes of JSON. Records go when the task goes. A Go asynq server
    /// running the task ignores them and runs every step again.
    ///
    /// ```
    /// use asynq_server::{HandlerError, TaskContext, handler_fn};
    ///
    /// let handler = handler_fn(|ctx: TaskContext, _task| async move {
    ///     let receipt: String = ctx.step("charge", || async { Ok::<_, HandlerError>("r-1".to_owned()) }).await?;
    ///     ctx.step("email", || async move { println!("receipt {receipt}"); Ok::<_, HandlerError>(()) }).await?;
    ///     Ok(())
    /// });
    /// # let _ = handler;
    /// ```
    ///
    /// Errors: see [`StepError`]; return it from the handler with `?` (a failed body's own error
    /// is then the attempt's).
    pub async fn step<T, F, Fut, E>(&self, name: &str, body: F) -> Result<T, StepError>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Into<HandlerError>,
    {
        let to_record = match self.steps.begin(name).await? {
            Begun::Recorded(result) => {
                return serde_json::from_slice(&result)
                    .map_err(|e| StepError::Decode { name: name.to_owned(), reason: e.to_string() });
            }
            Begun::Run(to_record) => to_record,
        };
        let value = body().await.map_err(|e| StepError::Failed { name: name.to_owned(), error: e.into() })?;
        let bytes = serde_json::to_vec(&value)
            .map_err(|e| StepError::Encode { name: name.to_owned(), reason: e.to_string() })?;
        self.steps.record(to_record, Bytes::from(bytes)).await?;
        Ok(value)
    }

    /// [`TaskContext::wait_for_signal_bytes`](Self::wait_for_signal_bytes) for a signal whose value is JSON (as
    /// `Client::signal` sends it), decoded as `T`.
    ///
    /// ```
    /// use asynq_server::{HandlerError, SignalWait, TaskContext, handler_fn};
    /// use std::time::Duration;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Approval { by: String }
    ///
    /// let handler = handler_fn(|ctx: TaskContext, _task| async move {
    ///     match ctx.wait_for_signal::<Approval>("approved", Duration::from_secs(3600)).await? {
    ///         SignalWait::Received(approval) => println!("approved by {}", approval.by),
    ///         SignalWait::TimedOut => return Err(HandlerError::skip_retry("nobody approved in time")),
    ///     }
    ///     Ok(())
    /// });
    /// # let _ = handler;
    /// ```
    ///
    /// Errors: as [`TaskContext::wait_for_signal_bytes`](Self::wait_for_signal_bytes), and [`StepError::Decode`] for a value
    /// that does not decode as `T`.
    pub async fn wait_for_signal<T: serde::de::DeserializeOwned>(
        &self,
        signal: &str,
        timeout: std::time::Duration,
    ) -> Result<SignalWait<T>, StepError> {
        match self.wait_for_signal_bytes(signal, timeout).await? {
            SignalWait::Received(value) => serde_json::from_slice(&value)
                .map(SignalWait::Received)
                .map_err(|e| StepError::Decode { name: format!("signal:{signal}"), reason: e.to_string() }),
            SignalWait::TimedOut => Ok(SignalWait::TimedOut),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskContext;
    use asynq_core::QueueName;
    use asynq_core::broker::Dequeue;
    use asynq_memory::MemoryBroker;
    use std::time::SystemTime;
    use tokio_util::sync::CancellationToken;

    async fn running(broker: &MemoryBroker) -> TaskContext {
        let task = asynq_core::Task::new("t", "");
        let options = asynq_core::TaskOptions::new().task_id("a");
        let request = asynq_core::resolve_enqueue(&task, &options, SystemTime::UNIX_EPOCH, || unreachable!()).unwrap();
        asynq_core::broker::Enqueue::enqueue(broker, request).await.unwrap();
        let taken = broker.dequeue(&[QueueName::from_static("default")], 1).await.unwrap().remove(0);
        TaskContext::new(&taken.message, SystemTime::UNIX_EPOCH, Arc::new(broker.clone()), CancellationToken::new())
    }

    #[tokio::test]
    async fn a_context_without_a_steps_broker_refuses_steps_and_runs_nothing() {
        let broker = MemoryBroker::new();
        let ctx = running(&broker).await;
        let mut ran = false;
        let refused = ctx
            .step_bytes("s", || async {
                ran = true;
                Ok::<_, HandlerError>(Bytes::new())
            })
            .await;
        assert!(matches!(refused, Err(StepError::Unsupported { ref name }) if name == "s"), "{refused:?}");
        assert!(!ran);
        let error = HandlerError::from(refused.unwrap_err());
        assert!(!error.is_skip_retry(), "a server with steps may run it: retried");
    }

    #[tokio::test]
    async fn a_failed_body_is_the_attempts_error_and_a_second_context_reads_the_record() {
        let broker = MemoryBroker::new();
        let ctx = running(&broker).await.with_steps(Arc::new(broker.clone()));
        let failed = ctx.step_bytes("s", || async { Err(HandlerError::skip_retry("no")) }).await.unwrap_err();
        assert!(HandlerError::from(failed).is_skip_retry(), "the body's own kind is kept");
        let first = ctx.step_bytes("t", || async { Ok::<_, HandlerError>(Bytes::from_static(b"1")) }).await.unwrap();
        assert_eq!(first, Bytes::from_static(b"1"));
        let again = ctx.clone().with_steps(Arc::new(broker.clone()));
        let second = again.step_bytes("t", || async { Ok::<_, HandlerError>(Bytes::from_static(b"2")) }).await;
        assert_eq!(second.unwrap(), Bytes::from_static(b"1"), "another attempt reads the record");
    }
}
