//! Trace context across processes: the producer writes the current span's OpenTelemetry
//! context into a task's headers (W3C `traceparent` and `tracestate`), and the worker makes it
//! the parent of the task's [`asynq.task`](asynq_server::TASK_SPAN_NAME) span, so one
//! trace runs from the request that enqueued a task to the handler that ran it.
//!
//! Both sides use [`tracing`] spans bridged to OpenTelemetry by a `tracing-opentelemetry`
//! layer, which the application installs with its exporter. Go asynq does not read these
//! headers, and keeps them as they are.

use asynq_core::Task;
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::collections::HashMap;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The header that carries the W3C trace parent.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// The header W3C trace context puts vendor-specific trace state in; written only when there is
/// some.
pub const TRACESTATE_HEADER: &str = "tracestate";

/// `task` with the OpenTelemetry context of the current `tracing` span in its headers
/// (`traceparent`, and `tracestate` when there is one). Unchanged when the current span has no
/// valid context (no OpenTelemetry layer, or no span).
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
    inject_context(&tracing::Span::current().context(), task)
}

/// `task` with `cx` in its headers, in the W3C trace context format. Unchanged when `cx` has
/// no valid span context.
pub fn inject_context(cx: &Context, task: Task) -> Task {
    if !cx.span().span_context().is_valid() {
        return task;
    }
    let mut headers = task.headers().clone();
    TraceContextPropagator::new().inject_context(cx, &mut headers);
    // The propagator writes an empty `tracestate` for a context without one: a header that says
    // nothing, on every task.
    if headers.get(TRACESTATE_HEADER).is_some_and(String::is_empty) {
        headers.remove(TRACESTATE_HEADER);
    }
    task.with_headers(headers)
}

/// The OpenTelemetry context in `headers`; an empty context when they carry none (or a
/// malformed one).
pub fn extract_context(headers: &HashMap<String, String>) -> Context {
    TraceContextPropagator::new().extract(headers)
}

#[cfg(feature = "server")]
pub use observer::TraceContextObserver;

#[cfg(feature = "server")]
mod observer {
    use super::extract_context;
    use asynq_core::StoredTask;
    use asynq_server::TaskObserver;
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// Makes the context in a task's `traceparent` header the parent of the task's span, so the
    /// handler's spans join the producer's trace. Tasks without the header start a trace of
    /// their own. Install it in [`asynq_server::Config::task_observers`].
    #[derive(Debug, Clone, Copy, Default)]
    pub struct TraceContextObserver;

    impl TaskObserver for TraceContextObserver {
        fn task_started(&self, task: &StoredTask, span: &tracing::Span) {
            let cx = extract_context(&task.headers);
            if !cx.span().span_context().is_valid() {
                return;
            }
            if let Err(e) = span.set_parent(cx) {
                tracing::debug!(task_id = %task.id, error = %e, "could not continue the task's trace");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

    fn context(state: TraceState) -> Context {
        let trace = TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap();
        let span = SpanId::from_hex("00f067aa0ba902b7").unwrap();
        Context::new().with_remote_span_context(SpanContext::new(trace, span, TraceFlags::SAMPLED, true, state))
    }

    #[test]
    fn tracestate_is_written_only_when_there_is_some() {
        let plain = inject_context(&context(TraceState::default()), Task::new("t", ""));
        assert_eq!(
            plain.headers().get(TRACEPARENT_HEADER).map(String::as_str),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
        assert_eq!(plain.headers().get(TRACESTATE_HEADER), None, "{:?}", plain.headers());

        let state = TraceState::from_key_value([("vendor", "value")]).unwrap();
        let stated = inject_context(&context(state), Task::new("t", ""));
        assert_eq!(stated.headers().get(TRACESTATE_HEADER).map(String::as_str), Some("vendor=value"));
        // Either way the worker reads back the same trace.
        let back = extract_context(stated.headers());
        assert_eq!(
            back.span().span_context().trace_id(),
            context(TraceState::default()).span().span_context().trace_id()
        );

        let none = inject_context(&Context::new(), Task::new("t", ""));
        assert!(none.headers().is_empty(), "no span context, no headers");
    }
}
