//! Integration tests of the write-ahead log, one binary (link once), one
//! module per claim.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod corruption;
mod crash_loop;
mod decode_props;
mod io_errors;
mod lock;
mod offline_check;
mod round_trip;
mod snapshots;
mod torn_tail;
