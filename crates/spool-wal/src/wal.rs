//! [`Wal`]: an opened data directory, before writing starts.
//!
//! Lifecycle: `open` (lock, META, segment chain) → `latest_snapshot` →
//! `replay` from the checkpoint's start lsn → `start_writer` (repairs, the
//! newest segment resumed, WAL thread). Nothing on disk changes before `start_writer`
//! except creating a missing directory and META; a read-only `Wal` never
//! changes anything and takes no lock.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::info;

use crate::catalog::{self, Catalog};
use crate::config::WalConfig;
use crate::error::{io_err, WalError};
use crate::fs::{remove_if_present, Fs, FsLock};
use crate::layout::Layout;
use crate::meta;
use crate::position::LogPos;
use crate::reader::SegmentReader;
use crate::record::RecordRef;
use crate::repair::repair;
use crate::replay::{replay, LogEnd, ReplaySummary};
use crate::segment::SEGMENT_HEADER_LEN;
use crate::snapshot::{self, KeptSegment, Retention, SnapshotReader};
use crate::writer::segment::{preallocate, resume, start, SegmentFile};
use crate::writer::{ByteIndex, Shared, WalThread, WalWriter};

/// An opened, locked (unless read-only) data directory.
#[derive(Debug)]
pub struct Wal {
    fs: Arc<dyn Fs>,
    cfg: WalConfig,
    layout: Layout,
    /// `None` when opened read-only.
    lock: Option<Box<dyn FsLock>>,
    instance: u128,
    catalog: Catalog,
    /// Set by `replay`: where the log ends.
    end: Option<LogEnd>,
    /// Checkpoints `latest_snapshot` found damaged, set aside by `start_writer`.
    corrupt_snapshots: Mutex<Vec<u64>>,
}

impl Wal {
    /// Opens `cfg.dir` for writing, creating it if needed: takes the `LOCK`
    /// (`WalError::Locked` if held), reads or creates `META`, checks the
    /// segment chain (consecutive seqs, one instance, a missing middle
    /// segment is damage).
    pub fn open(fs: Arc<dyn Fs>, cfg: WalConfig) -> Result<Wal, WalError> {
        let layout = Layout::new(&cfg.dir);
        for dir in [
            layout.root().to_path_buf(),
            layout.wal_dir(),
            layout.snap_dir(),
        ] {
            fs.create_dir_all(&dir)
                .map_err(io_err("create dir", &dir))?;
        }
        let lock_path = layout.lock_file();
        let lock = fs.lock(&lock_path).map_err(|e| match e.kind() {
            io::ErrorKind::WouldBlock => WalError::Locked {
                path: lock_path.clone(),
            },
            _ => io_err("lock", &lock_path)(e),
        })?;
        remove_if_present(&*fs, &layout.meta_tmp())?;
        let instance = match meta::read(&*fs, &layout)? {
            Some(instance) => instance,
            None if !catalog::list_segments(&*fs, &layout)?.is_empty() => {
                return Err(meta::bad(
                    &layout.meta(),
                    "missing, but the log has segments",
                ));
            }
            None => meta::create(&*fs, &layout)?,
        };
        Wal::load(fs, cfg, layout, Some(lock), instance)
    }

    /// Opens `cfg.dir` for reading only (offline checks): no lock, no
    /// repairs, `start_writer` refuses.
    pub fn open_read_only(fs: Arc<dyn Fs>, cfg: WalConfig) -> Result<Wal, WalError> {
        let layout = Layout::new(&cfg.dir);
        let instance =
            meta::read(&*fs, &layout)?.ok_or_else(|| meta::bad(&layout.meta(), "missing"))?;
        Wal::load(fs, cfg, layout, None, instance)
    }

    fn load(
        fs: Arc<dyn Fs>,
        cfg: WalConfig,
        layout: Layout,
        lock: Option<Box<dyn FsLock>>,
        instance: u128,
    ) -> Result<Wal, WalError> {
        let catalog = catalog::load(&*fs, &layout, instance, cfg.recovery)?;
        Ok(Wal {
            fs,
            cfg,
            layout,
            lock,
            instance,
            catalog,
            end: None,
            corrupt_snapshots: Mutex::new(Vec::new()),
        })
    }

    /// Reads byte ranges of this log's segments (for checking payloads).
    pub fn segment_reader(&self) -> SegmentReader {
        SegmentReader::new(Arc::clone(&self.fs), self.layout.clone())
    }

    /// The directory's random instance id (from META).
    pub fn instance_id(&self) -> u128 {
        self.instance
    }

    /// The newest checkpoint whose whole file validates, falling back to
    /// older ones (with a warning); `None` if there is none. `Err(Corrupt)`
    /// if checkpoints exist but none validates.
    pub fn latest_snapshot(&self) -> Result<Option<SnapshotReader>, WalError> {
        let mut corrupt = Vec::new();
        let latest = snapshot::latest(&*self.fs, &self.layout, &mut corrupt);
        self.corrupt_snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(corrupt);
        latest
    }

