//! A failed write or fdatasync poisons the log: that batch and every later
//! one fail, nothing is retried, and nothing of the failed batch comes back.

use std::sync::mpsc;
use std::sync::Arc;

use spool_wal::{CrashMode, FaultyFs, Fs, SnapshotWriter, Wal, WalError};

use crate::common::*;

/// Submits two batches back to back after arming a fault; returns both outcomes.
fn fail_two(log: &mut Log) -> (Result<(), WalError>, Result<(), WalError>) {
    let (first, first_recs) = make_batch(log.next_lsn, 0, &[50, 60]);
    let (second, _) = make_batch(log.next_lsn + first_recs.len() as u64, 0, &[70]);
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    log.writer
        .submit(first, Box::new(move |r| tx.send((1, r)).unwrap()));
    log.writer
        .submit(second, Box::new(move |r| tx2.send((2, r)).unwrap()));
    let (a, b) = (rx.recv().unwrap(), rx.recv().unwrap());
    assert_eq!((a.0, b.0), (1, 2), "outcomes arrive in submission order");
    (a.1, b.1)
}

fn assert_poisoned_and_nothing_lost(disk: &FaultyFs, fs: &Arc<dyn Fs>, log: Log) {
    assert!(log.writer.is_poisoned());
    let acked = log.acked.clone();
    // Checkpoints are refused too: one could hold state the log lost.
    let snap = SnapshotWriter::create(Arc::clone(fs), &data_dir(), log.next_lsn)
        .unwrap()
        .finish()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    log.writer
        .submit_snapshot(snap, Box::new(move |r| tx.send(r).unwrap()));
    assert!(matches!(rx.recv().unwrap(), Err(WalError::Poisoned)));
    assert!(matches!(log.writer.shutdown(), Err(WalError::Poisoned)));

    disk.crash_with(CrashMode::DropUnsynced);
    let mut wal = Wal::open(Arc::clone(fs), config(&data_dir())).unwrap();
    let (_, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(replayed, acked);
}

#[test]
fn eio_on_write_fails_that_batch_and_every_later_one() {
    let (disk, fs) = faulty(30);
    let (mut log, _) = Log::start(&fs, config(&data_dir()));
    log.write_many(3);
    disk.fail_write_after(0);
    let (first, second) = fail_two(&mut log);
    let err = first.unwrap_err();
    assert_eq!(err.code(), "io", "{err}");
    assert!(matches!(second, Err(WalError::Poisoned)));
    // Even much later, with the disk healthy again.
    assert!(matches!(log.write(&[1]), Err(WalError::Poisoned)));
    assert_poisoned_and_nothing_lost(&disk, &fs, log);
}

#[test]
fn eio_on_fdatasync_is_never_retried() {
    let (disk, fs) = faulty(31);
    let (mut log, _) = Log::start(&fs, config(&data_dir()));
    log.write_many(3);
    disk.fail_sync_after(0);
    let (first, second) = fail_two(&mut log);
    match first.unwrap_err() {
        WalError::Io { op, source, .. } => {
            assert_eq!(op, "fdatasync");
            assert_eq!(source.raw_os_error(), Some(5));
        }
        other => panic!("expected an I/O error, got {other}"),
    }
    assert!(matches!(second, Err(WalError::Poisoned)));
    assert_poisoned_and_nothing_lost(&disk, &fs, log);
}

#[test]
fn enospc_at_rollover_poisons() {
    let (disk, fs) = faulty(32);
    let (mut log, _) = Log::start(&fs, config(&data_dir()));
    log.write(&[100]).unwrap();
    // Room for the active segment but not for another one.
    disk.set_capacity(Some(SEGMENT + 4096));
    let result = loop {
        match log.write(&[1000]) {
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    match result {
        WalError::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(28)),
        other => panic!("expected ENOSPC, got {other}"),
    }
    disk.set_capacity(None);
    assert_poisoned_and_nothing_lost(&disk, &fs, log);
}
