//! The checkpoint file format.
//!
//! ```text
//! header   24 B  magic "SPOOLSNP" | version u32 | start_lsn u64 | crc32c of the 20 bytes before
//! chunk    9+n   crc32c of (len|flags|data) u32 | len u32 | flags u8 (0) | data
//! …
//! footer   24 B  magic "SPOOLEND" | chunk count u64 | total u32 | crc32c of the 20 bytes before
//! ```
//! `total` is the crc32c of all chunk headers in order. Each chunk header's
//! CRC covers its data, so `total` validates the whole file while each data
//! byte is hashed once when written. Every byte of the file is covered by
//! some CRC: any single damaged byte makes the file invalid.
//!
//! `flags` is reserved for compression; a reader refuses flags it does not
//! know.

use crate::bytes::{u32_at, u64_at};
use crate::record::MAX_RECORD_LEN;

/// Largest chunk: one chunk may need to carry one record's worth of state.
pub const MAX_CHUNK_LEN: usize = MAX_RECORD_LEN;

pub(crate) const HEADER_LEN: usize = 24;
pub(crate) const CHUNK_HEADER_LEN: usize = 9;
pub(crate) const FOOTER_LEN: usize = 24;

const MAGIC: &[u8; 8] = b"SPOOLSNP";
const FOOTER_MAGIC: &[u8; 8] = b"SPOOLEND";
const VERSION: u32 = 1;

pub(crate) fn encode_header(start_lsn: u64) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[0..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..20].copy_from_slice(&start_lsn.to_le_bytes());
    seal(&mut out);
    out
}

/// The start lsn of a valid header.
pub(crate) fn decode_header(buf: &[u8]) -> Result<u64, String> {
    let head = checked(buf, MAGIC).map_err(|e| format!("header: {e}"))?;
    if u32_at(head, 8) != Some(VERSION) {
        return Err(format!("unsupported format version {:?}", u32_at(head, 8)));
    }
    u64_at(head, 12).ok_or_else(|| "truncated header".to_string())
}

/// The chunk header for `data` (flags 0).
pub(crate) fn chunk_header(data: &[u8]) -> [u8; CHUNK_HEADER_LEN] {
    let mut out = [0u8; CHUNK_HEADER_LEN];
    // Callers bound data by MAX_CHUNK_LEN, far below u32::MAX.
    out[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[4..]), data);
    out[0..4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// A chunk header's (crc, len), checked against the bytes left in the file
/// before anything is allocated.
pub(crate) fn decode_chunk_header(buf: &[u8], remaining: u64) -> Result<(u32, usize), String> {
    let (Some(crc), Some(len), Some(&flags)) = (u32_at(buf, 0), u32_at(buf, 4), buf.get(8)) else {
        return Err("truncated chunk header".into());
    };
    let len = len as usize;
    if len > MAX_CHUNK_LEN {
        return Err(format!("chunk of {len} bytes is over the limit"));
    }
    if len as u64 > remaining {
        return Err(format!(
            "chunk of {len} bytes runs past the end of the file"
        ));
    }
    if flags != 0 {
        return Err(format!("unknown chunk flags {flags:#x}"));
    }
    Ok((crc, len))
}

/// Whether `data` matches its chunk header's CRC.
pub(crate) fn chunk_matches(header: &[u8; CHUNK_HEADER_LEN], crc: u32, data: &[u8]) -> bool {
    crc32c::crc32c_append(crc32c::crc32c(&header[4..]), data) == crc
}

pub(crate) fn encode_footer(chunks: u64, total: u32) -> [u8; FOOTER_LEN] {
    let mut out = [0u8; FOOTER_LEN];
    out[0..8].copy_from_slice(FOOTER_MAGIC);
    out[8..16].copy_from_slice(&chunks.to_le_bytes());
    out[16..20].copy_from_slice(&total.to_le_bytes());
    seal(&mut out);
    out
}

/// (chunk count, total) of a valid footer.
pub(crate) fn decode_footer(buf: &[u8]) -> Result<(u64, u32), String> {
    let foot = checked(buf, FOOTER_MAGIC).map_err(|e| format!("footer: {e}"))?;
    match (u64_at(foot, 8), u32_at(foot, 16)) {
        (Some(chunks), Some(total)) => Ok((chunks, total)),
        _ => Err("truncated footer".into()),
    }
}

/// Writes the CRC of bytes 0..20 into 20..24.
fn seal(out: &mut [u8; 24]) {
    let crc = crc32c::crc32c(&out[..20]);
    out[20..24].copy_from_slice(&crc.to_le_bytes());
}

fn checked<'a>(buf: &'a [u8], magic: &[u8; 8]) -> Result<&'a [u8], &'static str> {
    let block = buf.get(..24).ok_or("truncated")?;
    if &block[..8] != magic {
        return Err("bad magic");
    }
    if u32_at(block, 20) != Some(crc32c::crc32c(&block[..20])) {
        return Err("checksum mismatch");
    }
    Ok(block)
}
