//! Routing tasks to handlers by type name, with middleware.

use crate::handler::{Handler, HandlerError, HandlerFn, TaskContext, handler_fn};
use async_trait::async_trait;
use asynq_core::Task;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

/// Wraps a handler in another (logging, metrics, tracing...).
pub type Middleware = Arc<dyn Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync>;

/// Routes each task to the handler registered for its type, as Go asynq's `ServeMux` does: an
/// exact match first, otherwise the longest registered pattern that is a prefix of the type.
/// A task no pattern matches fails with a "handler not found" error (and is retried).
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
    /// If `pattern` is blank or already registered: both are programming errors.
    pub fn handle(&mut self, pattern: impl Into<String>, handler: impl Handler) -> &mut Self {
        let pattern = pattern.into();
        assert!(!pattern.trim().is_empty(), "asynq: invalid pattern");
        assert!(!self.routes.contains_key(&pattern), "asynq: multiple registrations for {pattern}");
        self.routes.insert(pattern, Arc::new(handler));
        self.composed = OnceLock::new();
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
        self.routes.keys().filter(|p| type_name.starts_with(p.as_str())).max_by_key(|p| p.len()).map(String::as_str)
    }

    /// `handler` wrapped in every middleware, the first added outermost.
    fn wrap(&self, handler: Arc<dyn Handler>) -> Arc<dyn Handler> {
        self.middleware.iter().rev().fold(handler, |handler, m| m(handler))
    }

    fn compose(&self) -> Composed {
        Composed {
            routes: self.routes.iter().map(|(pattern, h)| (pattern.clone(), self.wrap(h.clone()))).collect(),
            not_found: self.wrap(Arc::new(NotFound)),
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
}
