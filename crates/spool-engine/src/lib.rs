//! Spool's embedded store: one process, a data directory, no server.
//!
//! The shape (see ARCHITECTURE.md and the design notes in docs/):
//! - [`Engine`] is a handle; every request becomes a job for the **core
//!   thread** (module `core`), which alone owns the in-memory state (module
//!   `state`): a 40-byte record per task in pages addressed by id, per-queue
//!   ready indexes in claim order, timer sets for run_at and lease expiry,
//!   idempotency keys. Payloads are not in memory: they stay in the log
//!   segment that wrote them, and the handle reads them back by position.
//! - The core turns each change into an absolute `ops::Op`, encodes it into
//!   the open group-commit batch and applies it to memory. The WAL thread
//!   (crate `spool-wal`) writes and `fdatasync`s one batch at a time; replies
//!   wait until what they saw is durable.
//! - Checkpoints (`core::checkpoint`) copy state, in the format of module
//!   `snapshot`, while writes continue; module `recovery` loads the newest
//!   one and replays the log after it.
//!
//! What it is not: a cache. Every acknowledged change is on disk.

mod backoff;
mod check;
mod codec;
mod config;
mod core;
mod engine;
mod error;
mod ops;
mod payload_runs;
mod recovery;
mod snapshot;
mod state;

pub use check::{check, CheckReport};
pub use codec::DecodeError;
pub use config::EngineConfig;
pub use engine::Engine;
pub use error::EngineError;
pub use spool_wal::{Fs, RecoveryMode, StdFs, WalError};
