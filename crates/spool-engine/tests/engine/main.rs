//! Integration tests of the embedded engine, one binary (link once), one
//! module per claim. `kill9` and `kind_counts` stay binaries of their own
//! (each says why).
//!
//! `model`'s proptest regressions are in `tests/proptest-regressions/model.txt`,
//! where proptest looks for the seeds of a test beside a `main.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod check;
mod checkpoint;
mod conformance;
mod disk_full;
mod faults;
mod faults_workflows;
mod log_limits;
mod model;
mod payloads;
mod retry;
mod schedules;
