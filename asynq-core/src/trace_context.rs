//! W3C trace context in task headers, so that one trace runs from the request that enqueued a
//! task to the handler that ran it: the client writes the context of its enqueue span
//! ([`inject`]), the server makes the context it reads ([`extract`]) the parent of the task's
//! span. Both read `tracing` spans through the `tracing-opentelemetry` layer the application
//! installs with its exporter; without it, or outside any span ([`in_trace`]), nothing is
//! written.
//!
//! Go asynq neither reads nor writes these headers, and keeps them as they are.

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

/// Writes `cx` into `headers` in the W3C format (`traceparent`, and `tracestate` when there is
/// some). Writes nothing when `cx` has no valid span context, or when `headers` already carry a
/// `traceparent` (the caller's own choice wins).
pub fn inject(cx: &Context, headers: &mut HashMap<String, String>) {
    if !cx.span().span_context().is_valid() || headers.contains_key(TRACEPARENT_HEADER) {
        return;
    }
    TraceContextPropagator::new().inject_context(cx, headers);
    // The propagator writes an empty `tracestate` for a context without one: a header that says
    // nothing, on every task.
    if headers.get(TRACESTATE_HEADER).is_some_and(String::is_empty) {
        headers.remove(TRACESTATE_HEADER);
    }
}

/// Whether the caller is inside a trace: the current `tracing` span, or else the current
/// OpenTelemetry context, has a valid span context. Enqueues write a trace context only then, so
/// that a task enqueued outside any span carries none (its handler starts a trace of its own).
pub fn in_trace() -> bool {
    tracing::Span::current().context().span().span_context().is_valid()
        || Context::current().span().span_context().is_valid()
}

/// [`inject`] with the context of `span`.
pub fn inject_span(span: &tracing::Span, headers: &mut HashMap<String, String>) {
    inject(&span.context(), headers);
}

/// The OpenTelemetry context in `headers`; an empty context when they carry none (or a
/// malformed one).
pub fn extract(headers: &HashMap<String, String>) -> Context {
    TraceContextPropagator::new().extract(headers)
}

/// Makes the context in `headers`, if they carry a valid one, the parent of `span`. Returns
/// whether it did.
pub fn continue_trace(headers: &HashMap<String, String>, span: &tracing::Span) -> bool {
    let cx = extract(headers);
    cx.span().span_context().is_valid() && span.set_parent(cx).is_ok()
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
        let mut plain = HashMap::new();
        inject(&context(TraceState::default()), &mut plain);
        assert_eq!(
            plain.get(TRACEPARENT_HEADER).map(String::as_str),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
        assert_eq!(plain.get(TRACESTATE_HEADER), None, "{plain:?}");

        let mut stated = HashMap::new();
        inject(&context(TraceState::from_key_value([("vendor", "value")]).unwrap()), &mut stated);
        assert_eq!(stated.get(TRACESTATE_HEADER).map(String::as_str), Some("vendor=value"));
        // Either way the worker reads back the same trace.
        let back = extract(&stated);
        assert_eq!(
            back.span().span_context().trace_id(),
            context(TraceState::default()).span().span_context().trace_id()
        );

        let mut none = HashMap::new();
        inject(&Context::new(), &mut none);
        assert!(none.is_empty(), "no span context, no headers");
    }

    #[test]
    fn a_traceparent_already_there_is_kept() {
        let mut headers = HashMap::from([(TRACEPARENT_HEADER.to_owned(), "mine".to_owned())]);
        inject(&context(TraceState::default()), &mut headers);
        assert_eq!(headers[TRACEPARENT_HEADER], "mine");
    }
}
