//! The RESP request decoder: arrays of bulk strings (what every client
//! library sends) and inline commands (what a person types into telnet).
//!
//! Written here rather than taken from a crate: the RESP crates on
//! crates.io decode every frame type into owned values, while a server needs
//! only requests, with limits checked on the declared lengths before any
//! byte of a bulk string is buffered, and arguments that borrow the read
//! buffer (`Bytes` slices, no copy of a payload).
//!
//! Invariants: [`parse`] never panics and never reads past its input; a
//! frame is either complete (`Some`), incomplete (`None`: read more), or
//! refused with a [`FrameError`] as soon as a declared length or count is
//! over its limit, so a client cannot make the server buffer more than one
//! frame of at most `max_frame` bytes of arguments, none over `max_bulk`.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

/// Bounds on one request frame.
#[derive(Clone, Copy, Debug)]
pub struct FrameLimits {
    /// Largest bulk string (argument), in bytes.
    pub max_bulk: usize,
    /// Most bytes the bulk strings of one frame may declare together: what
    /// a command may make the server buffer before it runs.
    pub max_frame: usize,
    /// Most arguments in one command, its name included.
    pub max_args: usize,
    /// Longest inline command line, in bytes.
    pub max_inline: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            max_bulk: 16 * 1024 * 1024,
            max_frame: 16 * 1024 * 1024,
            // A full `ENQUEUEBATCH`: 21 words per task (`TASK`, the payload
            // and every option once), and the `AFTER`s of one task that
            // waits for the most tasks it may (a batch's callback).
            max_args: 21 * spool_core::store::MAX_BATCH + 2 * spool_core::task::MAX_AFTER + 16,
            max_inline: 64 * 1024,
        }
    }
}

/// Why a frame was refused. The connection is closed after answering it:
/// the stream can no longer be split into frames reliably.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A byte the protocol does not allow where it stands.
    #[error("expected '{expected}', got byte {got:#04x}")]
    Unexpected {
        /// What the protocol requires there (`$`, `\r` or `\n`).
        expected: char,
        /// The byte that came instead.
        got: u8,
    },
    /// A count or length that is not a decimal integer, runs too long, or is
    /// negative for a bulk string.
    #[error("invalid length in a frame header")]
    BadLength,
    /// The array declares more arguments than [`FrameLimits::max_args`].
    #[error("{count} arguments exceed the limit of {max}")]
    TooManyArgs {
        /// The count the client declared.
        count: u64,
        /// The limit.
        max: usize,
    },
    /// A bulk string declares more bytes than [`FrameLimits::max_bulk`].
    #[error("a bulk string of {len} bytes exceeds the limit of {max}")]
    BulkTooLarge {
        /// The length the client declared.
        len: u64,
        /// The limit, in bytes.
        max: usize,
    },
    /// The bulk strings declared so far add up to more than
    /// [`FrameLimits::max_frame`] bytes.
    #[error("a command of more than {max} bytes of arguments exceeds the limit")]
    FrameTooLarge {
        /// The limit, in bytes.
        max: usize,
    },
    /// No line end within [`FrameLimits::max_inline`] bytes; carries the limit.
    #[error("an inline command exceeds {0} bytes")]
    InlineTooLong(usize),
    /// An inline command opens a quote it does not close on its line.
    #[error("unbalanced quotes in an inline command")]
    BadInline,
}

/// A complete frame: how many bytes it took and where its arguments are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Bytes the frame takes at the start of the buffer; the next frame
    /// starts after them.
    pub len: usize,
    /// Each argument's byte range in the buffer, the command's name first;
    /// empty for an array of no arguments, which carries no command.
    pub args: Vec<Range<usize>>,
}

/// The longest header line: a sign, 20 digits and CRLF, with room to spare.
const MAX_HEADER_LINE: usize = 32;

