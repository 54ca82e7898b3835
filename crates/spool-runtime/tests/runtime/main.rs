//! The runtime against real stores: the embedded engine in a temporary
//! directory, and a real server on port 0 through `RemoteStore`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod batch;
mod cancel;
mod crash;
mod deadlines;
mod deps;
mod flaky;
mod limits;
#[cfg(feature = "otel")]
mod otel;
mod outcomes;
mod pause;
mod paused;
mod remote;
mod schedules;
mod shutdown;
mod workflow_jobs;
