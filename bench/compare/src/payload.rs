//! Benchmark payloads: printable ASCII (valid as bytes, as a JSON string
//! and as a message body everywhere), starting with the wall-clock instant
//! of their creation so any consumer can measure pickup latency.
//!
//! Layout: 20 decimal digits of nanoseconds since the Unix epoch, then `x`
//! up to the requested size (at least 20 bytes).

use std::time::{SystemTime, UNIX_EPOCH};

const STAMP: usize = 20;

/// Nanoseconds since the Unix epoch.
pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A payload of `size` bytes (at least the stamp) stamped now.
pub fn make(size: usize) -> Vec<u8> {
    let mut bytes = format!("{:020}", now_nanos()).into_bytes();
    bytes.resize(size.max(STAMP), b'x');
    bytes
}

/// When the payload was made, if it is one of ours.
pub fn sent_at(payload: &[u8]) -> Option<u64> {
    std::str::from_utf8(payload.get(..STAMP)?)
        .ok()?
        .parse()
        .ok()
}

/// The payload as a string (every payload made here is ASCII).
pub fn as_str(payload: &[u8]) -> &str {
    std::str::from_utf8(payload).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_round_trips_at_every_size() {
        for size in [0, 20, 100, 1024, 65536] {
            let before = now_nanos();
            let p = make(size);
            assert_eq!(p.len(), size.max(STAMP));
            let at = sent_at(&p).unwrap_or(0);
            assert!(at >= before && at <= now_nanos());
        }
        assert_eq!(sent_at(b"not a stamp at all!!"), None);
    }
}
