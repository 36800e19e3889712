//! Routing tasks to handlers by type name, with middleware.

use crate::handler::{Handler, HandlerError, HandlerFn, TaskContext, handler_fn};
use async_trait::async_trait;
use asynq_core::Task;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

/// Wraps a handler in another (logging, metrics, tracing...).
pub type Middleware = Arc<dyn Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync>;

/// Routes each task to the handler registered for its type, as Go asynq's `ServeMux` does: an
/// exact match first, otherwise the longest registered pattern that is a prefix of the type.
/// A job's route (`ServeMux::handle_job`, with the `json` feature) matches its type name exactly, never as a prefix.
/// A task no pattern matches goes to the [fallback](ServeMux::fallback) if one is set;
/// otherwise it fails with a "handler not found" error (and is retried), as in Go asynq.
///
/// ```
/// use asynq_server::{HandlerError, ServeMux, TaskContext};
/// use asynq_core::Task;
///
/// let mut mux = ServeMux::new();
/// mux.handle_fn("email:", |_ctx: TaskContext, _task: Task| async { Ok::<_, HandlerError>(()) });
/// mux.handle_fn("email:welcome", |_ctx: TaskContext, _task: Task| async { Ok::<_, HandlerError>(()) });
/// assert_eq!(mux.pattern_for("email:welcome"), Some("email:welcome"));
/// assert_eq!(mux.pattern_for("email:reset"), Some("email:"));
/// assert_eq!(mux.pattern_for("image:resize"), None);
/// ```
///
/// Middleware wraps each handler once, when the first task is routed (and again only if the mux
/// changes), not on every task.
#[derive(Default)]
pub struct ServeMux {
    routes: BTreeMap<String, Arc<dyn Handler>>,
    /// The routes that match their type name exactly, never as a prefix: jobs' routes.
    exact: BTreeSet<String>,
    /// The handler of tasks no pattern matches, if set.
    fallback: Option<Arc<dyn Handler>>,
    middleware: Vec<Middleware>,
    /// Every route, and the not-found handler, wrapped in the middleware.
    composed: OnceLock<Composed>,
}

/// The handlers as tasks reach them: each wrapped in every middleware.
struct Composed {
    routes: BTreeMap<String, Arc<dyn Handler>>,
    not_found: Arc<dyn Handler>,
}

impl ServeMux {
    /// An empty mux.
    pub fn new() -> Self {
        Self::default()
    }

    /// Routes tasks matching `pattern` to `handler`.
    ///
    /// # Panics
    /// If `pattern` is blank or already registered: both are programming errors. A handler of
    /// every task no pattern matches is the [fallback](ServeMux::fallback).
    pub fn handle(&mut self, pattern: impl Into<String>, handler: impl Handler) -> &mut Self {
        self.route(pattern.into(), Arc::new(handler))
    }

    /// Registers a route; see [`ServeMux::handle`].
    pub(crate) fn route(&mut self, pattern: String, handler: Arc<dyn Handler>) -> &mut Self {
        assert!(
            !pattern.trim().is_empty(),
            "asynq: invalid pattern: a pattern may not be blank; use ServeMux::fallback for the tasks no pattern matches"
        );
        assert!(!self.routes.contains_key(&pattern), "asynq: multiple registrations for {pattern}");
        self.routes.insert(pattern, handler);
        self.composed = OnceLock::new();
        self
    }

    /// Registers a route that matches `type_name` exactly, never as a prefix; see
    /// [`ServeMux::handle`].
    #[cfg(feature = "json")]
    pub(crate) fn route_exact(&mut self, type_name: &str, handler: Arc<dyn Handler>) -> &mut Self {
        self.route(type_name.to_owned(), handler);
        self.exact.insert(type_name.to_owned());
        self
    }

