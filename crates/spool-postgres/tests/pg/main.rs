//! Integration tests of the PostgreSQL store, one binary (link once), one
//! module per claim. Every test uses a schema of its own on the server at
//! `DATABASE_URL` (`common`).
//!
//! `restart` is ignored by default and runs alone:
//! `cargo test -p spool-postgres --test pg restart:: -- --ignored --test-threads=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod ack_race;
mod conformance;
mod deps;
mod early_release;
mod groups;
mod held_horizon;
mod limits;
mod migrate;
mod parked;
mod queues;
mod restart;
mod rotation;
mod stats_cache;
mod tls;
mod transactional;
mod vacuum;
mod wakeups;
