//! From a frame's arguments to a typed, validated [`Command`].
//!
//! Every check the HTTP API makes on the same input is made here too, with
//! the same messages where the rule is the same, so a command that reaches
//! the store is well formed (docs/spec.md §7.1: out-of-range values are refused,
//! never clamped). Times are Unix milliseconds, durations milliseconds.

use std::time::Duration;

use bytes::Bytes;
use serde_json::value::RawValue;
use spool_core::store::{MAX_BATCH, MAX_CLAIM, MAX_WAIT, MAX_WORKER_ID};
use spool_core::task::RunAt;
use spool_core::{Kind, NewTask, Payload, QueueName, StoreError, TaskId, TaskKey, Timestamp};

use crate::rfc3339::{MAX_MILLIS, MIN_MILLIS};
use crate::wire;

/// A command a connection can run.
#[derive(Debug)]
pub enum Command {
    Ping(Option<Bytes>),
    Echo(Bytes),
    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
    Hello {
        proto: Option<u8>,
        auth: Option<Bytes>,
        name: Option<Bytes>,
    },
    Auth(Bytes),
    Quit,
    /// `CLIENT SETNAME name`: names the connection (the default worker).
    SetName(Bytes),
    /// Accepted and ignored: `CLIENT SETINFO`, `SELECT 0`.
    Ignored,
    /// Answered with an empty array: `COMMAND ...`, `CONFIG GET ...`.
    Empty,
    Enqueue(QueueName, NewTask),
    EnqueueMany(QueueName, Vec<NewTask>),
    Claim(ClaimArgs),
    Ack {
        id: TaskId,
        token: Bytes,
        reschedule: Option<Timestamp>,
    },
    AckMany(Vec<(TaskId, Bytes)>),
    Fail {
        id: TaskId,
        token: Bytes,
        message: String,
        retry_at: Option<Timestamp>,
        discard: bool,
    },
    Extend {
        id: TaskId,
        token: Bytes,
        lease: Duration,
    },
    Release {
        id: TaskId,
        token: Bytes,
    },
    Get(TaskId),
    Cancel(TaskId),
    Queues,
    Pause(QueueName, bool),
}

/// `CLAIM`'s options; the worker defaults to the connection's name.
#[derive(Debug)]
pub struct ClaimArgs {
    pub queue: QueueName,
    pub max: u32,
    pub wait: Duration,
    pub lease: Option<Duration>,
    pub worker: Option<String>,
}

impl Command {
    /// Commands a connection may send before `AUTH` when a token is set.
    pub fn is_open(&self) -> bool {
        matches!(
            self,
            Command::Ping(_) | Command::Hello { .. } | Command::Auth(_) | Command::Quit
        )
    }
}

type Parsed = Result<Command, StoreError>;