/// Decodes the frame at the start of `buf`, if it is all there.
pub fn parse(buf: &[u8], limits: &FrameLimits) -> Result<Option<Frame>, FrameError> {
    match buf.first() {
        None => Ok(None),
        Some(b'*') => parse_array(buf, limits),
        Some(_) => parse_inline(buf, limits),
    }
}

/// Removes the frame from `buf` and hands out its arguments without copying.
pub fn take(buf: &mut BytesMut, frame: &Frame) -> Vec<Bytes> {
    let bytes = buf.split_to(frame.len).freeze();
    frame.args.iter().map(|r| bytes.slice(r.clone())).collect()
}

fn parse_array(buf: &[u8], limits: &FrameLimits) -> Result<Option<Frame>, FrameError> {
    let Some((count, mut pos)) = header(buf, 0)? else {
        return Ok(None);
    };
    // `*0` and `*-1` carry no command: consumed and ignored, as Redis does.
    let count = u64::try_from(count.max(0)).map_err(|_| FrameError::BadLength)?;
    if count > limits.max_args as u64 {
        return Err(FrameError::TooManyArgs {
            count,
            max: limits.max_args,
        });
    }
    // The count is the client's word: reserve for it only as the
    // arguments actually arrive.
    let mut args = Vec::with_capacity((count as usize).min(1024));
    let mut declared: u64 = 0;
    for _ in 0..count {
        match buf.get(pos) {
            None => return Ok(None),
            Some(b'$') => {}
            Some(&got) => return Err(FrameError::Unexpected { expected: '$', got }),
        }
        let Some((len, start)) = header(buf, pos)? else {
            return Ok(None);
        };
        let len = u64::try_from(len).map_err(|_| FrameError::BadLength)?;
        if len > limits.max_bulk as u64 {
            return Err(FrameError::BulkTooLarge {
                len,
                max: limits.max_bulk,
            });
        }
        declared += len;
        if declared > limits.max_frame as u64 {
            return Err(FrameError::FrameTooLarge {
                max: limits.max_frame,
            });
        }
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(FrameError::Unexpected {
                expected: '\r',
                got: buf[end],
            });
        }
        args.push(start..end);
        pos = end + 2;
    }
    Ok(Some(Frame { len: pos, args }))
}

/// A `<type><integer>\r\n` line at `at`: the integer and where the next
/// byte is, `None` while the line is incomplete.
fn header(buf: &[u8], at: usize) -> Result<Option<(i64, usize)>, FrameError> {
    let line = &buf[at + 1..buf.len().min(at + MAX_HEADER_LINE)];
    let Some(cr) = line.iter().position(|&b| b == b'\r') else {
        if line.len() + 1 >= MAX_HEADER_LINE {
            return Err(FrameError::BadLength);
        }
        return Ok(None);
    };
    match line.get(cr + 1) {
        None => return Ok(None),
        Some(b'\n') => {}
        Some(&got) => {
            return Err(FrameError::Unexpected {
                expected: '\n',
                got,
            })
        }
    }
    let digits = &line[..cr];
    let n = std::str::from_utf8(digits)
        .ok()
        .filter(|s| !s.is_empty() && !s.starts_with('+'))
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or(FrameError::BadLength)?;
    Ok(Some((n, at + 1 + cr + 2)))
}

