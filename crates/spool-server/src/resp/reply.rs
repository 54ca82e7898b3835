//! Answers and how they are written in RESP2 and RESP3.
//!
//! A [`Reply`] is protocol-neutral; [`Reply::encode`] writes it in the
//! protocol the connection had when the command was read. RESP2 has no map,
//! null or boolean: maps go out as flat arrays of key, value, nulls as the
//! null bulk string, booleans as 0 and 1, as Redis does.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::ApiError;

/// The protocol of a connection: 2 until `HELLO 3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Proto {
    Resp2,
    Resp3,
}

/// One answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Reply {
    /// `+OK`, `+PONG`, a state name: short text without CR or LF.
    Simple(&'static str),
    /// The first word is the stable code in capitals.
    Error {
        code: String,
        message: String,
    },
    Int(i64),
    Bulk(Bytes),
    Null,
    Bool(bool),
    Array(Vec<Reply>),
    Map(Vec<(&'static str, Reply)>),
}

impl Reply {
    pub(super) const OK: Reply = Reply::Simple("OK");

    pub(super) fn text(s: impl Into<String>) -> Reply {
        Reply::Bulk(Bytes::from(s.into()))
    }

    /// An error answer with `code` (a stable error code of docs/spec.md §7, in snake case) in capitals.
    pub(super) fn error(code: &str, message: impl Into<String>) -> Reply {
        Reply::Error {
            code: code.to_ascii_uppercase(),
            message: message.into(),
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Reply {
        Reply::error("bad_request", message)
    }

    pub(super) fn encode(&self, proto: Proto, out: &mut BytesMut) {
        match self {
            Reply::Simple(s) => line(out, b'+', s.as_bytes()),
            Reply::Error { code, message } => {
                out.put_u8(b'-');
                out.put_slice(code.as_bytes());
                out.put_u8(b' ');
                // One line: a CR or LF in a message would end the frame.
                for &b in message.as_bytes() {
                    out.put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
                }
                out.put_slice(b"\r\n");
            }
            Reply::Int(n) => line(out, b':', itoa(*n).as_bytes()),
            Reply::Bulk(b) => {
                line(out, b'$', itoa(b.len() as i64).as_bytes());
                out.put_slice(b);
                out.put_slice(b"\r\n");
            }
            Reply::Null => match proto {
                Proto::Resp2 => out.put_slice(b"$-1\r\n"),
                Proto::Resp3 => out.put_slice(b"_\r\n"),
            },
            Reply::Bool(v) => match proto {
                Proto::Resp2 => Reply::Int(i64::from(*v)).encode(proto, out),
                Proto::Resp3 => out.put_slice(if *v { b"#t\r\n" } else { b"#f\r\n" }),
            },
            Reply::Array(items) => {
                line(out, b'*', itoa(items.len() as i64).as_bytes());
                for item in items {
                    item.encode(proto, out);
                }
            }
            Reply::Map(pairs) => {
                match proto {
                    Proto::Resp2 => line(out, b'*', itoa(2 * pairs.len() as i64).as_bytes()),
                    Proto::Resp3 => line(out, b'%', itoa(pairs.len() as i64).as_bytes()),
                }
                for (k, v) in pairs {
                    Reply::Bulk(Bytes::from_static(k.as_bytes())).encode(proto, out);
                    v.encode(proto, out);
                }
            }
        }
    }
}

impl From<ApiError> for Reply {
    /// The same code and public message as the HTTP answer; server-side
    /// failures are logged in full here, as `IntoResponse` does for HTTP.
    fn from(e: ApiError) -> Reply {
        let (status, code) = e.status_and_code();
        if status.is_server_error() {
            tracing::error!(code, error = %e, "RESP command failed");
        }
        Reply::error(code, e.public_message())
    }
}

fn line(out: &mut BytesMut, tag: u8, body: &[u8]) {
    out.put_u8(tag);
    out.put_slice(body);
    out.put_slice(b"\r\n");
}

fn itoa(n: i64) -> String {
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(r: &Reply, p: Proto) -> String {
        let mut out = BytesMut::new();
        r.encode(p, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn maps_nulls_and_booleans_per_protocol() {
        let m = Reply::Map(vec![("id", Reply::Int(7)), ("dup", Reply::Bool(true))]);
        assert_eq!(
            wire(&m, Proto::Resp2),
            "*4\r\n$2\r\nid\r\n:7\r\n$3\r\ndup\r\n:1\r\n"
        );
        assert_eq!(
            wire(&m, Proto::Resp3),
            "%2\r\n$2\r\nid\r\n:7\r\n$3\r\ndup\r\n#t\r\n"
        );
        assert_eq!(wire(&Reply::Null, Proto::Resp2), "$-1\r\n");
        assert_eq!(wire(&Reply::Null, Proto::Resp3), "_\r\n");
    }

    #[test]
    fn errors_are_one_line_with_the_code_first() {
        let e = Reply::error("lease_lost", "a\r\nb");
        assert_eq!(wire(&e, Proto::Resp2), "-LEASE_LOST a  b\r\n");
    }
}