/// Parses `args` (the command name first; never empty).
pub fn parse(args: &[Bytes]) -> Parsed {
    let (name, rest) = args
        .split_first()
        .ok_or_else(|| StoreError::bad_request("empty command"))?;
    let name = std::str::from_utf8(name)
        .unwrap_or("?")
        .to_ascii_uppercase();
    let mut a = Args {
        name: &name,
        rest,
        at: 0,
    };
    let cmd = match name.as_str() {
        "PING" => Command::Ping(a.optional()),
        "ECHO" => Command::Echo(a.bytes()?),
        "HELLO" => hello(&mut a)?,
        "AUTH" => {
            // `AUTH token` or `AUTH user token`: the user name is not checked.
            let first = a.bytes()?;
            Command::Auth(a.optional().unwrap_or(first))
        }
        "QUIT" => Command::Quit,
        "CLIENT" => client(&mut a)?,
        "SELECT" => {
            if a.bytes()?.as_ref() != b"0" {
                return Err(StoreError::bad_request("Spool has one database: SELECT 0"));
            }
            Command::Ignored
        }
        "COMMAND" | "CONFIG" => {
            a.at = a.rest.len();
            Command::Empty
        }
        "ENQUEUE" => enqueue(&mut a)?,
        "ENQUEUEMANY" => {
            let queue = a.queue()?;
            let mut tasks = Vec::new();
            while let Some(p) = a.optional() {
                tasks.push(NewTask::new(payload(p)));
            }
            if tasks.is_empty() || tasks.len() > MAX_BATCH {
                return Err(StoreError::bad_request(format!(
                    "ENQUEUEMANY takes 1 to {MAX_BATCH} payloads"
                )));
            }
            Command::EnqueueMany(queue, tasks)
        }
        "CLAIM" => claim(&mut a)?,
        "ACK" => {
            let (id, token) = (a.id()?, a.bytes()?);
            let reschedule = match a.optional() {
                None => None,
                Some(opt) => {
                    a.expect_option(&opt, "RESCHEDULE")?;
                    Some(a.unix_ms("RESCHEDULE")?)
                }
            };
            Command::Ack {
                id,
                token,
                reschedule,
            }
        }
        "ACKMANY" => {
            let mut acks = Vec::new();
            while a.at < a.rest.len() {
                acks.push((a.id()?, a.bytes()?));
            }
            if acks.is_empty() || acks.len() > MAX_BATCH {
                return Err(StoreError::bad_request(format!(
                    "ACKMANY takes 1 to {MAX_BATCH} id token pairs"
                )));
            }
            Command::AckMany(acks)
        }
        "FAIL" => fail(&mut a)?,
        "EXTEND" => {
            let (id, token) = (a.id()?, a.bytes()?);
            let lease = wire::non_zero_ms("lease_ms", a.number("ms")?)?;
            Command::Extend { id, token, lease }
        }
        "RELEASE" => Command::Release {
            id: a.id()?,
            token: a.bytes()?,
        },
        "GET" => Command::Get(a.id()?),
        "CANCEL" => Command::Cancel(a.id()?),
        "QUEUES" => Command::Queues,
        "PAUSE" => Command::Pause(a.queue()?, true),
        "RESUME" => Command::Pause(a.queue()?, false),
        _ => {
            return Err(StoreError::bad_request(format!(
                "unknown command '{}'",
                name.chars().take(64).collect::<String>()
            )))
        }
    };
    a.finish()?;
    Ok(cmd)
}

/// The payload rule: bytes that are valid JSON are kept as JSON (and read
/// back over HTTP as `payload`); any other bytes as binary (read back as
/// `payload_base64`). Over RESP both come back as the bytes given.
pub fn payload(bytes: Bytes) -> Payload {
    if serde_json::from_slice::<&RawValue>(&bytes).is_ok() {
        Payload::json(bytes)
    } else {
        Payload::binary(bytes)
    }
}

fn hello(a: &mut Args<'_>) -> Parsed {
    let proto = match a.optional() {
        None => None,
        Some(v) => match v.as_ref() {
            b"2" => Some(2),
            b"3" => Some(3),
            _ => {
                return Err(StoreError::bad_request(
                    "NOPROTO unsupported protocol version: Spool speaks 2 and 3",
                ))
            }
        },
    };
    let (mut auth, mut name) = (None, None);
    while let Some(opt) = a.optional() {
        if opt.eq_ignore_ascii_case(b"AUTH") {
            a.bytes()?;
            auth = Some(a.bytes()?);
        } else if opt.eq_ignore_ascii_case(b"SETNAME") {
            name = Some(a.bytes()?);
        } else {
            return Err(a.unknown_option(&opt));
        }
    }
    Ok(Command::Hello { proto, auth, name })
}

fn client(a: &mut Args<'_>) -> Parsed {
    let sub = a.bytes()?;
    if sub.eq_ignore_ascii_case(b"SETNAME") {
        return Ok(Command::SetName(a.bytes()?));
    }
    if sub.eq_ignore_ascii_case(b"SETINFO") {
        a.bytes()?;
        a.bytes()?;
        return Ok(Command::Ignored);
    }
    Err(StoreError::bad_request(
        "CLIENT takes SETNAME or SETINFO here",
    ))
}

