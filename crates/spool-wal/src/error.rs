//! The log's errors, each with a stable machine-readable [`WalError::code`].
//!
//! Codes are API (the server and `spool check` print them), so they never
//! change; messages may.

use std::io;
use std::path::{Path, PathBuf};

use crate::position::LogPos;

/// Everything that can go wrong in the log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// A file-system call failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// The operation, e.g. `"fdatasync"`.
        op: &'static str,
        /// The file or directory it was called on.
        path: PathBuf,
        /// What the operating system answered.
        #[source]
        source: io::Error,
    },
    /// Another process (or another `Wal` in this one) holds the data directory.
    #[error("data directory is locked by another process ({})", path.display())]
    Locked {
        /// The `LOCK` file whose lock is held.
        path: PathBuf,
    },
    /// Acknowledged data is damaged: bytes that were synced no longer decode.
    #[error("corrupt data in {} at byte {offset}: {reason}", file.display())]
    Corrupt {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset of the damage in that file.
        offset: u64,
        /// What does not decode, for the operator.
        reason: String,
    },
    /// An earlier write or sync failed; the log accepts nothing more.
    #[error("the log stopped after a failed write or sync and accepts no more writes")]
    Poisoned,
    /// `META` is missing where it must exist, or unreadable.
    #[error("bad META file {}: {reason}", path.display())]
    BadMeta {
        /// Where `META` is expected.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// The replay callback refused a record.
    #[error("replay stopped: applying a record failed: {0}")]
    Apply(String),
    /// A batch does not continue the log's LSN sequence.
    #[error("batch starts at lsn {found}, but the log's next lsn is {expected}")]
    OutOfOrder {
        /// The log's next lsn: its last record's + 1.
        expected: u64,
        /// The batch's first lsn.
        found: u64,
    },
    /// A record or snapshot chunk is over its size limit.
    #[error("{what} of {len} bytes is over the {max}-byte limit")]
    TooLarge {
        /// `record` or `snapshot chunk`.
        what: &'static str,
        /// Its size in bytes.
        len: usize,
        /// The limit in bytes: [`MAX_RECORD_LEN`](crate::MAX_RECORD_LEN) or
        /// [`MAX_CHUNK_LEN`](crate::MAX_CHUNK_LEN).
        max: usize,
    },
    /// A batch expected to land elsewhere than where the log ends.
    #[error("a batch placed at {expected:?} would be written at {found:?}")]
    Misplaced {
        /// Where the caller placed the batch (and points at its bytes).
        expected: LogPos,
        /// Where [`LogPos::place`] puts it at the log's end.
        found: LogPos,
    },
    /// The log does not hold the records a replay asked for.
    #[error("cannot replay from lsn {from_lsn}: {reason}")]
    Gap {
        /// The first lsn the replay asked for.
        from_lsn: u64,
        /// Why the log cannot supply it.
        reason: String,
    },
    /// The operation writes, but the log was opened read-only.
    #[error("the log was opened read-only")]
    ReadOnly,
    /// The WAL thread died (it panicked); nothing more can be written.
    #[error("the WAL thread is gone")]
    WriterGone,
}

impl WalError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            WalError::Io { .. } => "io",
            WalError::Locked { .. } => "locked",
            WalError::Corrupt { .. } => "corrupt",
            WalError::Poisoned => "poisoned",
            WalError::BadMeta { .. } => "bad_meta",
            WalError::Apply(_) => "apply",
            WalError::OutOfOrder { .. } => "out_of_order",
            WalError::TooLarge { .. } => "too_large",
            WalError::Misplaced { .. } => "misplaced",
            WalError::Gap { .. } => "gap",
            WalError::ReadOnly => "read_only",
            WalError::WriterGone => "writer_gone",
        }
    }

    pub(crate) fn corrupt(file: &Path, offset: u64, reason: impl Into<String>) -> WalError {
        WalError::Corrupt {
            file: file.to_path_buf(),
            offset,
            reason: reason.into(),
        }
    }
}

/// `map_err` adapter naming the failed operation and its file.
pub(crate) fn io_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> WalError + 'a {
    move |source| WalError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(WalError::Poisoned.code(), "poisoned");
        assert_eq!(WalError::corrupt(Path::new("x"), 3, "r").code(), "corrupt");
        assert_eq!(WalError::Apply("x".into()).code(), "apply");
        assert_eq!(
            io_err("write", Path::new("f"))(io::Error::other("boom")).code(),
            "io"
        );
    }
}
