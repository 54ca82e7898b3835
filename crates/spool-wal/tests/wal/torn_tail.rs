//! A crash in the middle of the last batch: recovery drops the torn part,
//! keeps everything acknowledged, reports it, repairs it, and the repaired
//! tail never looks like corruption later.

use std::fs::OpenOptions;
use std::sync::Arc;

use spool_wal::{CrashMode, Fs, StdFs, TornTail, Wal};

use crate::common::*;

#[test]
fn a_crash_tearing_the_unsynced_batch_drops_only_the_torn_record() {
    let (disk, fs) = faulty(10);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(5);
    let acked = log.acked.clone();

    // The last batch is written but its fdatasync fails: never acknowledged.
    let (batch, unacked) = make_batch(log.next_lsn, 0, &[100, 100, 100]);
    let len = batch.byte_len();
    disk.fail_sync_after(0);
    assert!(commit(&log.writer, batch).is_err());
    drop(log);
    // Power loss keeps all but the last 5 bytes of that write.
    disk.crash_with(CrashMode::KeepPrefix(len - 5));

    // The newest segment with a header: the one after it is the blank reserve.
    let segment = segments(&*fs, &dir)
        .into_iter()
        .rev()
        .find(|p| read_file(&*fs, p)[..64].iter().any(|&b| b != 0))
        .unwrap();
    let offsets = record_offsets(&read_file(&*fs, &segment));
    assert_eq!(offsets.len(), acked.len() + unacked.len());
    let torn_at = offsets[acked.len() + 3];

    let mut wal = Wal::open(Arc::clone(&fs), config(&dir)).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    // Acknowledged records all there; the complete records of the unacked
    // batch may survive; the torn one is gone.
    assert_eq!(replayed, [&acked[..], &unacked[..3]].concat());
    assert_eq!(summary.last_lsn, unacked[2].0);
    assert_eq!(
        summary.torn_tail,
        Some(TornTail {
            file: segment.clone(),
            offset: torn_at as u64,
            bytes_dropped: (18 + 100 - 5) as u64,
        })
    );
    drop(wal);

    // Writing continues after the repaired tail...
    let (mut log, summary) = Log::start(&fs, config(&dir));
    assert!(
        summary.torn_tail.is_some(),
        "not yet repaired before start_writer"
    );
    log.write_many(10);
    let all = log.acked.clone();
    log.writer.shutdown().unwrap();
    // ...and the repaired segment, written on after the tear, reads clean, twice.
    for _ in 0..2 {
        let (log, summary) = Log::start(&fs, config(&dir));
        assert_eq!(summary.torn_tail, None);
        assert_eq!(log.acked, all);
        log.writer.shutdown().unwrap();
    }
}

#[test]
fn a_real_segment_truncated_mid_record_is_a_torn_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Arc<dyn Fs> = Arc::new(StdFs);
    let dir = tmp.path().join("data");
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(10);
    let written = log.acked.clone();
    log.writer.shutdown().unwrap();

    // Cut the newest segment 7 bytes before the end of its last record.
    let segment = segments(&*fs, &dir).pop().unwrap();
    let bytes = std::fs::read(&segment).unwrap();
    let last = *record_offsets(&bytes).last().unwrap();
    let last_len = 18 + u32::from_le_bytes(bytes[last + 4..last + 8].try_into().unwrap()) as u64;
    let cut = last as u64 + last_len - 7;
    OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(cut)
        .unwrap();

    let mut wal = Wal::open(Arc::clone(&fs), config(&dir)).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(replayed, written[..written.len() - 1]);
    assert_eq!(
        summary.torn_tail,
        Some(TornTail {
            file: segment.clone(),
            offset: last as u64,
            bytes_dropped: last_len - 7,
        })
    );
    drop(wal);

    let (mut log, _) = Log::start(&fs, config(&dir));
    // Cut at the tear, then allocated again to be written on: no byte of
    // the torn record is left.
    let bytes = std::fs::read(&segment).unwrap();
    assert!(
        bytes[last..].iter().all(|&b| b == 0),
        "truncated at the tear"
    );
    log.write_many(5);
    let all = log.acked.clone();
    log.writer.shutdown().unwrap();
    let mut wal = Wal::open(fs, config(&dir)).unwrap();
    let (summary, replayed) = replay(&mut wal, 1).unwrap();
    assert_eq!(summary.torn_tail, None);
    assert_eq!(replayed, all);
}
