//! Helpers shared by the integration tests: opening a log, committing
//! batches and waiting for their outcome, and a model of what was
//! acknowledged.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

use spool_wal::{
    BatchBuffer, FaultyFs, Fs, RecordRef, ReplaySummary, Wal, WalConfig, WalError, WalWriter,
    RECORD_BATCH,
};

/// Small segments so that tests roll over often.
pub(crate) const SEGMENT: u64 = 64 * 1024;
/// Size of a segment header (documented format).
pub(crate) const SEGMENT_HEADER: usize = 64;

/// A record as the model keeps it.
pub(crate) type Rec = (u64, u8, Vec<u8>);

pub(crate) fn data_dir() -> PathBuf {
    PathBuf::from("/data")
}

pub(crate) fn faulty(seed: u64) -> (FaultyFs, Arc<dyn Fs>) {
    let fs = FaultyFs::new(seed);
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    (fs, dyn_fs)
}

pub(crate) fn config(dir: &Path) -> WalConfig {
    WalConfig {
        segment_size: SEGMENT,
        ..WalConfig::new(dir)
    }
}

pub(crate) fn owned(rec: RecordRef<'_>) -> Rec {
    (rec.lsn, rec.kind, rec.body.to_vec())
}

/// A deterministic body of `len` bytes that differs per lsn.
pub(crate) fn body(lsn: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (lsn as usize * 31 + i * 7) as u8 | 1)
        .collect()
}

/// A batch at `first_lsn` with one kind-1 record per length, and the records
/// it holds (marker first).
pub(crate) fn make_batch(first_lsn: u64, clock: i64, lens: &[usize]) -> (BatchBuffer, Vec<Rec>) {
    let mut batch = BatchBuffer::new(first_lsn, clock);
    let mut recs = vec![(first_lsn, RECORD_BATCH, clock.to_le_bytes().to_vec())];
    for &len in lens {
        let lsn = batch.last_lsn() + 1;
        let bytes = body(lsn, len);
        assert_eq!(batch.append(1, |b| b.extend_from_slice(&bytes)), lsn);
        recs.push((lsn, 1, bytes));
    }
    (batch, recs)
}

/// Submits `batch` and waits for its outcome.
pub(crate) fn commit(writer: &WalWriter, batch: BatchBuffer) -> Result<(), WalError> {
    let (tx, rx) = mpsc::channel();
    writer.submit(
        batch,
        Box::new(move |result| {
            let _ = tx.send(result);
        }),
    );
    rx.recv().expect("done is always called")
}

/// Replays everything from `from`, collecting the records.
pub(crate) fn replay(wal: &mut Wal, from: u64) -> Result<(ReplaySummary, Vec<Rec>), WalError> {
    let mut recs = Vec::new();
    let summary = wal.replay(from, |rec| {
        recs.push(owned(rec));
        Ok(())
    })?;
    Ok((summary, recs))
}

/// A running log plus the model of what it acknowledged.
pub(crate) struct Log {
    pub writer: WalWriter,
    pub next_lsn: u64,
    /// Every record whose batch got `done(Ok)`, in order (or replayed).
    pub acked: Vec<Rec>,
    clock: i64,
}

impl Log {
    /// Opens, replays everything, starts writing.
    pub(crate) fn start(fs: &Arc<dyn Fs>, cfg: WalConfig) -> (Log, ReplaySummary) {
        let mut wal = Wal::open(Arc::clone(fs), cfg).expect("open");
        let (summary, acked) = replay(&mut wal, 1).expect("replay");
        let writer = wal.start_writer().expect("start writer");
        let log = Log {
            writer,
            next_lsn: summary.last_lsn + 1,
            acked,
            clock: 1_700_000_000_000,
        };
        (log, summary)
    }

    /// Commits one batch of records of the given lengths.
    pub(crate) fn write(&mut self, lens: &[usize]) -> Result<Vec<Rec>, WalError> {
        self.clock += 1;
        let (batch, recs) = make_batch(self.next_lsn, self.clock, lens);
        commit(&self.writer, batch)?;
        self.next_lsn += recs.len() as u64;
        self.acked.extend(recs.iter().cloned());
        Ok(recs)
    }

    /// Commits `n` batches of varied sizes.
    pub(crate) fn write_many(&mut self, n: usize) {
        for i in 0..n {
            let lens: Vec<usize> = (0..1 + i % 7)
                .map(|j| 20 + (i * 37 + j * 101) % 600)
                .collect();
            self.write(&lens).expect("commit");
        }
    }
}

/// Segment files of the data directory `dir`, oldest first.
pub(crate) fn segments(fs: &dyn Fs, dir: &Path) -> Vec<PathBuf> {
    let wal = dir.join("wal");
    let mut names: Vec<String> = fs
        .list(&wal)
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".wal"))
        .collect();
    names.sort();
    names.into_iter().map(|n| wal.join(n)).collect()
}

pub(crate) fn read_file(fs: &dyn Fs, path: &Path) -> Vec<u8> {
    let file = fs.open_read(path).expect("open");
    let mut buf = vec![0; file.len().expect("len") as usize];
    file.read_exact_at(&mut buf, 0).expect("read");
    buf
}

/// Start offsets of the records in a segment's bytes, read straight from
/// the documented frame layout (len at +4, 18-byte header), independent of
/// the crate's decoder. Stops at the first zero-length-and-zero-CRC frame.
pub(crate) fn record_offsets(segment: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = SEGMENT_HEADER;
    while at + 18 <= segment.len() && segment[at..at + 8] != [0; 8] {
        offsets.push(at);
        let len = u32::from_le_bytes(segment[at + 4..at + 8].try_into().unwrap()) as usize;
        at += 18 + len;
    }
    offsets
}
