//! What Spool's benchmarks share; the benchmarks themselves are the
//! binaries in `src/bin` (docs/BENCHMARKS.md has their commands and
//! figures):
//! - `throughput`: the runtime on the embedded engine;
//! - `steady`: producers and a worker pool on PostgreSQL;
//! - `drain`, `horizon`, `snapshot`: the PostgreSQL store, the first two
//!   beside a hand-written SKIP LOCKED queue.
//!
//! The library is the PostgreSQL side's common ground: how a benchmark
//! reaches the database ([`db`]) and opens Spool's store on it
//! ([`store`]), the hand-written queue it runs beside Spool
//! ([`handwritten`]), what holds the xmin horizon ([`holder`]) and
//! how large a system's tables are ([`tables`]).
//!
//! A benchmark whose database goes away or whose store fails has nothing
//! left to measure: it stops there, with a panic saying why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod db;
pub mod handwritten;
pub mod holder;
pub mod store;
pub mod tables;
