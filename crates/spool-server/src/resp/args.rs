//! The arguments of a RESP command, read in order, each checked as a wire
//! value with a `BAD_REQUEST` naming it; and the payload rule, which says
//! what kind of payload a command's bytes are.

use bytes::Bytes;
use serde_json::value::RawValue;
use spool_core::{Payload, QueueName, StoreError, TaskId, TaskKey, TaskRef, Timestamp};

use crate::rfc3339::{MAX_MILLIS, MIN_MILLIS};

/// `BINARY` keeps the bytes as binary whatever they look like; without it
/// the payload rule below decides.
pub(super) fn payload_as(bytes: Bytes, binary: bool) -> Payload {
    if binary {
        Payload::binary(bytes)
    } else {
        payload(bytes)
    }
}

/// The payload rule: bytes that are valid JSON are kept as JSON (and read
/// back over HTTP as `payload`); any other bytes as binary (read back as
/// `payload_base64`). Over RESP both come back as the bytes given.
pub(super) fn payload(bytes: Bytes) -> Payload {
    if serde_json::from_slice::<&RawValue>(&bytes).is_ok() {
        Payload::json(bytes)
    } else {
        Payload::binary(bytes)
    }
}

/// The arguments after the command name, read in order.
pub(super) struct Args<'a> {
    name: &'a str,
    rest: &'a [Bytes],
    at: usize,
}

impl<'a> Args<'a> {
    /// The arguments `rest` of the command `name`.
    pub(super) fn new(name: &'a str, rest: &'a [Bytes]) -> Args<'a> {
        Args { name, rest, at: 0 }
    }

    /// Whether arguments are left to read.
    pub(super) fn more(&self) -> bool {
        self.at < self.rest.len()
    }

    /// Passes over every argument left, unread.
    pub(super) fn skip_rest(&mut self) {
        self.at = self.rest.len();
    }

    /// Gives back the argument just read, for the next read.
    pub(super) fn put_back(&mut self) {
        self.at = self.at.saturating_sub(1);
    }

    pub(super) fn optional(&mut self) -> Option<Bytes> {
        let v = self.rest.get(self.at).cloned();
        self.at += usize::from(v.is_some());
        v
    }

    pub(super) fn bytes(&mut self) -> Result<Bytes, StoreError> {
        self.optional().ok_or_else(|| {
            StoreError::bad_request(format!(
                "wrong number of arguments for '{}'; see docs/resp.md",
                self.name
            ))
        })
    }

    pub(super) fn string(&mut self, what: &str) -> Result<String, StoreError> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| StoreError::bad_request(format!("{what} must be UTF-8 text")))
    }

    /// Takes the next argument if it is `OFF` (in any case): a setting
    /// removed.
    pub(super) fn off(&mut self) -> bool {
        let off = self
            .rest
            .get(self.at)
            .is_some_and(|b| b.eq_ignore_ascii_case(b"OFF"));
        self.at += usize::from(off);
        off
    }

    pub(super) fn number(&mut self, what: &str) -> Result<u64, StoreError> {
        let b = self.bytes()?;
        std::str::from_utf8(&b)
            .ok()
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                StoreError::bad_request(format!("{what} must be a non-negative integer"))
            })
    }

    pub(super) fn id(&mut self) -> Result<TaskId, StoreError> {
        self.number("id").map(TaskId)
    }

    /// `id`, or `KEY queue key`.
    pub(super) fn task_ref(&mut self) -> Result<TaskRef, StoreError> {
        if self
            .rest
            .get(self.at)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"KEY"))
        {
            self.at += 1;
            let queue = self.queue()?;
            return Ok(TaskRef::Key(queue, TaskKey::new(self.string("key")?)?));
        }
        self.id().map(TaskRef::Id)
    }

    pub(super) fn priority(&mut self) -> Result<i16, StoreError> {
        self.string("PRIORITY")?
            .parse()
            .map_err(|_| StoreError::bad_request("PRIORITY must be -32768 to 32767"))
    }

    /// An optional last word `flag`; anything else there is refused.
    pub(super) fn flag(&mut self, flag: &str) -> Result<bool, StoreError> {
        match self.optional() {
            None => Ok(false),
            Some(w) => self.expect_option(&w, flag).map(|()| true),
        }
    }

    pub(super) fn queue(&mut self) -> Result<QueueName, StoreError> {
        Ok(QueueName::new(self.string("queue")?)?)
    }

    pub(super) fn unix_ms(&mut self, what: &str) -> Result<Timestamp, StoreError> {
        let b = self.bytes()?;
        std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|ms| (MIN_MILLIS..=MAX_MILLIS).contains(ms))
            .map(Timestamp::from_millis)
            .ok_or_else(|| {
                StoreError::bad_request(format!(
                    "{what} must be Unix milliseconds between {MIN_MILLIS} and {MAX_MILLIS}"
                ))
            })
    }

    pub(super) fn expect_option(&self, got: &[u8], want: &str) -> Result<(), StoreError> {
        if got.eq_ignore_ascii_case(want.as_bytes()) {
            Ok(())
        } else {
            Err(self.unknown_option(got))
        }
    }

    pub(super) fn unknown_option(&self, got: &[u8]) -> StoreError {
        StoreError::bad_request(format!(
            "unknown option '{}' for '{}'; see docs/resp.md",
            String::from_utf8_lossy(&got[..got.len().min(64)]),
            self.name
        ))
    }

    pub(super) fn finish(&self) -> Result<(), StoreError> {
        if self.at < self.rest.len() {
            return Err(StoreError::bad_request(format!(
                "too many arguments for '{}'; see docs/resp.md",
                self.name
            )));
        }
        Ok(())
    }
}
