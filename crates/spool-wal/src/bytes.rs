//! Little-endian field access for the on-disk formats.
//!
//! Readers return `None` instead of panicking when the slice is too short,
//! so decoders of untrusted bytes stay panic-free without bounds reasoning
//! at every call site.

pub(crate) fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(array_at(buf, at)?))
}

pub(crate) fn u64_at(buf: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(array_at(buf, at)?))
}

pub(crate) fn u128_at(buf: &[u8], at: usize) -> Option<u128> {
    Some(u128::from_le_bytes(array_at(buf, at)?))
}

fn array_at<const N: usize>(buf: &[u8], at: usize) -> Option<[u8; N]> {
    buf.get(at..at.checked_add(N)?)?.try_into().ok()
}
