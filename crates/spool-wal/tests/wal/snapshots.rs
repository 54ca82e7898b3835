//! Checkpoints: written while the log runs, published after what precedes
//! them is durable, read back whole-file-validated, falling back to the
//! previous one, and reclaiming segments without breaking that fallback.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

use spool_wal::{Fs, PendingSnapshot, SnapshotReader, SnapshotWriter, Wal, WalError, WalWriter};

use crate::common::*;

fn write_snapshot(fs: &Arc<dyn Fs>, start_lsn: u64, chunks: &[Vec<u8>]) -> PendingSnapshot {
    let mut writer = SnapshotWriter::create(Arc::clone(fs), &data_dir(), start_lsn).unwrap();
    for chunk in chunks {
        writer.append_chunk(chunk).unwrap();
    }
    writer.finish().unwrap()
}

fn publish(writer: &WalWriter, snap: PendingSnapshot) -> Result<(), WalError> {
    let (tx, rx) = mpsc::channel();
    writer.submit_snapshot(snap, Box::new(move |r| tx.send(r).unwrap()));
    rx.recv().unwrap()
}

fn chunks(reader: SnapshotReader) -> Vec<Vec<u8>> {
    reader.chunks().collect::<Result<_, _>>().unwrap()
}

fn snapshot_path(lsn: u64) -> PathBuf {
    data_dir().join("snap").join(format!("{lsn:020}.snap"))
}

fn snapshot_names(fs: &dyn Fs) -> Vec<String> {
    let mut names = fs.list(&data_dir().join("snap")).unwrap();
    names.sort();
    names
}

/// A segment's first lsn, from its header (documented layout).
fn first_lsn(fs: &dyn Fs, segment: &Path) -> u64 {
    u64::from_le_bytes(read_file(fs, segment)[20..28].try_into().unwrap())
}

fn from_lsn(recs: &[Rec], lsn: u64) -> Vec<Rec> {
    recs.iter().filter(|r| r.0 >= lsn).cloned().collect()
}

#[test]
fn checkpoints_publish_fall_back_and_reclaim_segments() {
    let (disk, fs) = faulty(50);
    let dir = data_dir();
    let (mut log, _) = Log::start(&fs, config(&dir));
    log.write_many(40);
    let s1 = log.next_lsn;
    // 3 MiB: larger than the writer's buffer, so written straight through.
    let c1 = vec![b"one".to_vec(), vec![7u8; 3 << 20]];
    publish(&log.writer, write_snapshot(&fs, s1, &c1)).unwrap();
    log.write_many(60);
    let s2 = log.next_lsn;
    let c2 = vec![b"two".to_vec(), vec![], b"two-b".to_vec()];
    publish(&log.writer, write_snapshot(&fs, s2, &c2)).unwrap();
    let first_segment = segments(&*fs, &dir)[0].clone();
    log.write_many(60);
    let s3 = log.next_lsn;
    let c3 = vec![b"three".to_vec()];
    publish(&log.writer, write_snapshot(&fs, s3, &c3)).unwrap();

    // The oldest checkpoint is gone; the two newest stay.
    assert_eq!(
        snapshot_names(&*fs),
        vec![format!("{s2:020}.snap"), format!("{s3:020}.snap")]
    );
    // Segments wholly below the previous checkpoint (s2) are gone, the one
    // holding s2 stays.
    let segs = segments(&*fs, &dir);
    assert_ne!(segs[0], first_segment, "nothing was reclaimed");
    assert!(first_lsn(&*fs, &segs[0]) <= s2 && first_lsn(&*fs, &segs[1]) > s2);
    let acked = log.acked.clone();
    log.writer.shutdown().unwrap();

    let mut wal = Wal::open(Arc::clone(&fs), config(&dir)).unwrap();
    let snap = wal.latest_snapshot().unwrap().unwrap();
    assert_eq!(snap.start_lsn(), s3);
    assert_eq!(chunks(snap), c3);
    assert_eq!(replay(&mut wal, s3).unwrap().1, from_lsn(&acked, s3));
    drop(wal);

    // Damage the newest: the previous one is used, and its replay still works.
    disk.flip_bit(&snapshot_path(s3), 30, 0).unwrap();
    let mut wal = Wal::open(Arc::clone(&fs), config(&dir)).unwrap();
    let snap = wal.latest_snapshot().unwrap().unwrap();
    assert_eq!(snap.start_lsn(), s2);
    assert_eq!(chunks(snap), c2);
    assert_eq!(replay(&mut wal, s2).unwrap().1, from_lsn(&acked, s2));
    // Starting sets the damaged one aside so it is never trusted again.
    wal.start_writer().unwrap().shutdown().unwrap();
    assert_eq!(
        snapshot_names(&*fs),
        vec![format!("{s2:020}.snap"), format!("{s3:020}.snap.corrupt")]
    );
}

#[test]
fn every_checkpoint_damaged_is_an_error_not_a_silent_empty_start() {
    let (disk, fs) = faulty(51);
    let (log, _) = Log::start(&fs, config(&data_dir()));
    publish(&log.writer, write_snapshot(&fs, 1, &[b"x".to_vec()])).unwrap();
    log.writer.shutdown().unwrap();
    disk.flip_bit(&snapshot_path(1), 40, 2).unwrap();
    let wal = Wal::open(fs, config(&data_dir())).unwrap();
    assert_eq!(wal.latest_snapshot().unwrap_err().code(), "corrupt");
}

#[test]
fn bytes_since_snapshot_counts_from_the_newest_checkpoint() {
    let (_disk, fs) = faulty(52);
    let framed = |recs: &[Rec]| recs.iter().map(|r| 18 + r.2.len() as u64).sum::<u64>();
    let (mut log, _) = Log::start(&fs, config(&data_dir()));
    log.write_many(150);
    let before = framed(&log.acked);
    assert_eq!(log.writer.bytes_since_snapshot(), before);

    let s = log.next_lsn;
    publish(&log.writer, write_snapshot(&fs, s, &[b"state".to_vec()])).unwrap();
    let after = framed(&log.write(&[100]).unwrap());
    let since = log.writer.bytes_since_snapshot();
    assert!(since >= after && since <= after + 64 * 1024, "{since}");
    assert!(since < before);
    let acked = log.acked.clone();
    log.writer.shutdown().unwrap();

    // After a restart it starts from what replay found past the checkpoint.
    let mut wal = Wal::open(fs, config(&data_dir())).unwrap();
    let start = wal.latest_snapshot().unwrap().unwrap().start_lsn();
    replay(&mut wal, start).unwrap();
    let writer = wal.start_writer().unwrap();
    assert_eq!(writer.bytes_since_snapshot(), framed(&from_lsn(&acked, s)));
    writer.shutdown().unwrap();
}