    /// Routes tasks matching `pattern` to an async function or closure.
    ///
    /// # Panics
    /// As [`ServeMux::handle`].
    pub fn handle_fn<F, Fut>(&mut self, pattern: impl Into<String>, f: F) -> &mut Self
    where
        F: Fn(TaskContext, Task) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let handler: HandlerFn<F> = handler_fn(f);
        self.handle(pattern, handler)
    }

    /// Routes every task that no pattern matches to `handler`, in place of the default, which
    /// fails the task with a "handler not found" error so that it is retried (Go asynq's
    /// behaviour, kept when no fallback is set). Middleware wraps the fallback as it wraps the
    /// other handlers.
    ///
    /// ```
    /// use asynq_server::{HandlerError, ServeMux, TaskContext};
    /// use asynq_core::Task;
    ///
    /// let mut mux = ServeMux::new();
    /// mux.handle_fn("email:", |_ctx: TaskContext, _task: Task| async { Ok::<_, HandlerError>(()) });
    /// // Tasks of a type this worker does not know fail for good instead of being retried.
    /// mux.fallback_fn(|_ctx: TaskContext, task: Task| async move {
    ///     Err(HandlerError::skip_retry(format!("no handler for {:?}", task.type_name())))
    /// });
    /// ```
    ///
    /// # Panics
    /// If a fallback is already set: a programming error, as registering a pattern twice is.
    pub fn fallback(&mut self, handler: impl Handler) -> &mut Self {
        assert!(self.fallback.is_none(), "asynq: multiple fallbacks");
        self.fallback = Some(Arc::new(handler));
        self.composed = OnceLock::new();
        self
    }

    /// Routes every task that no pattern matches to an async function or closure; see
    /// [`ServeMux::fallback`].
    ///
    /// # Panics
    /// As [`ServeMux::fallback`].
    pub fn fallback_fn<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(TaskContext, Task) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let handler: HandlerFn<F> = handler_fn(f);
        self.fallback(handler)
    }

    /// Adds middleware around every handler; the first added is the outermost.
    pub fn middleware(
        &mut self,
        m: impl Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync + 'static,
    ) -> &mut Self {
        self.middleware.push(Arc::new(m));
        self.composed = OnceLock::new();
        self
    }

    /// The pattern that handles tasks of type `type_name`, if any.
    pub fn pattern_for(&self, type_name: &str) -> Option<&str> {
        if let Some((pattern, _)) = self.routes.get_key_value(type_name) {
            return Some(pattern);
        }
        self.routes
            .keys()
            .filter(|p| !self.exact.contains(*p) && type_name.starts_with(p.as_str()))
            .max_by_key(|p| p.len())
            .map(String::as_str)
    }

    /// `handler` wrapped in every middleware, the first added outermost.
    fn wrap(&self, handler: Arc<dyn Handler>) -> Arc<dyn Handler> {
        self.middleware.iter().rev().fold(handler, |handler, m| m(handler))
    }

    fn compose(&self) -> Composed {
        Composed {
            routes: self.routes.iter().map(|(pattern, h)| (pattern.clone(), self.wrap(h.clone()))).collect(),
            not_found: self.wrap(self.fallback.clone().unwrap_or_else(|| Arc::new(NotFound))),
        }
    }
}

#[async_trait]
impl Handler for ServeMux {
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        let composed = self.composed.get_or_init(|| self.compose());
        let handler = match self.pattern_for(task.type_name()) {
            Some(pattern) => &composed.routes[pattern],
            None => &composed.not_found,
        };
        handler.process_task(ctx, task).await
    }
}

impl fmt::Debug for ServeMux {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServeMux")
            .field("patterns", &self.routes.keys().collect::<Vec<_>>())
            .field("fallback", &self.fallback.is_some())
            .field("middleware", &self.middleware.len())
            .finish()
    }
}

#[derive(Debug)]
struct NotFound;

