//! `check()`: the offline verdict on a data directory — clean, torn tail,
//! corruption — with per-file statistics, and no panic on garbage.

use std::path::Path;
use std::sync::Arc;

use spool_wal::{check, CrashMode, FileStatus, SnapshotWriter};

use crate::common::*;

#[test]
fn a_clean_directory_is_reported_clean_with_its_statistics() {
    let (_disk, fs) = faulty(70);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(100);
    let mut snap = SnapshotWriter::create(Arc::clone(&fs), &dir, log.next_lsn).unwrap();
    snap.append_chunk(b"chunk").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    log.writer.submit_snapshot(
        snap.finish().unwrap(),
        Box::new(move |r| tx.send(r).unwrap()),
    );
    rx.recv().unwrap().unwrap();
    let acked = log.acked.clone();
    log.writer.shutdown().unwrap();

    let report = check(Arc::clone(&fs), &dir).unwrap();
    assert!(report.is_clean(), "{report}");
    assert!(!report.has_corruption());
    assert!(report.instance.is_some());
    assert!(report.segments.len() >= 2);
    let records: u64 = report.segments.iter().map(|s| s.records).sum();
    assert_eq!(records, acked.len() as u64);
    let batches: u64 = report.segments.iter().map(|s| s.batches).sum();
    assert_eq!(batches, 100);
    assert_eq!(
        report.segments.iter().filter_map(|s| s.last_lsn).max(),
        Some(acked.last().unwrap().0)
    );
    assert_eq!(report.snapshots.len(), 1);
    assert_eq!(report.snapshots[0].records, 1);
    assert!(report.to_string().contains("verdict: clean"));
}

#[test]
fn a_torn_tail_is_reported_but_is_not_corruption() {
    let (disk, fs) = faulty(71);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(5);
    let (batch, _) = make_batch(log.next_lsn, 0, &[300]);
    let len = batch.byte_len();
    disk.fail_sync_after(0);
    assert!(commit(&log.writer, batch).is_err());
    drop(log);
    disk.crash_with(CrashMode::KeepPrefix(len - 10));

    let report = check(fs, &dir).unwrap();
    assert!(!report.is_clean());
    assert!(!report.has_corruption(), "{report}");
    let torn = report.torn_tail().unwrap();
    assert!(matches!(torn.status, FileStatus::TornTail { bytes_dropped, .. } if bytes_dropped > 0));
}

#[test]
fn corruption_is_reported_with_file_and_offset() {
    let (disk, fs) = faulty(72);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(150);
    log.writer.shutdown().unwrap();
    let segs = segments(&*fs, &dir);
    let offsets = record_offsets(&read_file(&*fs, &segs[0]));
    disk.flip_bit(&segs[0], offsets[4] as u64 + 19, 5).unwrap();

    let report = check(fs, &dir).unwrap();
    assert!(report.has_corruption());
    assert_eq!(report.segments[0].records, 4);
    assert!(
        matches!(&report.segments[0].status, FileStatus::Corrupt { offset, .. } if *offset == offsets[4] as u64),
        "{report}"
    );
    assert!(report.to_string().contains("CORRUPT"));
}

#[test]
fn garbage_everywhere_is_reported_not_panicked_on() {
    let (_disk, fs) = faulty(73);
    let dir = data_dir();
    for sub in ["wal", "snap"] {
        fs.create_dir_all(&dir.join(sub)).unwrap();
    }
    let junk = |path: &Path, len: usize| {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
        fs.create(path).unwrap().write_all_at(&bytes, 0).unwrap();
    };
    junk(&dir.join("META"), 32);
    junk(&dir.join("wal/00000000000000000001.wal"), 5000);
    junk(&dir.join("wal/00000000000000000002.wal"), 10);
    junk(&dir.join("snap/00000000000000000009.snap"), 3000);

    let report = check(fs, &dir).unwrap();
    assert!(report.has_corruption());
    assert!(matches!(report.meta, FileStatus::Corrupt { .. }));
    assert!(matches!(
        report.snapshots[0].status,
        FileStatus::Corrupt { .. }
    ));
    assert_eq!(report.segments.len(), 2);
}
