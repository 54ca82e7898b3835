//! Where each file of a data directory lives, and how names encode numbers.
//!
//! ```text
//! <dir>/LOCK                      flock'd by the one process using the directory
//! <dir>/META                      format version + instance id
//! <dir>/wal/<seq:020>.wal         log segments, seq consecutive from the oldest kept
//! <dir>/snap/<lsn:020>.snap       checkpoints; lsn = first record NOT covered
//! <dir>/snap/<lsn:020>.snap.tmp   a checkpoint being written
//! ```
//! Zero-padded names sort in numeric order; parsing accepts only exactly
//! that form, so stray files are ignored rather than misread.

use std::path::{Path, PathBuf};

const SEGMENT_EXT: &str = ".wal";
const SNAPSHOT_EXT: &str = ".snap";
const TMP_EXT: &str = ".tmp";
/// Suffix given to a snapshot found corrupt, kept for inspection.
const CORRUPT_EXT: &str = ".corrupt";

/// The paths of one data directory.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn lock_file(&self) -> PathBuf {
        self.root.join("LOCK")
    }

    pub(crate) fn meta(&self) -> PathBuf {
        self.root.join("META")
    }

    pub(crate) fn meta_tmp(&self) -> PathBuf {
        self.root.join("META.tmp")
    }

    pub(crate) fn wal_dir(&self) -> PathBuf {
        self.root.join("wal")
    }

    pub(crate) fn snap_dir(&self) -> PathBuf {
        self.root.join("snap")
    }

    pub(crate) fn segment(&self, seq: u64) -> PathBuf {
        self.wal_dir().join(format!("{seq:020}{SEGMENT_EXT}"))
    }

    pub(crate) fn snapshot(&self, start_lsn: u64) -> PathBuf {
        self.snap_dir()
            .join(format!("{start_lsn:020}{SNAPSHOT_EXT}"))
    }

    pub(crate) fn snapshot_tmp(&self, start_lsn: u64) -> PathBuf {
        self.snap_dir()
            .join(format!("{start_lsn:020}{SNAPSHOT_EXT}{TMP_EXT}"))
    }

    pub(crate) fn snapshot_corrupt(&self, start_lsn: u64) -> PathBuf {
        self.snap_dir()
            .join(format!("{start_lsn:020}{SNAPSHOT_EXT}{CORRUPT_EXT}"))
    }
}

/// `00000000000000000042.wal` → 42.
pub(crate) fn parse_segment_name(name: &str) -> Option<u64> {
    parse_number(name.strip_suffix(SEGMENT_EXT)?)
}

/// `00000000000000000042.snap` → 42.
pub(crate) fn parse_snapshot_name(name: &str) -> Option<u64> {
    parse_number(name.strip_suffix(SNAPSHOT_EXT)?)
}

/// Whether `name` is a snapshot that was never published.
pub(crate) fn is_snapshot_tmp(name: &str) -> bool {
    name.strip_suffix(TMP_EXT)
        .and_then(parse_snapshot_name)
        .is_some()
}

fn parse_number(digits: &str) -> Option<u64> {
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strays_are_ignored() {
        let layout = Layout::new(Path::new("/d"));
        let seg = layout.segment(42);
        let name = seg.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert_eq!(parse_segment_name(name), Some(42));
        assert_eq!(parse_segment_name("42.wal"), None);
        assert_eq!(parse_segment_name("0000000000000000004x.wal"), None);
        assert_eq!(parse_snapshot_name("00000000000000000007.snap"), Some(7));
        assert!(is_snapshot_tmp("00000000000000000007.snap.tmp"));
        assert!(!is_snapshot_tmp("00000000000000000007.snap"));
        assert_eq!(parse_snapshot_name("99999999999999999999.snap"), None);
    }
}