#[async_trait]
impl Handler for NotFound {
    async fn process_task(&self, _ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        Err(HandlerError::handler_not_found(task.type_name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{QueueName, StoredTask, TaskId};
    use asynq_memory::MemoryBroker;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::SystemTime;
    use tokio_util::sync::CancellationToken;

    /// Middleware that records its name when it runs, and counts how often it wraps a handler.
    struct Tag {
        name: &'static str,
        log: Arc<Mutex<Vec<&'static str>>>,
        inner: Arc<dyn Handler>,
    }

    #[async_trait]
    impl Handler for Tag {
        async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
            self.log.lock().unwrap().push(self.name);
            self.inner.process_task(ctx, task).await
        }
    }

    fn tagging(
        name: &'static str,
        log: &Arc<Mutex<Vec<&'static str>>>,
        wraps: &Arc<AtomicUsize>,
    ) -> impl Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync + 'static {
        let (log, wraps) = (log.clone(), wraps.clone());
        move |inner| {
            wraps.fetch_add(1, Ordering::SeqCst);
            Arc::new(Tag { name, log: log.clone(), inner })
        }
    }

    fn context() -> TaskContext {
        let message = StoredTask::new(TaskId::from_static("t"), QueueName::default(), "t");
        TaskContext::new(&message, SystemTime::UNIX_EPOCH, Arc::new(MemoryBroker::new()), CancellationToken::new())
    }

    #[tokio::test]
    async fn middleware_wraps_each_handler_once_outermost_first_and_the_not_found_one_too() {
        let (log, wraps) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicUsize::new(0)));
        let mut mux = ServeMux::new();
        mux.handle_fn("email:", |_ctx, _task| async { Ok(()) });
        mux.middleware(tagging("outer", &log, &wraps)).middleware(tagging("inner", &log, &wraps));

        for _ in 0..3 {
            mux.process_task(context(), Task::new("email:welcome", "")).await.unwrap();
        }
        let err = mux.process_task(context(), Task::new("sms:send", "")).await.unwrap_err();
        assert!(err.is_handler_not_found(), "{err:?}");

        // Two middleware around two handlers (the route and not-found), composed once.
        assert_eq!(wraps.load(Ordering::SeqCst), 4);
        assert_eq!(log.lock().unwrap().as_slice(), ["outer", "inner"].repeat(4));

        // A change to the mux composes again.
        mux.handle_fn("sms:", |_ctx, _task| async { Ok(()) });
        mux.process_task(context(), Task::new("sms:send", "")).await.unwrap();
        assert_eq!(wraps.load(Ordering::SeqCst), 10);
    }

    #[tokio::test]
    async fn the_fallback_takes_what_no_pattern_matches_inside_the_middleware() {
        let (log, wraps) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicUsize::new(0)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut mux = ServeMux::new();
        mux.handle_fn("email:", |_ctx, _task| async { Ok(()) });
        let fallback_seen = seen.clone();
        mux.fallback_fn(move |_ctx, task| {
            fallback_seen.lock().unwrap().push(task.type_name().to_owned());
            async { Err(HandlerError::skip_retry("unknown task type")) }
        });
        mux.middleware(tagging("outer", &log, &wraps));

        mux.process_task(context(), Task::new("email:welcome", "")).await.unwrap();
        let err = mux.process_task(context(), Task::new("sms:send", "")).await.unwrap_err();
        assert!(!err.is_handler_not_found(), "the fallback answers, not the default: {err:?}");
        assert!(err.to_string().contains("unknown task type"), "{err}");
        assert_eq!(seen.lock().unwrap().as_slice(), ["sms:send"], "only the unmatched task reaches the fallback");
        assert_eq!(log.lock().unwrap().as_slice(), ["outer", "outer"], "middleware wraps the fallback too");
    }

    #[test]
    #[should_panic(expected = "use ServeMux::fallback")]
    fn a_blank_pattern_points_to_the_fallback() {
        ServeMux::new().handle_fn("", |_ctx, _task| async { Ok(()) });
    }

    #[test]
    #[should_panic(expected = "multiple fallbacks")]
    fn a_second_fallback_is_refused() {
        let mut mux = ServeMux::new();
        mux.fallback_fn(|_ctx, _task| async { Ok(()) });
        mux.fallback_fn(|_ctx, _task| async { Ok(()) });
    }
}
