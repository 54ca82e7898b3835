//! Property tests of the decoders on hostile input: arbitrary bytes and
//! mutated valid files. They never panic, and damage is always caught at
//! exactly the damaged record (or makes a checkpoint invalid as a whole).
//! Allocation bounds are proven separately, under a memory limit, in
//! `tests/alloc_bound.rs`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use spool_wal::{decode_segment, FaultyFs, Fs, SegmentEnd, SnapshotReader, SnapshotWriter};

use crate::common::*;

/// A real segment (written by the WAL thread) cut to its records, the
/// records, their offsets, and for each record whether it is in the final batch.
struct Fixture {
    bytes: Vec<u8>,
    recs: Vec<Rec>,
    offsets: Vec<usize>,
    in_last_batch: Vec<bool>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let (_disk, fs) = faulty(60);
        let cfg = spool_wal::WalConfig {
            segment_size: 1 << 20,
            ..config(&data_dir())
        };
        let (mut log, _) = Log::start(&fs, cfg);
        log.write_many(5);
        let recs = log.acked.clone();
        log.writer.shutdown().unwrap();
        let mut bytes = read_file(&*fs, &segments(&*fs, &data_dir())[0]);
        let offsets = record_offsets(&bytes);
        let end = offsets.last().unwrap() + 18 + recs.last().unwrap().2.len();
        bytes.truncate(end);
        let last_marker = recs.iter().rposition(|r| r.1 == 0).unwrap();
        let in_last_batch = (0..recs.len()).map(|i| i >= last_marker).collect();
        Fixture {
            bytes,
            recs,
            offsets,
            in_last_batch,
        }
    })
}

fn snapshot_fixture() -> &'static Vec<u8> {
    static SNAP: OnceLock<Vec<u8>> = OnceLock::new();
    SNAP.get_or_init(|| {
        let fs: Arc<dyn Fs> = Arc::new(FaultyFs::new(61));
        let mut writer = SnapshotWriter::create(Arc::clone(&fs), Path::new("/d"), 42).unwrap();
        for chunk in [&b"alpha"[..], b"", &[9u8; 300], b"omega"] {
            writer.append_chunk(chunk).unwrap();
        }
        writer.finish().unwrap();
        read_file(&*fs, Path::new("/d/snap/00000000000000000042.snap.tmp"))
    })
}

/// Puts `bytes` in a file of a fresh in-memory disk and opens it as a checkpoint.
fn open_snapshot(bytes: &[u8]) -> Result<Vec<Vec<u8>>, spool_wal::WalError> {
    let fs = FaultyFs::new(0);
    let path = PathBuf::from("/s/x.snap");
    fs.create_dir_all(Path::new("/s")).unwrap();
    fs.create(&path).unwrap().write_all_at(bytes, 0).unwrap();
    SnapshotReader::open(&fs, &path)?.chunks().collect()
}

/// Index of the record whose bytes include `pos`.
fn record_at(f: &Fixture, pos: usize) -> usize {
    f.offsets.iter().rposition(|&o| o <= pos).unwrap()
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let decoded = decode_segment(&bytes);
        prop_assert!(decoded.valid_len <= bytes.len() as u64);
        if decoded.header.is_err() {
            prop_assert_eq!(decoded.records, 0);
        }
    }

    #[test]
    fn arbitrary_records_after_a_valid_header_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..4096),
    ) {
        let mut bytes = fixture().bytes[..SEGMENT_HEADER].to_vec();
        bytes.extend(&tail);
        let decoded = decode_segment(&bytes);
        prop_assert!(decoded.header.is_ok());
        prop_assert!(decoded.records <= tail.len() as u64 / 18);
        prop_assert!(decoded.valid_len <= bytes.len() as u64);
    }

    #[test]
    fn a_flipped_byte_stops_decoding_exactly_at_its_record(
        pos_seed in any::<usize>(),
        xor in 1u8..=255,
    ) {
        let f = fixture();
        let pos = SEGMENT_HEADER + pos_seed % (f.bytes.len() - SEGMENT_HEADER);
        let mut bytes = f.bytes.clone();
        bytes[pos] ^= xor;
        let k = record_at(f, pos);
        let decoded = decode_segment(&bytes);
        prop_assert_eq!(decoded.records, k as u64);
        prop_assert_eq!(decoded.last_lsn, k.checked_sub(1).map(|i| f.recs[i].0));
        prop_assert_eq!(decoded.valid_len, f.offsets[k] as u64);
        let offset = f.offsets[k] as u64;
        if f.in_last_batch[k] {
            let is_torn = matches!(decoded.end, SegmentEnd::Torn { offset: o, .. } if o == offset);
            prop_assert!(is_torn, "{:?}", decoded.end);
        } else {
            let is_corrupt = matches!(decoded.end, SegmentEnd::Corrupt { offset: o, .. } if o == offset);
            prop_assert!(is_corrupt, "{:?}", decoded.end);
        }
    }

    #[test]
    fn a_cut_keeps_exactly_the_whole_records_before_it(cut_seed in any::<usize>(), zeros in 0usize..600) {
        let f = fixture();
        let cut = SEGMENT_HEADER + cut_seed % (f.bytes.len() - SEGMENT_HEADER + 1);
        let mut bytes = f.bytes[..cut].to_vec();
        bytes.resize(cut + zeros, 0);
        // Whole records, counting one whose cut-off bytes happened to be
        // zeros as whole: the padding restored it.
        let intact = |(&o, r): (&usize, &Rec)| {
            let end = o + 18 + r.2.len();
            bytes.get(o..end) == f.bytes.get(o..end)
        };
        let whole = f.offsets.iter().zip(&f.recs).take_while(|&rec| intact(rec)).count();
        let decoded = decode_segment(&bytes);
        prop_assert_eq!(decoded.records, whole as u64);
        let rest_is_zero = whole == f.offsets.len() || bytes[f.offsets[whole]..].iter().all(|&b| b == 0);
        if rest_is_zero {
            prop_assert_eq!(decoded.end, SegmentEnd::Clean);
        } else {
            let is_torn = matches!(decoded.end, SegmentEnd::Torn { offset, .. } if offset == f.offsets[whole] as u64);
            prop_assert!(is_torn, "{:?}", decoded.end);
        }
    }

    #[test]
    fn arbitrary_checkpoint_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = open_snapshot(&bytes);
    }

    #[test]
    fn any_damaged_checkpoint_byte_invalidates_the_file(pos_seed in any::<usize>(), xor in 1u8..=255) {
        let mut bytes = snapshot_fixture().clone();
        let pos = pos_seed % bytes.len();
        bytes[pos] ^= xor;
        let err = open_snapshot(&bytes).unwrap_err();
        prop_assert_eq!(err.code(), "corrupt");
    }

    #[test]
    fn a_cut_checkpoint_is_invalid(cut_seed in any::<usize>()) {
        let bytes = snapshot_fixture();
        let cut = cut_seed % bytes.len();
        prop_assert_eq!(open_snapshot(&bytes[..cut]).unwrap_err().code(), "corrupt");
    }
}

#[test]
fn the_checkpoint_fixture_itself_reads_back() {
    let chunks = open_snapshot(snapshot_fixture()).unwrap();
    assert_eq!(
        chunks,
        vec![b"alpha".to_vec(), vec![], vec![9; 300], b"omega".to_vec()]
    );
}
