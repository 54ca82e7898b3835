//! Spool's write-ahead log. It knows nothing of tasks: records are opaque
//! bodies with a caller-chosen kind byte.
//!
//! What it is:
//! - a log of CRC32C-checked records with strictly consecutive LSNs
//!   ([`record`](RecordRef)), in preallocated segment files under `wal/`;
//! - group commit: the caller fills a [`BatchBuffer`], the WAL thread
//!   ([`WalWriter`]) writes it with one `write` and one `fdatasync`; a
//!   failed write or sync poisons the log for good;
//! - recovery ([`Wal::open`], [`Wal::replay`], [`Wal::start_writer`]) that
//!   drops a torn tail (never acknowledged) and refuses damage to
//!   acknowledged data unless [`RecoveryMode::Force`];
//! - checkpoint files ([`SnapshotWriter`], [`SnapshotReader`]) and the
//!   deletion of segments they make unnecessary;
//! - [`check`], an offline verifier for `spool check`;
//! - the [`Fs`] seam with [`StdFs`] and, for tests (feature `test-support`),
//!   the crash-simulating `FaultyFs`.
//!
//! Where to start reading: `scan.rs` (torn versus corrupt), then
//! `writer/thread.rs` (what one batch costs), then `wal.rs` (the lifecycle).

mod batch;
mod bytes;
mod catalog;
mod check;
mod config;
mod decode;
mod error;
mod fs;
mod layout;
mod meta;
mod position;
mod reader;
mod record;
mod repair;
mod replay;
mod scan;
mod segment;
mod snapshot;
mod wal;
mod writer;

pub use batch::BatchBuffer;
pub use catalog::Corruption;
pub use check::{check, CheckReport, FileCheck, FileStatus};
pub use config::{RecoveryMode, WalConfig, DEFAULT_SEGMENT_SIZE};
pub use decode::{decode_segment, SegmentDecode, SegmentEnd};
pub use error::WalError;
#[cfg(feature = "test-support")]
pub use fs::{CrashMode, FaultyFs};
pub use fs::{Fs, FsFile, FsLock, StdFs};
pub use position::LogPos;
pub use reader::SegmentReader;
pub use record::{RecordRef, MAX_RECORD_LEN, RECORD_BATCH};
pub use replay::{ReplaySummary, TornTail};
pub use segment::SegmentHeader;
pub use snapshot::{PendingSnapshot, SnapshotReader, SnapshotWriter, MAX_CHUNK_LEN};
pub use wal::{ReplayExtent, Wal};
pub use writer::{Done, WalWriter};
