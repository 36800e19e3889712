//! Typed handlers: the payload decoded from JSON before the handler runs, and results written
//! as JSON.

use crate::handler::{Handler, HandlerError, ResultWriter, TaskContext};
use crate::mux::ServeMux;
use async_trait::async_trait;
use asynq_core::{Job, Task};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

/// A [`Handler`] that decodes each task's payload from JSON into `T` and hands the value to an
/// async function; see [`json_handler_fn`].
pub struct JsonHandlerFn<T, F> {
    f: F,
    payload: PhantomData<fn() -> T>,
}

/// Turns `f`, an async function or closure taking the context and a decoded payload, into a
/// [`Handler`].
///
/// A payload that does not decode as `T` fails the task without a retry (it is archived, as
/// with [`HandlerError::skip_retry`]), with an error naming the task type, `T` and what serde
/// reported: the same bytes will not decode any better on the next attempt.
///
/// ```
/// use asynq_server::{json_handler_fn, HandlerError, TaskContext};
///
/// #[derive(serde::Deserialize)]
/// struct Welcome {
///     user_id: u64,
/// }
///
/// let handler = json_handler_fn(|_ctx: TaskContext, welcome: Welcome| async move {
///     println!("welcome, user {}", welcome.user_id);
///     Ok::<_, HandlerError>(())
/// });
/// # let _ = handler;
/// ```
pub fn json_handler_fn<T, F, Fut>(f: F) -> JsonHandlerFn<T, F>
where
    T: DeserializeOwned + Send + 'static,
    F: Fn(TaskContext, T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    JsonHandlerFn { f, payload: PhantomData }
}

#[async_trait]
impl<T, F, Fut> Handler for JsonHandlerFn<T, F>
where
    T: DeserializeOwned + Send + 'static,
    F: Fn(TaskContext, T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        let payload = task.json_payload::<T>().map_err(HandlerError::skip_retry)?;
        (self.f)(ctx, payload).await
    }
}

impl<T, F> fmt::Debug for JsonHandlerFn<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonHandlerFn").field("payload", &std::any::type_name::<T>()).finish_non_exhaustive()
    }
}

impl ServeMux {
    /// Routes tasks matching `pattern` to an async function or closure that receives the
    /// payload decoded from JSON into `T` (see [`json_handler_fn`]).
    ///
    /// ```
    /// use asynq_server::{HandlerError, ServeMux, TaskContext};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Resize {
    ///     url: String,
    ///     width: u32,
    /// }
    ///
    /// let mut mux = ServeMux::new();
    /// mux.handle_json("image:resize", |_ctx: TaskContext, job: Resize| async move {
    ///     println!("resizing {} to {} px", job.url, job.width);
    ///     Ok::<_, HandlerError>(())
    /// });
    /// ```
    ///
    /// # Panics
    /// As [`ServeMux::handle`].
    pub fn handle_json<T, F, Fut>(&mut self, pattern: impl Into<String>, f: F) -> &mut Self
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(TaskContext, T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        self.handle(pattern, json_handler_fn(f))
    }

    /// Routes the tasks of job `J` (those of type [`J::TYPE_NAME`](Job::TYPE_NAME), exactly:
    /// never a longer type name that merely starts with it) to an async function or closure
    /// that receives the job decoded; a payload that does not decode is archived at once, as
    /// with [`ServeMux::handle_json`].
    ///
    /// ```
    /// use asynq_core::Job;
    /// use asynq_server::{HandlerError, ServeMux, TaskContext};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Resize {
    ///     url: String,
    ///     width: u32,
    /// }
    ///
    /// impl Job for Resize {
    ///     const TYPE_NAME: &'static str = "image:resize";
    /// }
    ///
    /// let mut mux = ServeMux::new();
    /// mux.handle_job(|_ctx: TaskContext, job: Resize| async move {
    ///     println!("resizing {} to {} px", job.url, job.width);
    ///     Ok::<_, HandlerError>(())
    /// });
    /// assert_eq!(mux.pattern_for("image:resize"), Some("image:resize"));
    /// assert_eq!(mux.pattern_for("image:resize:v2"), None);
    /// ```
    ///
    /// # Panics
    /// As [`ServeMux::handle`]: when `J`'s type name is already registered.
    pub fn handle_job<J, F, Fut>(&mut self, f: F) -> &mut Self
    where
        J: Job,
        F: Fn(TaskContext, J) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        self.route_exact(J::TYPE_NAME, Arc::new(json_handler_fn(f)))
    }
}

impl ResultWriter {
    /// Stores `result` encoded as JSON as the task's result, replacing any earlier one; returns
    /// the encoded length. Read it back with `TaskInfo::json_result`.
    ///
    /// Errors: [`asynq_core::Error::InvalidArgument`] (field `"result"`) when `result` cannot
    /// be encoded; otherwise as [`ResultWriter::write`].
    pub async fn write_json<T: Serialize + ?Sized>(&self, result: &T) -> asynq_core::Result<usize> {
        let bytes = serde_json::to_vec(result)
            .map_err(|e| asynq_core::Error::invalid("result", format!("cannot be encoded as JSON: {e}")))?;
        self.write(bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{QueueName, StoredTask, TaskId};
    use asynq_memory::MemoryBroker;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::SystemTime;
    use tokio_util::sync::CancellationToken;

    #[derive(serde::Deserialize)]
    struct Resize {
        width: u32,
    }

    fn context() -> TaskContext {
        let message = StoredTask::new(TaskId::from_static("t1"), QueueName::default(), "t");
        TaskContext::new(&message, SystemTime::UNIX_EPOCH, Arc::new(MemoryBroker::new()), CancellationToken::new())
    }

    fn recording_handler(seen: Arc<AtomicU32>) -> impl Handler {
        json_handler_fn(move |_ctx: TaskContext, job: Resize| {
            let seen = seen.clone();
            async move {
                seen.store(job.width, Ordering::SeqCst);
                Ok(())
            }
        })
    }

    #[tokio::test]
    async fn the_handler_receives_the_decoded_payload() {
        let seen = Arc::new(AtomicU32::new(0));
        let handler = recording_handler(seen.clone());
        handler.process_task(context(), Task::new("image:resize", r#"{"width":640}"#)).await.unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 640);
    }

    #[tokio::test]
    async fn a_payload_that_does_not_decode_fails_without_retry_and_names_both_types() {
        let seen = Arc::new(AtomicU32::new(0));
        let handler = recording_handler(seen.clone());
        let err = handler.process_task(context(), Task::new("image:resize", r#"{"height":1}"#)).await.unwrap_err();
        assert!(err.is_skip_retry(), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(r#"task type "image:resize""#), "{message}");
        assert!(message.contains("Resize"), "{message}");
        assert!(message.contains("missing field `width`"), "{message}");
        assert_eq!(seen.load(Ordering::SeqCst), 0, "the handler must not run");
    }
}