/// A line of space-separated words, `"double"` or `'single'` quoted words
/// allowed (without escapes), ended by `\n` or `\r\n`.
fn parse_inline(buf: &[u8], limits: &FrameLimits) -> Result<Option<Frame>, FrameError> {
    let window = &buf[..buf.len().min(limits.max_inline)];
    let Some(nl) = window.iter().position(|&b| b == b'\n') else {
        if buf.len() >= limits.max_inline {
            return Err(FrameError::InlineTooLong(limits.max_inline));
        }
        return Ok(None);
    };
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    let mut args = Vec::new();
    let mut i = 0;
    while i < line_end {
        match buf[i] {
            b' ' | b'\t' => i += 1,
            q @ (b'"' | b'\'') => {
                let close = buf[i + 1..line_end]
                    .iter()
                    .position(|&b| b == q)
                    .ok_or(FrameError::BadInline)?;
                args.push(i + 1..i + 1 + close);
                i += close + 2;
            }
            _ => {
                let end = buf[i..line_end]
                    .iter()
                    .position(|&b| b == b' ' || b == b'\t')
                    .map_or(line_end, |p| i + p);
                args.push(i..end);
                i = end;
            }
        }
        if args.len() > limits.max_args {
            return Err(FrameError::TooManyArgs {
                count: args.len() as u64,
                max: limits.max_args,
            });
        }
    }
    Ok(Some(Frame { len: nl + 1, args }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn words(input: &[u8]) -> Result<Option<Vec<Vec<u8>>>, FrameError> {
        let limits = FrameLimits {
            max_bulk: 8,
            max_frame: 12,
            max_args: 4,
            max_inline: 32,
        };
        Ok(parse(input, &limits)?.map(|f| {
            assert!(f.len <= input.len());
            f.args.iter().map(|r| input[r.clone()].to_vec()).collect()
        }))
    }

    #[test]
    fn arrays_of_bulk_strings() {
        let w = words(b"*2\r\n$4\r\nPING\r\n$0\r\n\r\n").unwrap().unwrap();
        assert_eq!(w, vec![b"PING".to_vec(), Vec::new()]);
        let bin = words(b"*1\r\n$3\r\n\r\n\0\r\n").unwrap().unwrap();
        assert_eq!(bin, vec![b"\r\n\0".to_vec()]);
    }

    #[test]
    fn every_prefix_of_a_frame_is_incomplete() {
        let full = b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n";
        for n in 0..full.len() {
            assert_eq!(words(&full[..n]), Ok(None), "prefix of {n} bytes");
        }
        assert!(words(full).unwrap().is_some());
    }

    #[test]
    fn limits_are_checked_on_declared_lengths() {
        assert!(matches!(
            words(b"*5\r\n"),
            Err(FrameError::TooManyArgs { .. })
        ));
        assert!(matches!(
            words(b"*1\r\n$9\r\n"),
            Err(FrameError::BulkTooLarge { .. })
        ));
        // Each argument within its limit, together over the frame's, and
        // refused before the third is read.
        assert_eq!(
            words(b"*3\r\n$8\r\nabcdefgh\r\n$4\r\nabcd\r\n$1\r\n"),
            Err(FrameError::FrameTooLarge { max: 12 })
        );
        assert!(words(b"*2\r\n$8\r\nabcdefgh\r\n$4\r\nabcd\r\n")
            .unwrap()
            .is_some());
        assert_eq!(words(b"*1\r\n$-1\r\n"), Err(FrameError::BadLength));
        assert_eq!(words(b"*x\r\n"), Err(FrameError::BadLength));
        assert_eq!(
            words(b"*99999999999999999999999999999999"),
            Err(FrameError::BadLength)
        );
        assert!(matches!(
            words(b"*1\r\n+OK\r\n"),
            Err(FrameError::Unexpected { .. })
        ));
        assert!(matches!(
            words(b"*1\r\n$2\r\nabcd"),
            Err(FrameError::Unexpected { .. })
        ));
    }

    #[test]
    fn inline_commands() {
        let w = words(b"ENQUEUE q \"a b\"\r\n").unwrap().unwrap();
        assert_eq!(w, vec![b"ENQUEUE".to_vec(), b"q".to_vec(), b"a b".to_vec()]);
        assert_eq!(words(b"PING").unwrap(), None);
        assert_eq!(words(b"\n").unwrap().unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(words(b"x \"open\n"), Err(FrameError::BadInline));
        assert_eq!(words(&[b'a'; 40]), Err(FrameError::InlineTooLong(32)));
    }
}