fn enqueue(a: &mut Args<'_>) -> Parsed {
    let queue = a.queue()?;
    let mut task = NewTask::new(payload(a.bytes()?));
    let (mut delay, mut at) = (None, None);
    while let Some(opt) = a.optional() {
        let upper = opt.to_ascii_uppercase();
        match upper.as_slice() {
            b"KEY" => task.key = Some(TaskKey::new(a.string("KEY")?)?),
            b"DELAY" => delay = Some(wire::duration_ms("delay_ms", a.number("DELAY")?)?),
            b"AT" => at = Some(a.unix_ms("AT")?),
            b"PRIORITY" => {
                task.priority = a
                    .string("PRIORITY")?
                    .parse()
                    .map_err(|_| StoreError::bad_request("PRIORITY must be -32768 to 32767"))?
            }
            b"MAXATTEMPTS" => {
                let n = u32::try_from(a.number("MAXATTEMPTS")?)
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| StoreError::bad_request("max_attempts must be at least 1"))?;
                task.max_attempts = Some(n);
            }
            b"KIND" => task.kind = Some(Kind::new(a.string("KIND")?)?),
            b"LEASE" => {
                let ms = a.number("LEASE")?;
                wire::non_zero_ms("lease_ms", ms)?;
                task.lease_ms = Some(ms);
            }
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    task.run_at = match (delay, at) {
        (Some(_), Some(_)) => {
            return Err(StoreError::bad_request(
                "DELAY and AT are exclusive: give one",
            ))
        }
        (Some(d), None) => RunAt::After(d),
        (None, Some(t)) => RunAt::At(t),
        (None, None) => RunAt::Now,
    };
    Ok(Command::Enqueue(queue, task))
}

fn claim(a: &mut Args<'_>) -> Parsed {
    let mut c = ClaimArgs {
        queue: a.queue()?,
        max: 1,
        wait: Duration::ZERO,
        lease: None,
        worker: None,
    };
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"MAX" => {
                c.max = u32::try_from(a.number("MAX")?)
                    .ok()
                    .filter(|m| (1..=MAX_CLAIM).contains(m))
                    .ok_or_else(|| {
                        StoreError::bad_request(format!("max must be between 1 and {MAX_CLAIM}"))
                    })?
            }
            b"WAIT" => {
                c.wait = Duration::from_millis(a.number("WAIT")?);
                if c.wait > MAX_WAIT {
                    return Err(StoreError::bad_request(format!(
                        "wait_ms must be between 0 and {}",
                        MAX_WAIT.as_millis()
                    )));
                }
            }
            b"LEASE" => c.lease = Some(wire::non_zero_ms("lease_ms", a.number("LEASE")?)?),
            b"WORKER" => {
                let w = a.string("WORKER")?;
                if w.is_empty() || w.len() > MAX_WORKER_ID {
                    return Err(StoreError::bad_request(format!(
                        "worker must be 1 to {MAX_WORKER_ID} bytes"
                    )));
                }
                c.worker = Some(w);
            }
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    Ok(Command::Claim(c))
}

fn fail(a: &mut Args<'_>) -> Parsed {
    let (id, token) = (a.id()?, a.bytes()?);
    let message = a.string("message")?;
    let (mut retry_at, mut discard) = (None, false);
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"RETRYAT" => retry_at = Some(a.unix_ms("RETRYAT")?),
            b"DISCARD" => discard = true,
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    if discard && retry_at.is_some() {
        return Err(StoreError::bad_request(
            "RETRYAT and DISCARD are exclusive: give one",
        ));
    }
    Ok(Command::Fail {
        id,
        token,
        message,
        retry_at,
        discard,
    })
}

/// The arguments after the command name, read in order.
struct Args<'a> {
    name: &'a str,
    rest: &'a [Bytes],
    at: usize,
}

