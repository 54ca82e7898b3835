//! Damage to acknowledged data: strict recovery refuses, naming file and
//! byte offset; forced recovery drops everything from the damage on and
//! the log continues from there.

use std::sync::Arc;

use spool_wal::{Corruption, RecoveryMode, Wal, WalConfig, WalError};

use crate::common::*;

fn forced(cfg: WalConfig) -> WalConfig {
    WalConfig {
        recovery: RecoveryMode::Force,
        ..cfg
    }
}

fn expect_corrupt(err: WalError) -> (std::path::PathBuf, u64, String) {
    match err {
        WalError::Corrupt {
            file,
            offset,
            reason,
        } => (file, offset, reason),
        other => panic!("expected Corrupt, got {other}"),
    }
}

#[test]
fn a_bit_flip_in_an_old_segment_is_refused_then_forced_past() {
    let (disk, fs) = faulty(20);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(150);
    let written = log.acked.clone();
    log.writer.shutdown().unwrap();
    let segs = segments(&*fs, &dir);
    assert!(segs.len() >= 4);

    let offsets = record_offsets(&read_file(&*fs, &segs[0]));
    let k = offsets.len() / 2;
    disk.flip_bit(&segs[0], offsets[k] as u64 + 20, 3).unwrap();

    let mut wal = Wal::open(Arc::clone(&fs), config(&dir)).unwrap();
    let (file, offset, reason) = expect_corrupt(replay(&mut wal, 1).unwrap_err());
    assert_eq!((file, offset), (segs[0].clone(), offsets[k] as u64));
    assert!(reason.contains("checksum"), "{reason}");
    drop(wal);

    let mut wal = Wal::open(Arc::clone(&fs), forced(config(&dir))).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(replayed, written[..k]);
    assert_eq!(summary.last_lsn, written[k - 1].0);
    let damage = summary.forced.unwrap();
    assert_eq!(
        (damage.file, damage.offset),
        (segs[0].clone(), offsets[k] as u64)
    );
    drop(wal);

    // Forced start: later segments are gone, the log continues after the cut.
    let (mut log, _) = Log::start(&fs, forced(config(&dir)));
    assert_eq!(segments(&*fs, &dir).len(), 2);
    log.write_many(10);
    let all = log.acked.clone();
    log.writer.shutdown().unwrap();
    let mut wal = Wal::open(fs, config(&dir)).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!((summary.forced, summary.torn_tail), (None, None));
    assert_eq!(replayed, all);
    assert_eq!(&replayed[..k], &written[..k]);
}

#[test]
fn a_bit_flip_before_a_later_batch_in_the_newest_segment_is_corruption() {
    let (disk, fs) = faulty(21);
    let dir = data_dir();
    let cfg = WalConfig {
        segment_size: 1 << 20,
        ..config(&dir)
    };
    let (mut log, _) = Log::start(&fs, cfg.clone());
    log.write_many(6);
    let written = log.acked.clone();
    log.writer.shutdown().unwrap();
    let segs = segments(&*fs, &dir);
    assert_eq!(segs.len(), 1);
    let offsets = record_offsets(&read_file(&*fs, &segs[0]));

    // Records 0-1 are batch 1; 2 is batch 2's marker, 3 its first record.
    disk.flip_bit(&segs[0], offsets[3] as u64 + 25, 0).unwrap();
    let mut wal = Wal::open(Arc::clone(&fs), cfg.clone()).unwrap();
    let (file, offset, reason) = expect_corrupt(replay(&mut wal, 1).unwrap_err());
    assert_eq!((file, offset), (segs[0].clone(), offsets[3] as u64));
    assert!(reason.contains("batch marker"), "{reason}");
    drop(wal);

    let mut wal = Wal::open(Arc::clone(&fs), forced(cfg.clone())).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(replayed, written[..3]);
    assert_eq!(
        summary.forced,
        Some(Corruption {
            file: segs[0].clone(),
            offset: offsets[3] as u64,
            reason,
        })
    );
}

#[test]
fn damage_in_the_final_batch_cannot_be_told_from_a_tear_and_is_dropped() {
    let (disk, fs) = faulty(22);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(3);
    let written = log.acked.clone();
    log.writer.shutdown().unwrap();
    let seg = segments(&*fs, &dir).pop().unwrap();
    let offsets = record_offsets(&read_file(&*fs, &seg));
    let last = offsets.len() - 1;
    disk.flip_bit(&seg, offsets[last] as u64 + 30, 1).unwrap();

    let mut wal = Wal::open(fs, config(&dir)).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(replayed, written[..last]);
    assert_eq!(summary.torn_tail.unwrap().offset, offsets[last] as u64);
}

#[test]
fn a_missing_middle_segment_is_fatal_unless_forced() {
    let (_disk, fs) = faulty(23);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(150);
    log.writer.shutdown().unwrap();
    let segs = segments(&*fs, &dir);
    let first_segment_records = record_offsets(&read_file(&*fs, &segs[0])).len();
    fs.remove(&segs[1]).unwrap();

    let (file, offset, reason) =
        expect_corrupt(Wal::open(Arc::clone(&fs), config(&dir)).unwrap_err());
    assert_eq!((file, offset), (segs[2].clone(), 0));
    assert!(reason.contains("missing"), "{reason}");

    let mut wal = Wal::open(fs, forced(config(&dir))).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(replayed.len(), first_segment_records);
    assert_eq!(summary.forced.unwrap().file, segs[2]);
}

#[test]
fn a_damaged_header_of_a_middle_segment_is_fatal() {
    let (disk, fs) = faulty(24);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(150);
    log.writer.shutdown().unwrap();
    let segs = segments(&*fs, &dir);
    disk.flip_bit(&segs[1], 13, 0).unwrap();

    let (file, offset, reason) = expect_corrupt(Wal::open(fs, config(&dir)).unwrap_err());
    assert_eq!((file, offset), (segs[1].clone(), 0));
    assert!(reason.contains("header"), "{reason}");
}
