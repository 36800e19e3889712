//! Routing tasks to handlers by type name, with middleware.

use crate::handler::{Handler, HandlerError, HandlerFn, TaskContext, handler_fn};
use async_trait::async_trait;
use asynq_core::Task;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

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
#[derive(Default)]
pub struct ServeMux {
    routes: BTreeMap<String, Arc<dyn Handler>>,
    middleware: Vec<Middleware>,
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
        self
    }

    /// The pattern that handles tasks of type `type_name`, if any.
    pub fn pattern_for(&self, type_name: &str) -> Option<&str> {
        if let Some((pattern, _)) = self.routes.get_key_value(type_name) {
            return Some(pattern);
        }
        self.routes.keys().filter(|p| type_name.starts_with(p.as_str())).max_by_key(|p| p.len()).map(String::as_str)
    }

    fn route(&self, type_name: &str) -> Option<Arc<dyn Handler>> {
        self.pattern_for(type_name).map(|p| Arc::clone(&self.routes[p]))
    }
}

#[async_trait]
impl Handler for ServeMux {
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        let mut handler: Arc<dyn Handler> = match self.route(task.type_name()) {
            Some(h) => h,
            None => Arc::new(NotFound),
        };
        for m in self.middleware.iter().rev() {
            handler = m(handler);
        }
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
