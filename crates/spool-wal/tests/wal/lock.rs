//! One opener per data directory: the second gets `Locked` while the first
//! (or the writer it became) is alive.

use std::sync::Arc;

use spool_wal::{Fs, StdFs, Wal, WalError};

use crate::common::*;

fn second_open_is_locked_while_the_first_lives(fs: Arc<dyn Fs>, dir: &std::path::Path) {
    let first = Wal::open(Arc::clone(&fs), config(dir)).unwrap();
    let err = Wal::open(Arc::clone(&fs), config(dir)).unwrap_err();
    assert!(matches!(err, WalError::Locked { .. }), "{err}");
    // Read-only opens take no lock.
    Wal::open_read_only(Arc::clone(&fs), config(dir)).unwrap();

    let writer = first.start_writer().unwrap();
    let err = Wal::open(Arc::clone(&fs), config(dir)).unwrap_err();
    assert_eq!(err.code(), "locked");
    writer.shutdown().unwrap();

    Wal::open(fs, config(dir)).unwrap();
}

#[test]
fn a_second_open_is_locked_out_on_faulty_fs() {
    let (_disk, fs) = faulty(40);
    second_open_is_locked_while_the_first_lives(fs, &data_dir());
}

#[test]
fn a_second_open_is_locked_out_by_a_real_flock() {
    let tmp = tempfile::tempdir().unwrap();
    second_open_is_locked_while_the_first_lives(Arc::new(StdFs), &tmp.path().join("data"));
}