    /// How much log a replay from `from_lsn` reads, roughly: the segments
    /// from the one holding `from_lsn` to the newest, in bytes at the
    /// configured segment size, and where that stretch starts. For progress
    /// reports (`(seq, offset)` of a record against it); `None` for an empty
    /// log.
    pub fn replay_extent(&self, from_lsn: u64) -> Option<ReplayExtent> {
        let segments = &self.catalog.segments;
        let first = segments
            .iter()
            .rposition(|s| s.header.first_lsn <= from_lsn)
            .unwrap_or(0);
        let first_seq = segments.get(first)?.header.seq;
        let last_seq = segments.last()?.header.seq;
        Some(ReplayExtent {
            first_seq,
            segment_size: self.cfg.segment_size,
            bytes: (last_seq - first_seq + 1) * self.cfg.segment_size,
        })
    }

    /// Calls `f` with every record whose lsn is `>= from_lsn`, in order,
    /// batch markers included. A torn tail (damage with no valid batch
    /// marker after it) is dropped and reported; damage to acknowledged data
    /// is `Err(Corrupt)` unless `RecoveryMode::Force`. `f` failing stops
    /// replay with `WalError::Apply`. `Err(Gap)` if the log no longer (or
    /// not yet) holds `from_lsn`.
    pub fn replay(
        &mut self,
        from_lsn: u64,
        f: impl FnMut(RecordRef<'_>) -> Result<(), String>,
    ) -> Result<ReplaySummary, WalError> {
        let (summary, end) = replay(&*self.fs, &self.catalog, self.cfg.recovery, from_lsn, f)?;
        self.end = Some(end);
        Ok(summary)
    }

    /// Repairs what replay found (torn tail truncated, dropped segments
    /// deleted, damaged checkpoints set aside), continues the newest segment
    /// at the log's next lsn (a new log starts segment 1) and spawns the WAL
    /// thread. No new file of full size is needed, so a full disk whose data
    /// is intact opens: the WAL thread then tries to reserve space, and until
    /// it can the engine refuses writes. Without a prior `replay`,
    /// scans the newest segment to find the end.
    pub fn start_writer(mut self) -> Result<WalWriter, WalError> {
        let lock = self.lock.take().ok_or(WalError::ReadOnly)?;
        let end = match self.end.take() {
            Some(end) => end,
            None => {
                let newest = self.catalog.segments.last();
                let from = newest.map_or(1, |s| s.header.first_lsn);
                replay(
                    &*self.fs,
                    &self.catalog,
                    self.cfg.recovery,
                    from,
                    |_| Ok(()),
                )?
                .1
            }
        };
        let (fs, layout) = (&*self.fs, &self.layout);
        let corrupt = std::mem::take(
            &mut *self
                .corrupt_snapshots
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        repair(fs, layout, &self.catalog, &end, &corrupt)?;

        let kept = end.keep.map_or(0, |(index, _)| index + 1);
        let mut retention = Retention {
            snapshots: snapshot::list(fs, layout)?,
            segments: self.catalog.segments[..kept]
                .iter()
                .map(|s| KeptSegment::new(s.header.first_lsn, s.header.seq, s.path.clone()))
                .collect(),
        };
        let active = match self.catalog.segments[..kept].last() {
            Some(newest) => {
                let end = end.keep.map_or(0, |(_, len)| len);
                resume(fs, newest.header.seq, newest.path.clone(), end)?
            }
            None => {
                let seg = preallocate_or_header_only(fs, layout, 1, self.cfg.segment_size)?;
                let active = start(seg, end.next_lsn, self.instance)?;
                retention.segments.push_back(KeptSegment::new(
                    end.next_lsn,
                    1,
                    active.seg.path.clone(),
                ));
                active
            }
        };
        let seq = active.seg.seq;
        info!(
            dir = %layout.root().display(),
            next_lsn = end.next_lsn,
            segment = seq,
            "log open for writing"
        );

        let bytes = ByteIndex::new(end.next_lsn, end.bytes);
        let shared = Arc::new(Shared::default());
        shared.bytes_since_snapshot.store(
            bytes.since_checkpoint(),
            std::sync::atomic::Ordering::Relaxed,
        );
        let state = WalThread {
            fs: Arc::clone(&self.fs),
            layout: self.layout.clone(),
            instance: self.instance,
            segment_size: self.cfg.segment_size,
            active,
            next_lsn: end.next_lsn,
            retention,
            bytes,
            shared,
            next: None,
            prealloc_failed: false,
            reader: Arc::new(SegmentReader::new(
                Arc::clone(&self.fs),
                self.layout.clone(),
            )),
        };
        WalWriter::spawn(state, lock)
    }
}

/// A new log's first segment, preallocated; on a disk too full for that,
/// just its header (the reserve grows it once there is room).
fn preallocate_or_header_only(
    fs: &dyn Fs,
    layout: &Layout,
    seq: u64,
    len: u64,
) -> Result<SegmentFile, WalError> {
    preallocate(fs, layout, seq, len)
        .or_else(|_| preallocate(fs, layout, seq, SEGMENT_HEADER_LEN as u64))
}

/// The stretch of log a replay reads, for progress reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayExtent {
    first_seq: u64,
    segment_size: u64,
    /// Segments' bytes from the first read to the newest, at full size.
    pub bytes: u64,
}

impl ReplayExtent {
    /// Percent of the stretch that lies before `at` (0 to 100).
    pub fn percent(&self, at: LogPos) -> u64 {
        let done = at.seq.saturating_sub(self.first_seq) * self.segment_size + at.offset;
        (done * 100 / self.bytes.max(1)).min(100)
    }
}
