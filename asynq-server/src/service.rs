//! Handlers and middleware as tower `Service`s and `Layer`s, so that the tower ecosystem's
//! middleware (timeouts, concurrency and rate limits, tracing, metrics) applies to tasks.
//!
//! A [`Handler`] is a `Service<TaskRequest>` through [`HandlerService`], and any such service is
//! a handler through [`ServiceHandler`]. [`ServeMux::layer`] wraps every handler of a mux in a
//! `Layer`, as [`ServeMux::middleware`] does with a closure; [`ServeMux::handle_service`] routes
//! a pattern to a service.
//!
//! Tower middleware boxes its errors, so a [`HandlerError`] travels through it as a
//! [`HandlerFailure`] and comes out as it went in: a `skip_retry` stays a `skip_retry`. Any other
//! error (a timeout layer's "request timed out") fails the attempt as [`HandlerError::new`].

use crate::handler::{Handler, HandlerError, TaskContext};
use crate::mux::ServeMux;
use async_trait::async_trait;
use asynq_core::Task;
use futures::future::BoxFuture;
use std::error::Error as StdError;
use std::fmt;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// The error type tower middleware boxes errors into.
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// One attempt of a task, as a tower service receives it.
#[derive(Debug)]
pub struct TaskRequest {
    /// What the handler knows about the task.
    pub ctx: TaskContext,
    /// The task.
    pub task: Task,
}

/// A [`HandlerError`] as a standard error, so that it can travel through middleware that boxes
/// errors; [`ServiceHandler`] unwraps it again.
#[derive(Debug)]
pub struct HandlerFailure(pub HandlerError);

impl fmt::Display for HandlerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl StdError for HandlerFailure {}

/// A [`Handler`] as a tower `Service`: always ready, its errors boxed as [`HandlerFailure`].
#[derive(Clone)]
pub struct HandlerService {
    handler: Arc<dyn Handler>,
}

impl HandlerService {
    /// `handler` as a service.
    pub fn new(handler: Arc<dyn Handler>) -> Self {
        Self { handler }
    }
}

impl fmt::Debug for HandlerService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerService").finish_non_exhaustive()
    }
}

impl Service<TaskRequest> for HandlerService {
    type Response = ();
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<(), BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: TaskRequest) -> Self::Future {
        let handler = Arc::clone(&self.handler);
        Box::pin(async move {
            handler
                .process_task(request.ctx, request.task)
                .await
                .map_err(|err| Box::new(HandlerFailure(err)) as BoxError)
        })
    }
}

/// A tower `Service` as a [`Handler`].
///
/// The one service instance is shared by every task the handler runs: each attempt waits for
/// it to be ready and calls it under a lock, then runs the call's future without it, so a
/// concurrency or rate limit layer counts every task of the handler.
pub struct ServiceHandler<S> {
    service: tokio::sync::Mutex<S>,
}

impl<S> ServiceHandler<S> {
    /// `service` as a handler.
    pub fn new(service: S) -> Self {
        Self { service: tokio::sync::Mutex::new(service) }
    }
}

impl<S> fmt::Debug for ServiceHandler<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceHandler").field("service", &std::any::type_name::<S>()).finish()
    }
}

#[async_trait]
impl<S> Handler for ServiceHandler<S>
where
    S: Service<TaskRequest, Response = ()> + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        let call = {
            let mut service = self.service.lock().await;
            poll_fn(|cx| service.poll_ready(cx)).await.map_err(handler_error)?;
            service.call(TaskRequest { ctx, task })
        };
        call.await.map_err(handler_error)
    }
}

/// The handler's own error when it is one, otherwise a failure with the middleware's error.
fn handler_error(err: impl Into<BoxError>) -> HandlerError {
    match err.into().downcast::<HandlerFailure>() {
        Ok(failure) => failure.0,
        Err(other) => HandlerError::new(other),
    }
}

impl ServeMux {
    /// Wraps every handler of the mux (and the fallback) in a tower `Layer`, as
    /// [`ServeMux::middleware`] wraps them in a closure; the first added is the outermost.
    ///
    /// ```
    /// use asynq_server::{HandlerError, ServeMux, TaskContext};
    /// use asynq_core::Task;
    /// use tower::limit::ConcurrencyLimitLayer;
    ///
    /// let mut mux = ServeMux::new();
    /// mux.handle_fn("video:encode", |_ctx: TaskContext, _task: Task| async { Ok::<_, HandlerError>(()) });
    /// // At most 2 `video:encode` tasks run at once in this process, whatever the concurrency.
    /// mux.layer(ConcurrencyLimitLayer::new(2));
    /// ```
    pub fn layer<L>(&mut self, layer: L) -> &mut Self
    where
        L: Layer<HandlerService> + Send + Sync + 'static,
        L::Service: Service<TaskRequest, Response = ()> + Send + 'static,
        <L::Service as Service<TaskRequest>>::Error: Into<BoxError>,
        <L::Service as Service<TaskRequest>>::Future: Send + 'static,
    {
        self.middleware(move |inner| Arc::new(ServiceHandler::new(layer.layer(HandlerService::new(inner)))))
    }

    /// Routes tasks matching `pattern` to a tower `Service`; see [`ServiceHandler`].
    ///
    /// # Panics
    /// As [`ServeMux::handle`].
    pub fn handle_service<S>(&mut self, pattern: impl Into<String>, service: S) -> &mut Self
    where
        S: Service<TaskRequest, Response = ()> + Send + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
    {
        self.handle(pattern, ServiceHandler::new(service))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{QueueName, StoredTask, TaskId};
    use asynq_memory::MemoryBroker;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, SystemTime};
    use tokio_util::sync::CancellationToken;
    use tower::limit::ConcurrencyLimitLayer;
    use tower::timeout::TimeoutLayer;

    fn context() -> TaskContext {
        let message = StoredTask::new(TaskId::from_static("t"), QueueName::default(), "t");
        TaskContext::new(&message, SystemTime::UNIX_EPOCH, Arc::new(MemoryBroker::new()), CancellationToken::new())
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeout_layer_fails_a_slow_task_and_a_handler_error_comes_through_unchanged() {
        let mut mux = ServeMux::new();
        mux.handle_fn("slow", |_ctx, _task| async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok(())
        });
        mux.handle_fn("bad", |_ctx, _task| async { Err(HandlerError::skip_retry("no such user")) });
        mux.layer(TimeoutLayer::new(Duration::from_secs(1)));

        let slow = mux.process_task(context(), Task::new("slow", "")).await.unwrap_err();
        assert!(!slow.is_skip_retry(), "{slow:?}");
        assert_eq!(slow.to_string(), "request timed out");
        let bad = mux.process_task(context(), Task::new("bad", "")).await.unwrap_err();
        assert!(bad.is_skip_retry(), "{bad:?}");
        assert_eq!(bad.to_string(), "no such user: skip retry for the task");
    }

    #[tokio::test(start_paused = true)]
    async fn a_concurrency_limit_layer_counts_every_task_of_the_mux() {
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut mux = ServeMux::new();
        let (now, peak) = (running.clone(), most.clone());
        mux.handle_fn("encode", move |_ctx, _task| {
            let (now, peak) = (now.clone(), peak.clone());
            async move {
                peak.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        });
        mux.layer(ConcurrencyLimitLayer::new(2));
        let mux = Arc::new(mux);
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let mux = mux.clone();
                tokio::spawn(async move { mux.process_task(context(), Task::new("encode", "")).await })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }
}