impl Args<'_> {
    fn optional(&mut self) -> Option<Bytes> {
        let v = self.rest.get(self.at).cloned();
        self.at += usize::from(v.is_some());
        v
    }

    fn bytes(&mut self) -> Result<Bytes, StoreError> {
        self.optional().ok_or_else(|| {
            StoreError::bad_request(format!(
                "wrong number of arguments for '{}'; see docs/resp.md",
                self.name
            ))
        })
    }

    fn string(&mut self, what: &str) -> Result<String, StoreError> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| StoreError::bad_request(format!("{what} must be UTF-8 text")))
    }

    fn number(&mut self, what: &str) -> Result<u64, StoreError> {
        let b = self.bytes()?;
        std::str::from_utf8(&b)
            .ok()
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                StoreError::bad_request(format!("{what} must be a non-negative integer"))
            })
    }

    fn id(&mut self) -> Result<TaskId, StoreError> {
        self.number("id").map(TaskId)
    }

    fn queue(&mut self) -> Result<QueueName, StoreError> {
        Ok(QueueName::new(self.string("queue")?)?)
    }

    fn unix_ms(&mut self, what: &str) -> Result<Timestamp, StoreError> {
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

    fn expect_option(&self, got: &[u8], want: &str) -> Result<(), StoreError> {
        if got.eq_ignore_ascii_case(want.as_bytes()) {
            Ok(())
        } else {
            Err(self.unknown_option(got))
        }
    }

    fn unknown_option(&self, got: &[u8]) -> StoreError {
        StoreError::bad_request(format!(
            "unknown option '{}' for '{}'; see docs/resp.md",
            String::from_utf8_lossy(&got[..got.len().min(64)]),
            self.name
        ))
    }

    fn finish(&self) -> Result<(), StoreError> {
        if self.at < self.rest.len() {
            return Err(StoreError::bad_request(format!(
                "too many arguments for '{}'; see docs/resp.md",
                self.name
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cmd(words: &[&str]) -> Parsed {
        let args: Vec<Bytes> = words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        parse(&args)
    }

    #[test]
    fn enqueue_options() {
        let Ok(Command::Enqueue(q, t)) = cmd(&[
            "enqueue",
            "mail",
            "{}",
            "KEY",
            "k1",
            "delay",
            "500",
            "PRIORITY",
            "-3",
            "MAXATTEMPTS",
            "2",
            "KIND",
            "send",
            "LEASE",
            "100",
        ]) else {
            panic!("not an enqueue")
        };
        assert_eq!(q.as_str(), "mail");
        assert_eq!(t.payload, Payload::json(&b"{}"[..]));
        assert_eq!(t.key.unwrap().as_str(), "k1");
        assert_eq!(t.run_at, RunAt::After(Duration::from_millis(500)));
        assert_eq!(
            (t.priority, t.max_attempts, t.lease_ms),
            (-3, Some(2), Some(100))
        );
    }

    #[test]
    fn bad_arguments_are_refused_with_bad_request() {
        for words in [
            &["ENQUEUE", "q"][..],
            &["ENQUEUE", "q", "x", "DELAY", "1", "AT", "1"],
            &["ENQUEUE", "q", "x", "PRIORITY", "40000"],
            &["ENQUEUE", "q", "x", "MAXATTEMPTS", "0"],
            &["ENQUEUE", "q", "x", "COLOR", "red"],
            &["ENQUEUE", "bad name!", "x"],
            &["CLAIM", "q", "MAX", "0"],
            &["CLAIM", "q", "WAIT", "30001"],
            &["ACK", "-1", "t"],
            &["ACK", "1", "t", "extra"],
            &["ACKMANY", "1"],
            &["FAIL", "1", "t", "m", "RETRYAT", "1", "DISCARD"],
            &["EXTEND", "1", "t", "0"],
            &["SELECT", "1"],
            &["NOPE"],
        ] {
            let e = cmd(words).unwrap_err();
            assert_eq!(e.code(), "bad_request", "{words:?}");
        }
    }

    #[test]
    fn payloads_that_are_json_stay_json() {
        assert_eq!(
            payload(Bytes::from_static(b" [1, 2] ")).format,
            spool_core::PayloadFormat::Json
        );
        for not_json in [&b""[..], b"hello", b"{", b"\xff"] {
            let p = payload(Bytes::copy_from_slice(not_json));
            assert_eq!(p.format, spool_core::PayloadFormat::Binary);
        }
    }
}
