//! The Store conformance suite: every guarantee of docs/spec.md §3 (and the
//! store-level parts of §2, §4 and §7.1) as a test that runs against any
//! [`Store`](spool_core::Store).
//!
//! A store's crate runs the whole suite with one macro call, given an async
//! fn that builds a fresh, empty store:
//!
//! ```ignore
//! async fn fresh() -> Fixture {
//!     let dir = tempfile::tempdir().unwrap();
//!     let clock = Arc::new(ManualClock::starting_now());
//!     let store = MyStore::open(dir.path(), clock.clone());
//!     Fixture::new(Arc::new(store), TimeControl::Manual(clock)).keep(dir)
//! }
//! spool_testkit::conformance_suite!(fresh);
//! // A store where each call is a round trip runs the contention case smaller:
//! // spool_testkit::conformance_suite!(fresh, contention: 5_000, 20);
//! ```
//!
//! Map: [`fixture`] is what each case gets (a store and control of its
//! clock); [`cases`] holds the cases, one `pub async fn(Fixture)` per
//! behaviour, written against the trait only; [`run_case`] runs one on a
//! fresh runtime; the macros in `suite` expand to one `#[test]` per case.
//! Cases keep every duration short and compare times with tolerance, so
//! wall-clock stores (PostgreSQL, remote) pass them as well as a store on a
//! [`ManualClock`](spool_core::ManualClock).
//!
//! [`model`] is a reference model of a store, which the suite is checked
//! against (`tests/self_check.rs`) and which model-based tests of a store
//! compare it with, operation by operation.
//!
//! With the `server` feature, module `server` also offers a real server in
//! the test's process over the real engine, for the tests that talk to one.

// A test crate: a panic is how a case reports a failure, so unwrap and expect
// are the point here rather than a hazard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod arrange;
pub mod cases;
mod check;
pub mod fixture;
pub mod model;
mod runner;
#[cfg(feature = "server")]
pub mod server;
mod suite;

pub use fixture::{Fixture, TimeControl};
pub use runner::{run_case, CASE_TIMEOUT};

crate::__with_cases!(__case_names!());
