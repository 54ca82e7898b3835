//! Decoding the server's answers: RESP3 values (the client always sends
//! `HELLO 3`), RESP2's types included since RESP3 keeps them.
//!
//! Invariants: [`decode`] never panics and never reads past its input; an
//! answer is complete (`Some`), incomplete (`None`: read more) or refused
//! as malformed, after which the connection is dropped.

use bytes::Bytes;

/// One answer.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value {
    Simple(String),
    /// The whole error line: the stable code in capitals, then the message.
    Error(String),
    Int(i64),
    Bulk(Bytes),
    Null,
    Bool(bool),
    Double(f64),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

/// A byte stream that is not RESP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed answer from the server: {0}")]
pub(super) struct DecodeError(&'static str);

/// Deepest nesting accepted: Spool's answers are at most four deep.
const MAX_DEPTH: usize = 16;

/// Decodes the answer at the start of `buf`: the value and its length.
pub(super) fn decode(buf: &[u8]) -> Result<Option<(Value, usize)>, DecodeError> {
    value(buf, 0, 0)
}

fn value(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Value, usize)>, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError("nested too deep"));
    }
    let Some(&tag) = buf.get(at) else {
        return Ok(None);
    };
    let Some((line, next)) = line(buf, at + 1) else {
        return Ok(None);
    };
    let text = || std::str::from_utf8(line).map_err(|_| DecodeError("a line is not UTF-8"));
    let int = || -> Result<i64, DecodeError> {
        text()?.parse().map_err(|_| DecodeError("not an integer"))
    };
    Ok(Some(match tag {
        b'+' => (Value::Simple(text()?.to_owned()), next),
        b'-' => (Value::Error(text()?.to_owned()), next),
        b':' => (Value::Int(int()?), next),
        b'_' => (Value::Null, next),
        b'#' => (Value::Bool(line == b"t"), next),
        b',' => (
            Value::Double(text()?.parse().map_err(|_| DecodeError("not a double"))?),
            next,
        ),
        b'$' | b'=' | b'!' => {
            let len = int()?;
            if len < 0 {
                return Ok(Some((Value::Null, next)));
            }
            let end = next
                .checked_add(usize::try_from(len).map_err(|_| DecodeError("bad length"))?)
                .ok_or(DecodeError("bad length"))?;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(DecodeError("a bulk string not followed by CRLF"));
            }
            let body = Bytes::copy_from_slice(&buf[next..end]);
            let v = if tag == b'!' {
                Value::Error(String::from_utf8_lossy(&body).into_owned())
            } else {
                Value::Bulk(body)
            };
            (v, end + 2)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = int()?;
            if n < 0 {
                return Ok(Some((Value::Null, next)));
            }
            let pairs = matches!(tag, b'%' | b'|');
            let items = if pairs { n.saturating_mul(2) } else { n };
            let mut out = Vec::new();
            let mut pos = next;
            for _ in 0..items {
                match value(buf, pos, depth + 1)? {
                    None => return Ok(None),
                    Some((v, p)) => {
                        out.push(v);
                        pos = p;
                    }
                }
            }
            if tag == b'|' {
                // Attributes are out-of-band; the value follows them.
                return value(buf, pos, depth);
            }
            let v = if pairs {
                let mut it = out.into_iter();
                let mut map = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    map.push((k, v));
                }
                Value::Map(map)
            } else {
                Value::Array(out)
            };
            (v, pos)
        }
        _ => return Err(DecodeError("unknown type byte")),
    }))
}

/// The line starting at `at`, without its CRLF, and where the next starts.
fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = buf.get(at..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    Some((&rest[..end], at + end + 2))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn decodes_what_the_server_sends() {
        let wire = b"%2\r\n$2\r\nid\r\n:7\r\n$3\r\ndup\r\n#t\r\n";
        let (v, n) = decode(wire).unwrap().unwrap();
        assert_eq!(n, wire.len());
        assert_eq!(
            v,
            Value::Map(vec![
                (Value::Bulk(Bytes::from_static(b"id")), Value::Int(7)),
                (Value::Bulk(Bytes::from_static(b"dup")), Value::Bool(true)),
            ])
        );
        let (v, _) = decode(b"-LEASE_LOST lease lost\r\n").unwrap().unwrap();
        assert_eq!(v, Value::Error("LEASE_LOST lease lost".into()));
        let (v, _) = decode(b"$-1\r\n").unwrap().unwrap();
        assert_eq!(v, Value::Null);
    }

    #[test]
    fn every_prefix_is_incomplete_and_garbage_is_refused() {
        let wire = b"*2\r\n$3\r\na\r\n\r\n_\r\n";
        for end in 0..wire.len() {
            assert_eq!(decode(&wire[..end]).unwrap(), None, "prefix {end}");
        }
        assert!(decode(wire).unwrap().is_some());
        assert!(decode(b"?x\r\n").is_err());
        assert!(decode(b"$1\r\nab\r\n").is_err());
    }
}
