//! Feeds arbitrary bytes to the segment decoder: it must never panic, and
//! what it reports must stay within the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spool_wal::{decode_segment, SegmentEnd};

fuzz_target!(|data: &[u8]| {
    let decoded = decode_segment(data);
    assert!(decoded.valid_len <= data.len() as u64);
    assert!(decoded.batches <= decoded.records);
    match decoded.end {
        SegmentEnd::Clean => {}
        SegmentEnd::Torn {
            offset,
            bytes_dropped,
        } => {
            assert_eq!(offset, decoded.valid_len);
            assert!(offset + bytes_dropped <= data.len() as u64);
        }
        SegmentEnd::Corrupt { offset, .. } => assert_eq!(offset, decoded.valid_len),
    }
});
