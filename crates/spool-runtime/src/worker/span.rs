//! The tracing span of a run: `spool.run` with the task's id, queue, kind
//! and attempt, and its outcome once known. With the `otel` feature it also
//! carries the OpenTelemetry messaging attributes, so an exporter shows it
//! as a consumer span named `process <queue>`, and a task's traceparent is
//! its parent ([`crate::otel`] says why for every attempt).

use spool_core::Task;
use tracing::field::Empty;
use tracing::Span;

#[cfg(not(feature = "otel"))]
pub(crate) fn for_run(task: &Task) -> Span {
    tracing::info_span!(
        "spool.run",
        task.id = task.id.0,
        queue = %task.queue,
        kind = %task.kind,
        attempt = task.attempt,
        outcome = Empty,
    )
}

#[cfg(feature = "otel")]
pub(crate) fn for_run(task: &Task) -> Span {
    let span = tracing::info_span!(
        "spool.run",
        task.id = task.id.0,
        queue = %task.queue,
        kind = %task.kind,
        attempt = task.attempt,
        outcome = Empty,
        otel.name = %format_args!("process {}", task.queue),
        otel.kind = "consumer",
        otel.status_code = Empty,
        messaging.system = "spool",
        messaging.operation.type = "process",
        messaging.destination.name = %task.queue,
        messaging.message.id = %task.id,
    );
    if let Some(traceparent) = &task.traceparent {
        crate::otel::join(&span, traceparent);
    }
    span
}

/// Records how the current run ended: ok, failed, snoozed or released.
pub(crate) fn outcome(outcome: &'static str) {
    let span = Span::current();
    span.record("outcome", outcome);
    #[cfg(feature = "otel")]
    span.record(
        "otel.status_code",
        if outcome == "failed" { "error" } else { "ok" },
    );
}
