//! `META`: the data directory's identity — format version and a random
//! instance id that every segment header repeats, so a segment copied in
//! from another directory is refused.
//!
//! ```text
//! 0..8 magic "SPOOLMET" | 8..12 version u32 | 12..28 instance u128 | 28..32 crc32c of 0..28
//! ```
//! Written once, atomically: tmp file, fsync, rename, fsync of the directory.

use std::path::Path;

use crate::bytes::{u128_at, u32_at};
use crate::error::{io_err, WalError};
use crate::fs::{read_prefix, Fs};
use crate::layout::Layout;

const MAGIC: &[u8; 8] = b"SPOOLMET";
const VERSION: u32 = 1;
const LEN: usize = 32;

/// Reads `META`; `Ok(None)` if it does not exist.
pub(crate) fn read(fs: &dyn Fs, layout: &Layout) -> Result<Option<u128>, WalError> {
    let path = layout.meta();
    if !fs.exists(&path).map_err(io_err("stat", &path))? {
        return Ok(None);
    }
    let bytes = read_prefix(fs, &path, LEN + 1).map_err(io_err("read", &path))?;
    decode(&bytes)
        .map(Some)
        .map_err(|reason| bad(&path, reason))
}

/// Creates `META` with a fresh instance id.
pub(crate) fn create(fs: &dyn Fs, layout: &Layout) -> Result<u128, WalError> {
    let instance: u128 = rand::random();
    let (tmp, path) = (layout.meta_tmp(), layout.meta());
    let file = fs.create(&tmp).map_err(io_err("create", &tmp))?;
    file.write_all_at(&encode(instance), 0)
        .map_err(io_err("write", &tmp))?;
    file.sync_all().map_err(io_err("fsync", &tmp))?;
    fs.rename(&tmp, &path).map_err(io_err("rename", &tmp))?;
    // The root's own entry (and with it wal/ and snap/) may be new too.
    let root = layout.root();
    for dir in [Some(root), root.parent()].into_iter().flatten() {
        fs.sync_dir(dir).map_err(io_err("fsync dir", dir))?;
    }
    Ok(instance)
}

pub(crate) fn bad(path: &Path, reason: impl Into<String>) -> WalError {
    WalError::BadMeta {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn encode(instance: u128) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    out[0..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..28].copy_from_slice(&instance.to_le_bytes());
    let crc = crc32c::crc32c(&out[..28]);
    out[28..32].copy_from_slice(&crc.to_le_bytes());
    out
}

fn decode(bytes: &[u8]) -> Result<u128, String> {
    if bytes.len() != LEN {
        return Err(format!("{} bytes, expected {LEN}", bytes.len()));
    }
    if &bytes[..8] != MAGIC {
        return Err("bad magic".into());
    }
    if u32_at(bytes, 28) != Some(crc32c::crc32c(&bytes[..28])) {
        return Err("checksum mismatch".into());
    }
    if u32_at(bytes, 8) != Some(VERSION) {
        return Err(format!("unsupported format version {:?}", u32_at(bytes, 8)));
    }
    u128_at(bytes, 12).ok_or_else(|| "truncated".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let bytes = encode(42);
        assert_eq!(decode(&bytes), Ok(42));
        let mut bad = bytes;
        bad[20] ^= 1;
        assert!(decode(&bad).is_err());
        assert!(decode(&bytes[..31]).is_err());
    }
}
