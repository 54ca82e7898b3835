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

pub use opentelemetry;
pub use tracing_opentelemetry;
pub use tracing_opentelemetry::{layer, OpenTelemetryLayer};
