//! The policy a server's parts share: the callbacks of [`Config`](crate::Config) that decide a
//! task's retry delay, what counts as a failure, who hears of errors and health checks, and which
//! shared limit a task counts against; the retry-or-archive decision made with them
//! ([`FailurePolicy`]); and the text of a handler's panic. It imports none of the parts that use
//! it (the configuration, the processor, the aggregator, the shared limits).

use crate::handler::HandlerError;
use crate::rng::ServerRng;
use asynq_core::broker::Outcome;
use asynq_core::{StoredTask, Task};
use std::any::Any;
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime};

/// Computes how long to wait before retrying a task: `(retries so far, error, task)`.
pub type RetryDelayFn = Arc<dyn Fn(u32, &HandlerError, &Task) -> Duration + Send + Sync>;
/// Decides whether an error counts as a failure (retry count and failed statistics go up).
pub type IsFailureFn = Arc<dyn Fn(&HandlerError) -> bool + Send + Sync>;
/// Called with every error a handler returns, before the task is retried or archived.
pub type ErrorHandlerFn = Arc<dyn Fn(&Task, &HandlerError) + Send + Sync>;
/// Called after every health check with its result.
pub type HealthCheckFn = Arc<dyn Fn(Result<(), &asynq_core::Error>) + Send + Sync>;
/// Names the shared concurrency limit a task counts against, if any (a tenant's, say).
pub type SharedLimitFn = Arc<dyn Fn(&Task) -> Option<asynq_core::slots::SharedLimit> + Send + Sync>;

/// Go asynq's default retry delay ([`asynq_core::retry::default_retry_delay`]), its jitter
/// drawn from the thread's generator. A server whose [`Config::retry_delay`](crate::Config::retry_delay)
/// is left at its default draws from its own generator instead (see
/// [`Config::rng_seed`](crate::Config::rng_seed)).
pub fn default_retry_delay(retried: u32, _err: &HandlerError, _task: &Task) -> Duration {
    asynq_core::retry::default_retry_delay(retried, &mut rand::rng())
}

/// The one [`RetryDelayFn`] that [`Config::default`](crate::Config::default) holds: a server
/// knows it by its address and draws the jitter from its own generator instead.
static DEFAULT_RETRY_DELAY: LazyLock<RetryDelayFn> = LazyLock::new(|| Arc::new(default_retry_delay));

/// The default retry delay, as [`Config::default`](crate::Config::default) holds it.
pub(crate) fn default_retry_delay_fn() -> RetryDelayFn {
    Arc::clone(&DEFAULT_RETRY_DELAY)
}

/// What happens to a task whose attempt failed: retried after a delay, or archived.
#[derive(Clone)]
pub(crate) struct FailurePolicy {
    /// How long to wait before the retry.
    pub retry_delay: RetryDelayFn,
    /// Whether the error counts as a failure.
    pub is_failure: IsFailureFn,
}

impl FailurePolicy {
    /// The policy of a server whose configuration says `retry_delay` and `is_failure`: the
    /// default retry delay draws its jitter from `rng`.
    pub(crate) fn new(retry_delay: &RetryDelayFn, is_failure: &IsFailureFn, rng: &ServerRng) -> Self {
        let retry_delay = if Arc::ptr_eq(retry_delay, &DEFAULT_RETRY_DELAY) {
            let rng = rng.clone();
            Arc::new(move |retried: u32, _: &HandlerError, _: &Task| {
                rng.with(|rng| asynq_core::retry::default_retry_delay(retried, rng))
            })
        } else {
            Arc::clone(retry_delay)
        };
        Self { retry_delay, is_failure: Arc::clone(is_failure) }
    }

    /// The outcome for `message` after `err` at `now`: archived when its retries are used up
    /// or the error says to skip retries, otherwise retried after the retry delay.
    pub(crate) fn outcome(&self, message: &StoredTask, err: &HandlerError, now: SystemTime) -> Outcome {
        if err.is_revoke() {
            return Outcome::Done;
        }
        if message.retries_exhausted() || err.is_skip_retry() {
            return Outcome::Archive { error: err.to_string() };
        }
        let task = Task::from_message(message);
        let delay = (self.retry_delay)(message.retried, err, &task);
        // A corrupt `retried` near `i32::MAX` makes the default delay saturate: the retry is
        // then due at the end of time, not at an overflow.
        let retry_at = asynq_core::time::add_clamped(now, delay);
        Outcome::Retry { retry_at, error: err.to_string(), is_failure: (self.is_failure)(err) }
    }
}

impl FailurePolicy {
    /// When to try `message` again, uncharged, should the park its handler asked for (`err`,
    /// carrying a suspension until `until`) fail to be written: after the retry delay, or at
    /// `until` if that is sooner. Not at `until` alone: a task in the retry set is not woken by a
    /// signal, and a sleep whose record was not written sleeps its whole length again.
    pub(crate) fn park_fallback(
        &self,
        message: &StoredTask,
        err: &HandlerError,
        now: SystemTime,
        until: SystemTime,
    ) -> SystemTime {
        let delay = (self.retry_delay)(message.retried, err, &Task::from_message(message));
        asynq_core::time::add_clamped(now, delay).min(until)
    }
}

impl fmt::Debug for FailurePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailurePolicy").finish_non_exhaustive()
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
