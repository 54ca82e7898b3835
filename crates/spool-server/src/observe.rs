//! Per-request logs and metrics.
//!
//! Every request gets a `tracing` span (method, route) and, when it ends, a
//! count and a latency sample labelled by route template (never by raw path,
//! whose ids would make unbounded label sets) and by a bounded method label. Successes and client errors
//! log at debug level so a busy server does not drown its log; server errors
//! are logged where they are made ([`crate::error`]).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::metrics::{method_label, HTTP_DURATION, HTTP_REQUESTS};

/// Middleware: logs and measures one request.
pub(crate) async fn observe(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let span = tracing::debug_span!("request", %method, route = %route);
    let res = next.run(req).instrument(span.clone()).await;
    let status = res.status().as_u16();
    let elapsed = start.elapsed();
    span.in_scope(|| tracing::debug!(status, elapsed_ms = elapsed.as_millis() as u64, "answered"));
    metrics::counter!(
        HTTP_REQUESTS,
        "method" => method_label(&method),
        "route" => route.clone(),
        "status" => status.to_string()
    )
    .increment(1);
    metrics::histogram!(HTTP_DURATION, "route" => route).record(elapsed.as_secs_f64());
    res
}
