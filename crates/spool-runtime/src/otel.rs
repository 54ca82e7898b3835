//! OpenTelemetry export of the runtime's spans (feature `otel`).
//!
//! Every run is a `spool.run` span that, with this feature, carries the
//! OpenTelemetry messaging attributes (`messaging.system = "spool"`, the
//! queue as destination, the task id as message id), the consumer span
//! kind, the name `process <queue>` and an error status when the run
//! failed. The application picks the exporter (OTLP, stdout, ...) and builds
//! the tracer provider; this module re-exports the pieces in the versions
//! the runtime was built with, so they cannot disagree:
//!
//! ```ignore
//! use tracing_subscriber::prelude::*;
//! let tracer = provider.tracer("my-app");
//! tracing_subscriber::registry()
//!     .with(spool_runtime::otel::layer().with_tracer(tracer))
//!     .init();
//! ```
//!
//! **From enqueue to run.** A task enqueued with a `traceparent` (docs/spec.md
//! §2) is run in its producer's trace: the `spool.run` span of every
//! attempt, retries included, has that traceparent as its parent, so one
//! trace shows the request, the enqueue and each attempt beside the others
//! (the span's `attempt` tells them apart). A parent rather than a link for
//! retries, because a link is recorded only on the span that makes it: the
//! producer's trace would not list the retries, and a retry would start a
//! trace of its own that a sampler decides on afresh, whereas as a child it
//! follows the producer's sampling decision like the first attempt. The cost:
//! a trace stays open while its task retries. A producer in Rust passes its
//! current span's context with [`current_traceparent`]:
//!
//! ```ignore
//! let options = EnqueueOptions::new();
//! let options = match spool_runtime::otel::current_traceparent() {
//!     Some(tp) => options.traceparent(tp),
//!     None => options,
//! };
//! client.enqueue_with(job, options).await?;
//! ```

pub use opentelemetry;
pub use tracing_opentelemetry;
pub use tracing_opentelemetry::{layer, OpenTelemetryLayer};

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry::Context;
use spool_core::TraceParent;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The current span's OpenTelemetry context as a W3C `traceparent`, to give
/// a task at enqueue ([`crate::EnqueueOptions::traceparent`],
/// `NewTask::traceparent`) so that its runs join this trace. `None` when
/// the current span has no valid OpenTelemetry context (no span, or no
/// OpenTelemetry layer).
pub fn current_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| {
        let flags = sc.trace_flags() & TraceFlags::SAMPLED;
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            flags.to_u8()
        )
    })
}

/// Makes `traceparent` (a task's, valid since its enqueue) the parent of
/// `span`, which must not have been entered yet. Does nothing when no
/// OpenTelemetry layer records the span.
pub(crate) fn join(span: &tracing::Span, traceparent: &str) {
    let Ok(tp) = TraceParent::parse(traceparent) else {
        return;
    };
    let (Ok(trace_id), Ok(span_id)) = (
        TraceId::from_hex(tp.trace_id),
        SpanId::from_hex(tp.parent_id),
    ) else {
        return;
    };
    let flags = TraceFlags::new(tp.flags) & TraceFlags::SAMPLED;
    let remote = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    // Fails only without an OpenTelemetry layer, or once the span has
    // started: neither has a trace to join.
    let _ = span.set_parent(Context::new().with_remote_span_context(remote));
}
