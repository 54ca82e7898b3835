//! A minimal little-endian binary codec for log records and checkpoints.
//!
//! Decoding never trusts a length: every read is bounds-checked against the
//! bytes that are really there, so a corrupt or hostile record yields
//! [`DecodeError`] instead of a panic or a huge allocation.

use bytes::Bytes;

/// A record or checkpoint chunk that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undecodable {what} at byte {at}")]
pub struct DecodeError {
    /// The field that did not decode, such as `payload format`.
    pub what: &'static str,
    /// Where that field starts, in bytes from the start of the record body or
    /// chunk.
    pub at: usize,
}

pub(crate) fn put_u8(buf: &mut Vec<u8>, v: u8) {
    buf.push(v);
}

pub(crate) fn put_u16(buf: &mut Vec<u8>, v: u16) {
    buf.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_i64(buf: &mut Vec<u8>, v: i64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Length-prefixed (u32) bytes.
pub(crate) fn put_bytes(buf: &mut Vec<u8>, v: &[u8]) {
    put_u32(buf, v.len() as u32);
    buf.extend_from_slice(v);
}

pub(crate) fn put_str(buf: &mut Vec<u8>, v: &str) {
    put_bytes(buf, v.as_bytes());
}

/// A cursor over one record body.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(DecodeError { what, at: self.pos })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }

    pub(crate) fn owned_bytes(&mut self, what: &'static str) -> Result<Bytes, DecodeError> {
        Ok(Bytes::copy_from_slice(self.bytes(what)?))
    }

    pub(crate) fn str(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        std::str::from_utf8(self.bytes(what)?).map_err(|_| DecodeError { what, at })
    }

    /// A count of items that each take at least `min_item` bytes: refused if
    /// the rest of the buffer could not hold them, so callers may reserve.
    pub(crate) fn count(
        &mut self,
        what: &'static str,
        min_item: usize,
    ) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_item.max(1)) > self.remaining() {
            return Err(DecodeError { what, at });
        }
        Ok(n)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_overruns() {
        let mut b = Vec::new();
        put_u8(&mut b, 7);
        put_u64(&mut b, u64::MAX);
        put_i64(&mut b, -5);
        put_str(&mut b, "héllo");
        let mut r = Reader::new(&b);
        assert_eq!(r.u8("a").ok(), Some(7));
        assert_eq!(r.u64("b").ok(), Some(u64::MAX));
        assert_eq!(r.i64("c").ok(), Some(-5));
        assert_eq!(r.str("d").ok(), Some("héllo"));
        assert!(r.is_empty());
        assert!(r.u8("e").is_err());
    }

    #[test]
    fn huge_lengths_and_counts_are_refused() {
        let mut b = Vec::new();
        put_u32(&mut b, u32::MAX);
        assert!(Reader::new(&b).bytes("x").is_err());
        assert!(Reader::new(&b).count("x", 8).is_err());
    }
}
