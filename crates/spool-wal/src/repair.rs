//! What `start_writer` does to the directory before writing: the only place
//! recovery changes files.
//!
//! In order, each step made durable before the next:
//! 1. delete unused trailing segments and, under Force, every segment from
//!    the damage on;
//! 2. truncate the newest kept segment to its valid records (a torn tail or
//!    preallocated zeros), fsync — writing resumes right after them, and no
//!    byte of a torn batch may remain for a later scan to mistake for a
//!    record;
//! 3. set damaged checkpoints aside as `*.snap.corrupt`, delete unpublished
//!    `*.snap.tmp`.
//!
//! The caller then resumes the newest segment.

use std::io;

use tracing::warn;

use crate::catalog::Catalog;
use crate::error::{io_err, WalError};
use crate::fs::{remove_if_present, Fs};
use crate::layout::{is_snapshot_tmp, Layout};
use crate::replay::LogEnd;

pub(crate) fn repair(
    fs: &dyn Fs,
    layout: &Layout,
    catalog: &Catalog,
    end: &LogEnd,
    corrupt_snapshots: &[u64],
) -> Result<(), WalError> {
    let wal_dir = layout.wal_dir();
    let dropped = catalog
        .discard
        .iter()
        .chain(catalog.segments[end.drop_from..].iter().map(|s| &s.path));
    let mut removed = false;
    for path in dropped {
        warn!(file = %path.display(), "deleting a segment recovery dropped");
        remove_if_present(fs, path)?;
        removed = true;
    }
    if removed {
        fs.sync_dir(&wal_dir)
            .map_err(io_err("fsync dir", &wal_dir))?;
    }

    if let Some((index, keep)) = end.keep {
        let path = &catalog.segments[index].path;
        let file = fs.open(path).map_err(io_err("open", path))?;
        if file.len().map_err(io_err("stat", path))? != keep {
            file.set_len(keep).map_err(io_err("truncate", path))?;
            file.sync_all().map_err(io_err("fsync", path))?;
        }
    }

    let snap_dir = layout.snap_dir();
    let mut changed = false;
    for &lsn in corrupt_snapshots {
        let (path, aside) = (layout.snapshot(lsn), layout.snapshot_corrupt(lsn));
        warn!(file = %path.display(), "setting a damaged checkpoint aside");
        match fs.rename(&path, &aside) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io_err("rename", &path)(e));
            }
            _ => changed = true,
        }
    }
    let names = fs.list(&snap_dir).map_err(io_err("list", &snap_dir))?;
    for name in names.iter().filter(|n| is_snapshot_tmp(n)) {
        remove_if_present(fs, &snap_dir.join(name))?;
        changed = true;
    }
    if changed {
        fs.sync_dir(&snap_dir)
            .map_err(io_err("fsync dir", &snap_dir))?;
    }
    Ok(())
}
