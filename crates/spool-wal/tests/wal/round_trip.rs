//! Acknowledged batches come back exactly, across crashes, reopenings and
//! segment rollovers.

use std::sync::Arc;

use spool_wal::{CrashMode, Fs, StdFs, Wal, WalConfig, WalError};

use crate::common::*;

#[test]
fn acknowledged_records_survive_a_crash_across_many_segments() {
    let (disk, fs) = faulty(1);
    let dir = data_dir();
    let (mut log, summary) = Log::start(&fs, config(&dir));
    assert_eq!(summary.last_lsn, 0);
    log.write_many(150);
    assert!(
        log.writer.recycled_buffer().is_some(),
        "buffers come back for reuse"
    );
    let written = log.acked.clone();
    // No shutdown: power is cut right after the last acknowledgement.
    drop(log);
    disk.crash_with(CrashMode::DropUnsynced);

    let segment_count = segments(&*fs, &dir).len();
    assert!(segment_count >= 4, "only {segment_count} segments");
    let mut wal = Wal::open(Arc::clone(&fs), config(&dir)).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(replayed, written);
    assert_eq!(summary.last_lsn, written.last().unwrap().0);
    assert_eq!(summary.records, written.len() as u64);
    assert_eq!(summary.last_batch_clock, Some(1_700_000_000_150));
    assert_eq!(summary.torn_tail, None);
    drop(wal);

    // LSNs continue after reopening, and both parts read back.
    let (mut log, _) = Log::start(&fs, config(&dir));
    let more = log.write(&[10, 20]).unwrap();
    assert_eq!(more[0].0, summary.last_lsn + 1);
    log.write_many(20);
    let all = log.acked.clone();
    log.writer.shutdown().unwrap();
    let mut wal = Wal::open(Arc::clone(&fs), config(&dir)).unwrap();
    assert_eq!(replay(&mut wal, 1).unwrap().1, all);
}

#[test]
fn replay_from_an_lsn_yields_only_what_follows_it() {
    let (_disk, fs) = faulty(2);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(80);
    let written = log.acked.clone();
    log.writer.shutdown().unwrap();

    let from = written[written.len() / 2].0;
    let mut wal = Wal::open(fs, config(&dir)).unwrap();
    let (summary, replayed) = replay(&mut wal, from).unwrap();
    assert_eq!(replayed, written[written.len() / 2..]);
    assert_eq!(summary.records, replayed.len() as u64);
}

#[test]
fn real_files_round_trip_with_real_fdatasync() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Arc<dyn Fs> = Arc::new(StdFs);
    let dir = tmp.path().join("data");
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(60);
    let written = log.acked.clone();
    log.writer.shutdown().unwrap();
    assert!(segments(&*fs, &dir).len() >= 2);

    let mut wal = Wal::open(fs, config(&dir)).unwrap();
    assert_eq!(replay(&mut wal, 1).unwrap().1, written);
}

#[test]
fn a_batch_larger_than_a_segment_gets_a_segment_of_its_own() {
    let (disk, fs) = faulty(3);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write(&[100]).unwrap();
    log.write(&[3 * SEGMENT as usize]).unwrap();
    log.write(&[100]).unwrap();
    let written = log.acked.clone();
    drop(log);
    disk.crash_with(CrashMode::DropUnsynced);

    let mut wal = Wal::open(fs, config(&dir)).unwrap();
    assert_eq!(replay(&mut wal, 1).unwrap().1, written);
}

#[test]
fn a_batch_that_does_not_continue_the_log_is_refused_without_harm() {
    let (_disk, fs) = faulty(4);
    let (mut log, _) = Log::start(&fs, config(&data_dir()));
    log.write(&[5]).unwrap();
    let (gap, _) = make_batch(log.next_lsn + 1, 0, &[5]);
    let err = commit(&log.writer, gap).unwrap_err();
    assert!(
        matches!(err, WalError::OutOfOrder { expected, found } if found == expected + 1),
        "{err}"
    );
    assert!(!log.writer.is_poisoned());
    log.write(&[5]).unwrap();
    let written = log.acked.clone();
    log.writer.shutdown().unwrap();

    let mut wal = Wal::open(fs, config(&data_dir())).unwrap();
    assert_eq!(replay(&mut wal, 1).unwrap().1, written);
}

#[test]
fn an_oversized_record_is_refused_before_it_reaches_the_disk() {
    let (_disk, fs) = faulty(5);
    let (mut log, _) = Log::start(&fs, config(&data_dir()));
    let (batch, _) = make_batch(log.next_lsn, 0, &[spool_wal::MAX_RECORD_LEN + 1]);
    let err = commit(&log.writer, batch).unwrap_err();
    assert_eq!(err.code(), "too_large");
    log.write(&[5]).unwrap();
    log.writer.shutdown().unwrap();
}

#[test]
fn replaying_from_before_the_oldest_segment_is_a_gap() {
    let (_disk, fs) = faulty(6);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write(&[5]).unwrap();
    log.writer.shutdown().unwrap();
    let mut wal = Wal::open(fs, WalConfig::new(&dir)).unwrap();
    let err = replay(&mut wal, 10).unwrap_err();
    assert_eq!(err.code(), "gap", "{err}");
}
