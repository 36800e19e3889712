//! Trace context across processes: the producer writes the current span's OpenTelemetry
//! context into a task's headers (W3C `traceparent` and `tracestate`), and the worker makes it
//! the parent of the task's [`asynq.task`](asynq_server::TASK_SPAN_NAME) span, so one
//! trace runs from the request that enqueued a task to the handler that ran it.
//!
//! Both sides use [`tracing`] spans bridged to OpenTelemetry by a `tracing-opentelemetry`
//! layer, which the application installs with its exporter. Go asynq does not read these
//! headers, and keeps them as they are.

use asynq_core::Task;
use asynq_core::trace_context;
use opentelemetry::Context;
use std::collections::HashMap;

pub use asynq_core::trace_context::{TRACEPARENT_HEADER, TRACESTATE_HEADER};

/// `task` with the OpenTelemetry context of the current `tracing` span in its headers
/// (`traceparent`, and `tracestate` when there is one). Unchanged when the current span has no
/// valid context (no OpenTelemetry layer, or no span). A client built with the `opentelemetry`
/// feature does this itself, inside its enqueue span.
///
/// ```
/// use asynq_core::Task;
/// use asynq_metrics::otel::inject_trace_context;
///
/// // Inside a span exported through tracing-opentelemetry, the task carries its context:
/// let task = inject_trace_context(Task::new("email:welcome", "{}"));
/// # let _ = task;
/// ```
pub fn inject_trace_context(task: Task) -> Task {
    let mut headers = task.headers().clone();
    trace_context::inject_span(&tracing::Span::current(), &mut headers);
    task.with_headers(headers)
}

/// `task` with `cx` in its headers, in the W3C trace context format. Unchanged when `cx` has
/// no valid span context.
pub fn inject_context(cx: &Context, task: Task) -> Task {
    let mut headers = task.headers().clone();
    trace_context::inject(cx, &mut headers);
    task.with_headers(headers)
}

/// The OpenTelemetry context in `headers`; an empty context when they carry none (or a
/// malformed one).
pub fn extract_context(headers: &HashMap<String, String>) -> Context {
    trace_context::extract(headers)
}

#[cfg(feature = "server")]
pub use observer::TraceContextObserver;

#[cfg(feature = "server")]
mod observer {
    use asynq_core::StoredTask;
    use asynq_server::TaskObserver;

    /// Makes the context in a task's `traceparent` header the parent of the task's span, so the
    /// handler's spans join the producer's trace. Tasks without the header start a trace of
    /// their own. Install it in [`asynq_server::Config::task_observers`] of a server built
    /// without the `opentelemetry` feature; a server built with it does this itself.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct TraceContextObserver;

    impl TaskObserver for TraceContextObserver {
        fn task_started(&self, task: &StoredTask, span: &tracing::Span) {
            asynq_core::trace_context::continue_trace(&task.headers, span);
        }
    }
}
