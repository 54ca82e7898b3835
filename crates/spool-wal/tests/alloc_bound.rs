//! The decoders never allocate more than the input justifies: under an
//! address-space limit far below what the hostile inputs claim (up to
//! 80 MiB records and chunks, 4 GiB lengths), decoding them must neither
//! abort on a failed allocation nor succeed.
//!
//! Its own test binary, because the limit applies to the whole process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use spool_wal::{
    decode_segment, FaultyFs, Fs, SegmentEnd, SnapshotReader, SnapshotWriter, Wal, WalConfig,
    MAX_CHUNK_LEN, MAX_RECORD_LEN,
};

/// Headroom above the current address-space size: far below MAX_RECORD_LEN.
const HEADROOM: u64 = 48 << 20;

fn address_space_now() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A record frame claiming a `len`-byte body, with nothing behind it.
fn record_claiming(len: u32) -> Vec<u8> {
    let mut frame = vec![0u8; 18];
    frame[4..8].copy_from_slice(&len.to_le_bytes());
    frame[8..16].copy_from_slice(&1u64.to_le_bytes());
    frame[16] = 1;
    let crc = crc32c::crc32c(&frame[4..]);
    frame[0..4].copy_from_slice(&crc.to_le_bytes());
    frame
}

#[test]
fn hostile_lengths_are_refused_within_a_tight_memory_limit() {
    // Everything the test needs later, built before the limit.
    let fs = FaultyFs::new(1);
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    let data = Path::new("/data");
    Wal::open(Arc::clone(&dyn_fs), WalConfig::new(data))
        .unwrap()
        .start_writer()
        .unwrap()
        .shutdown()
        .unwrap();
    let segment_path = data.join("wal/00000000000000000001.wal");
    let mut segment = vec![0u8; 64];
    dyn_fs
        .open_read(&segment_path)
        .unwrap()
        .read_exact_at(&mut segment, 0)
        .unwrap();
    segment.extend(record_claiming(MAX_RECORD_LEN as u32));
    segment.extend([0xAB; 100]);
    let file = dyn_fs.create(&segment_path).unwrap();
    file.write_all_at(&segment, 0).unwrap();

    let mut writer = SnapshotWriter::create(Arc::clone(&dyn_fs), data, 5).unwrap();
    writer.append_chunk(b"small").unwrap();
    writer.finish().unwrap();
    let snap_path = data.join("snap/00000000000000000005.snap.tmp");
    // Claim a MAX_CHUNK_LEN chunk in the first chunk header (offset 24).
    let snap_file = dyn_fs.open(&snap_path).unwrap();
    snap_file
        .write_all_at(&(MAX_CHUNK_LEN as u32).to_le_bytes(), 24 + 4)
        .unwrap();
    let mut hostile_lens = Vec::new();
    for len in [MAX_RECORD_LEN as u32, u32::MAX, 0x7fff_ffff] {
        let mut bytes = segment[..64].to_vec();
        bytes.extend(record_claiming(len));
        hostile_lens.push(bytes);
    }

    let limit = address_space_now() + HEADROOM;
    let (_, max) = {
        let old = getrlimit(Resource::As);
        (old.current, old.maximum)
    };
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(limit),
            maximum: max,
        },
    )
    .unwrap();
    // The limit bites: an allocation of the size the inputs claim fails.
    assert!(Vec::<u8>::new().try_reserve(MAX_RECORD_LEN).is_err());

    for bytes in &hostile_lens {
        let decoded = decode_segment(bytes);
        assert_eq!(decoded.records, 0);
        assert!(matches!(decoded.end, SegmentEnd::Torn { .. }));
    }
    let err = SnapshotReader::open(&fs, &snap_path).unwrap_err();
    assert_eq!(err.code(), "corrupt");
    let mut wal = Wal::open(dyn_fs, WalConfig::new(data)).unwrap();
    let summary = wal.replay(1, |_| Ok(())).unwrap();
    assert_eq!(summary.torn_tail.unwrap().offset, 64);
}
